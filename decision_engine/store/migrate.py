"""Run the store's Alembic migrations from code, and compare the models with a database."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

if TYPE_CHECKING:
    from alembic.config import Config


def _script_location() -> str:
    return str(resources.files("decision_engine.migrations"))


def alembic_config(engine_or_url: Engine | Connection | str | None = None) -> Config:
    """An Alembic Config for the installed migrations, bound to an Engine, a Connection or a URL.

    A Connection is used as is: the caller commits its transaction.
    """
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", _script_location())
    if isinstance(engine_or_url, str):
        config.set_main_option("sqlalchemy.url", engine_or_url.replace("%", "%%"))
    elif engine_or_url is not None:
        config.attributes["connection"] = engine_or_url
    return config


MIGRATION_LOCK = 7_163_401  # PostgreSQL advisory lock key held while migrating


def upgrade(engine: Engine | Connection, revision: str = "head") -> None:
    """Migrate the database up to `revision`.

    On PostgreSQL an advisory lock makes processes that start together (service workers, batch
    jobs on several machines) migrate one after another instead of racing on the same tables.
    """
    from alembic import command

    if isinstance(engine, Engine) and engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            command.upgrade(alembic_config(connection), revision)
        return
    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine | Connection, revision: str) -> None:
    """Migrate the database down to `revision` ("base" drops every table)."""
    from alembic import command

    command.downgrade(alembic_config(engine), revision)


def current_revision(engine: Engine | Connection) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    from alembic.migration import MigrationContext

    if isinstance(engine, Connection):
        return MigrationContext.configure(engine).get_current_revision()
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    """The newest revision of the installed migrations."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations folder has no revisions"
    return head


def check(engine: Engine | Connection) -> list[str]:
    """Differences between the ORM models and the database, one readable line each; [] when they agree."""
    if isinstance(engine, Connection):
        return _check(engine)
    with engine.connect() as connection:
        return _check(connection)


def _check(connection: Connection) -> list[str]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from .schema import Base

    context = MigrationContext.configure(connection, opts={"compare_type": True})
    problems = []
    current, head = context.get_current_revision(), head_revision()
    if current != head:
        problems.append(f"database is at revision {current or 'none'}, the migrations' head is {head}")
    for diff in compare_metadata(context, Base.metadata):
        # modify_* differences come as a list of tuples, one per changed attribute
        for item in diff if isinstance(diff, list) else [diff]:
            problems.append(_describe(item))
    return problems


def _describe(diff: tuple) -> str:
    op = diff[0]
    if op in ("add_table", "remove_table"):
        where = "missing from the database" if op == "add_table" else "in the database but not in the models"
        return f"table {diff[1].name} is {where}"
    if op in ("add_column", "remove_column"):
        _, _, table, column = diff
        where = "missing from the database" if op == "add_column" else "in the database but not in the models"
        return f"column {table}.{column.name} is {where}"
    if op in ("add_index", "remove_index", "add_constraint", "remove_constraint", "add_fk", "remove_fk"):
        item = diff[1]
        what = {"index": "index", "constraint": "constraint", "fk": "foreign key"}[op.split("_", 1)[1]]
        where = "missing from the database" if op.startswith("add") else "in the database but not in the models"
        return f"{what} {item.name} on {item.table.name} is {where}"
    if op.startswith("modify_"):
        _, _, table, column, _, existing, wanted = diff
        attribute = op.removeprefix("modify_")
        return f"column {table}.{column}: {attribute} is {existing!r} in the database, {wanted!r} in the models"
    return repr(diff)
