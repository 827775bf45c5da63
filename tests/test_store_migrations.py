"""The Alembic migrations build exactly the ORM schema, and tear it down again."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from decision_engine.store.database import create_db_engine
from decision_engine.store.migrate import alembic_config, check, current_revision, downgrade, head_revision, upgrade
from decision_engine.store.schema import Base


def _tables(engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def test_upgrade_to_head_matches_the_models(bare_store_engine):
    assert current_revision(bare_store_engine) is None
    assert check(bare_store_engine)  # an empty database differs from the models
    upgrade(bare_store_engine)
    assert current_revision(bare_store_engine) == head_revision() == "0001"
    assert _tables(bare_store_engine) == set(Base.metadata.tables)
    assert check(bare_store_engine) == []


def test_downgrade_to_base_drops_everything_and_upgrade_works_again(store_engine):
    downgrade(store_engine, "base")
    assert current_revision(store_engine) is None
    assert _tables(store_engine) == set()
    upgrade(store_engine)
    assert _tables(store_engine) == set(Base.metadata.tables)
    assert check(store_engine) == []


def test_check_reports_drift(store_engine):
    with store_engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE runs ADD COLUMN note VARCHAR(20)"))
        connection.execute(sa.text("CREATE TABLE scratch (id INTEGER PRIMARY KEY)"))
    problems = check(store_engine)
    assert "column runs.note is in the database but not in the models" in problems
    assert "table scratch is in the database but not in the models" in problems
    assert len(problems) == 2


def test_check_reports_an_old_revision(store_engine):
    with store_engine.begin() as connection:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = 'old'"))
    assert check(store_engine) == ["database is at revision old, the migrations' head is 0001"]


def test_a_url_config_migrates_with_its_own_engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'by-url.sqlite3'}"
    command.upgrade(alembic_config(url), "head")
    engine = create_db_engine(url)
    try:
        assert current_revision(engine) == "0001" and check(engine) == []
    finally:
        engine.dispose()


def test_processes_starting_together_migrate_one_after_another(store_url):
    """Four engines (as four workers would) upgrade one fresh PostgreSQL store at once."""
    import threading

    if not store_url.startswith("postgresql"):
        return  # SQLite stores are one machine's file; the lock is PostgreSQL's
    engines = [create_db_engine(store_url) for _ in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(engines))

    def migrate(engine):
        start.wait()
        try:
            upgrade(engine)
        except BaseException as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=migrate, args=(e,), daemon=True) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "migrations blocked each other"
    assert errors == []
    assert current_revision(engines[0]) == head_revision()
    assert check(engines[0]) == []
    for engine in engines:
        engine.dispose()
