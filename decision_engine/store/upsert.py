"""The dialect's INSERT with ON CONFLICT, for writes that must be safe under concurrent writers."""

from __future__ import annotations

from sqlalchemy.orm import Session


def insert_for(session: Session, table):
    """An INSERT construct for `table` with `on_conflict_do_nothing` / `on_conflict_do_update`."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise ValueError(f"unsupported database {dialect!r}: the store runs on SQLite or PostgreSQL")
    return insert(table)
