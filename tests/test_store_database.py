"""Engine settings and the distinction between an unreachable store and a bug."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from sqlalchemy import exc

from decision_engine.store.database import (
    StoreUnavailable,
    create_db_engine,
    default_database_url,
    is_unavailable,
    session_factory,
)


def test_default_url(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert default_database_url() == "sqlite:///decisions.sqlite3"
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db:5432/decisions")
    assert default_database_url() == "postgresql+psycopg://u:p@db:5432/decisions"
    monkeypatch.setenv("DATABASE_URL", "sqlite:///elsewhere.sqlite3")
    assert default_database_url() == "sqlite:///elsewhere.sqlite3"


def test_sqlite_engine_settings(tmp_path):
    path = tmp_path / "nested" / "folder" / "store.sqlite3"
    engine = create_db_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            pragma = {name: connection.exec_driver_sql(f"PRAGMA {name}").scalar() for name in
                      ("journal_mode", "busy_timeout", "foreign_keys")}
        assert pragma == {"journal_mode": "wal", "busy_timeout": 10000, "foreign_keys": 1}
        assert path.is_file()
        assert session_factory(engine)().get_bind() is engine
    finally:
        engine.dispose()


def test_postgresql_engine_settings():
    engine = create_db_engine("postgresql://u@127.0.0.1:5432/x")
    assert engine.dialect.driver == "psycopg"
    assert engine.pool.size() == 10


def test_unreachable_postgresql_fails_fast():
    engine = create_db_engine("postgresql://nobody@127.0.0.1:1/none")
    start = time.monotonic()
    with pytest.raises(exc.OperationalError) as caught:
        with engine.connect():
            pass
    assert time.monotonic() - start < 5
    assert is_unavailable(caught.value)


def test_unsupported_url():
    with pytest.raises(ValueError, match="sqlite"):
        create_db_engine("mysql://u@h/db")


def test_bugs_are_not_outages(tmp_path):
    engine = create_db_engine(f"sqlite:///{tmp_path / 's.sqlite3'}")
    try:
        with engine.connect() as connection:
            with pytest.raises(exc.OperationalError) as missing_table:
                connection.execute(sa.text("SELECT * FROM nowhere"))
            connection.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
            connection.execute(sa.text("INSERT INTO t VALUES (1)"))
            with pytest.raises(exc.IntegrityError) as duplicate:
                connection.execute(sa.text("INSERT INTO t VALUES (1)"))
    finally:
        engine.dispose()
    assert not is_unavailable(missing_table.value)
    assert not is_unavailable(duplicate.value)
    assert not is_unavailable(ValueError("bug"))
    assert is_unavailable(StoreUnavailable())
    assert is_unavailable(exc.TimeoutError("QueuePool limit reached"))
