"""Alembic environment: migrates the store that the caller's Config points at.

`decision_engine.store.migrate` passes an Engine or Connection in
`config.attributes["connection"]`; otherwise the URL comes from the `sqlalchemy.url`
option, then $DATABASE_URL, then the default SQLite file.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection, Engine

from decision_engine.store.database import create_db_engine, default_database_url
from decision_engine.store.schema import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or default_database_url()


def _migrate(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    """Write the SQL to stdout instead of running it (`alembic upgrade --sql`)."""
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    given = config.attributes.get("connection")
    if isinstance(given, Connection):  # the caller owns the transaction and commits it
        _migrate(given)
        return
    engine = given if isinstance(given, Engine) else create_db_engine(_url())
    try:
        with engine.connect() as connection:
            _migrate(connection)
            connection.commit()
    finally:
        if engine is not given:
            engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
