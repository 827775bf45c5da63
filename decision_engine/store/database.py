"""Engines and sessions for the store, and telling an unreachable database from a bug."""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_URL = "sqlite:///decisions.sqlite3"  # a file in the current directory
SQLITE_BUSY_TIMEOUT_MS = 10_000  # how long a writer waits for another writer's lock
POSTGRES_CONNECT_TIMEOUT_S = 3  # an unreachable server fails fast instead of hanging
POSTGRES_POOL = {"pool_size": 10, "max_overflow": 20, "pool_timeout": 5}  # pool_timeout in seconds
# SQLite reports schema mistakes as OperationalError too; these are bugs, not outages.
_SQLITE_SCHEMA_ERRORS = ("no such table", "no such column", "syntax error", "has no column")


class StoreUnavailable(Exception):
    """The store cannot be reached; the request may be retried later."""


def normalise_url(url: str) -> str:
    """`url` with PostgreSQL URLs pointed at the psycopg 3 driver."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    return url


def default_database_url() -> str:
    """$DATABASE_URL if set, else a SQLite file `decisions.sqlite3` in the current directory."""
    return normalise_url(os.environ.get("DATABASE_URL") or DEFAULT_URL)


def create_db_engine(url: str) -> Engine:
    """An engine for a SQLite or PostgreSQL URL, tuned for concurrent writers and fast failure."""
    parsed = make_url(normalise_url(url))
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend == "postgresql":
        return sa.create_engine(
            parsed,
            connect_args={"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S},
            pool_pre_ping=True,
            **POSTGRES_POOL,
        )
    raise ValueError(f"unsupported database {backend!r}: use a sqlite:/// or postgresql:// URL")


def _sqlite_engine(url: sa.URL) -> Engine:
    database = url.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions bound to `engine` whose objects stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_unavailable(error: BaseException) -> bool:
    """Whether `error` means the database cannot be reached (retry later), not a bug in a query."""
    if isinstance(error, (StoreUnavailable, exc.TimeoutError)):  # TimeoutError: the pool is exhausted
        return True
    if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
        return True
    if isinstance(error, exc.OperationalError):
        message = str(error.orig).lower()
        return not any(text in message for text in _SQLITE_SCHEMA_ERRORS)
    return isinstance(error, exc.InterfaceError)
