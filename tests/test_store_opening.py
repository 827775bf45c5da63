"""Opening a store by URL for a command: a bad URL, an unopenable file and an outage are one line each."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from decision_engine.store.migrate import current_revision, head_revision
from decision_engine.store.opening import StoreOpenError, open_store, opened_store

UNREACHABLE = "postgresql://nobody:secret@127.0.0.1:1/none"


def test_open_store_migrates_to_head(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path / 'new' / 'store.sqlite3'}", migrate=True)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_a_bad_url_names_the_flag():
    with pytest.raises(StoreOpenError) as caught:
        open_store("mysql://x/y")
    assert caught.value.bad_url and str(caught.value).startswith("--db: unsupported database 'mysql'")


def test_a_file_that_cannot_be_made_is_not_a_bad_url(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreOpenError) as caught:
        open_store(f"sqlite:///{tmp_path / 'file' / 'store.sqlite3'}")
    assert not caught.value.bad_url and str(caught.value).startswith("cannot open the store at sqlite:///")


def test_an_outage_while_migrating_is_one_line_without_the_password():
    with pytest.raises(StoreOpenError) as caught:
        open_store(UNREACHABLE, migrate=True)
    message = str(caught.value)
    assert not caught.value.bad_url and "\n" not in message and "secret" not in message
    assert message.startswith("cannot reach the store at postgresql://nobody:***@127.0.0.1:1/none: ")


def test_an_outage_inside_the_block_is_one_line():
    with pytest.raises(StoreOpenError, match="^cannot reach the store at postgresql://"):
        with opened_store(UNREACHABLE) as engine:
            engine.connect()


def test_a_bug_inside_the_block_is_not_called_an_outage(tmp_path):
    with pytest.raises(OperationalError, match="no such table"):
        with opened_store(f"sqlite:///{tmp_path / 'store.sqlite3'}") as engine, engine.connect() as connection:
            connection.execute(text("SELECT * FROM nowhere"))
