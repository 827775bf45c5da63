"""Opening the store a command names by URL, with one-line errors instead of tracebacks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


class StoreOpenError(Exception):
    """The store cannot be opened or reached; the message is one line for the user."""

    def __init__(self, message: str, bad_url: bool = False):
        super().__init__(message)
        self.bad_url = bad_url  # the URL itself is wrong, rather than the store out of reach


def outage(error: BaseException) -> str:
    """The first line of the database driver's message about a store outage."""
    return str(getattr(error, "orig", None) or error).strip().splitlines()[0]


def open_store(url: str | None, migrate: bool = False) -> Engine:
    """An engine on the store at `url` (default: $DATABASE_URL, else the SQLite file), at the newest
    revision when `migrate`; the caller disposes of it."""
    engine, shown = _engine(url)
    if migrate:
        try:
            with _reaching(shown):
                _migrate(engine)
        except BaseException:
            engine.dispose()
            raise
    return engine


@contextmanager
def opened_store(url: str | None) -> Iterator[Engine]:
    """`open_store` for the length of a block, an outage inside the block raised as StoreOpenError."""
    engine, shown = _engine(url)
    try:
        with _reaching(shown):
            yield engine
    finally:
        engine.dispose()


def _engine(url: str | None) -> tuple[Engine, str]:
    """The engine and the URL as shown to the user (password hidden); commands take the URL as --db."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from .database import create_db_engine, default_database_url

    url = url or default_database_url()
    try:
        shown = make_url(url).render_as_string(hide_password=True)
        return create_db_engine(url), shown
    except (ArgumentError, ValueError) as error:
        raise StoreOpenError(f"--db: {error}", bad_url=True) from None
    except OSError as error:  # e.g. the SQLite file's folder cannot be created
        raise StoreOpenError(f"cannot open the store at {shown}: {error}") from None


@contextmanager
def _reaching(shown: str) -> Iterator[None]:
    """Inside the block, the store being out of reach becomes StoreOpenError; other errors pass."""
    from sqlalchemy.exc import SQLAlchemyError

    from .database import is_unavailable

    try:
        yield
    except SQLAlchemyError as error:
        if not is_unavailable(error):
            raise
        raise StoreOpenError(f"cannot reach the store at {shown}: {outage(error)}") from None


def _migrate(engine: Engine) -> None:
    from .migrate import current_revision, head_revision, upgrade

    if current_revision(engine) != head_revision():
        upgrade(engine)
