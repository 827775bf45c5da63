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
    assert current_revision(bare_store_engine) == head_revision() == "0003"
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
    assert check(store_engine) == ["database is at revision old, the migrations' head is 0003"]


def test_a_url_config_migrates_with_its_own_engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'by-url.sqlite3'}"
    command.upgrade(alembic_config(url), "head")
    engine = create_db_engine(url)
    try:
        assert current_revision(engine) == "0003" and check(engine) == []
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


def test_answer_keys_are_backfilled_from_the_values_stored_before(bare_store_engine):
    """Revision 0002 gives answers and labels stored at 0001 their kind's key (their canonical JSON),
    so the report still counts them; going back to 0001 drops the keys again."""
    from decision_engine.store.database import session_factory
    from decision_engine.store.records import ReportFilters
    from decision_engine.store.reports import accuracy_report

    upgrade(bare_store_engine, "0001")
    now = "2024-01-01 00:00:00"
    with bare_store_engine.begin() as connection:
        run = lambda sql, **values: connection.execute(sa.text(sql), values)  # noqa: E731
        run("INSERT INTO runs VALUES (1, 'r', 'm', 'v', 'joint', '', :t)", t=now)
        run("INSERT INTO documents VALUES (1, 'sha', 3, 'abc', NULL, :t)", t=now)
        run("INSERT INTO decision_groups VALUES ('g', 1, 1, NULL, NULL, 'h', NULL, 1, '[]', '{}', '{}', :t)", t=now)
        for pk, kind, answer, label in ((1, "boolean", "true", "true"), (2, "integer", "true", "1")):
            run("INSERT INTO questions VALUES (:pk, 'g', :pk, :q, 't', '{}', :kind)", pk=pk, q=f"q{pk}", kind=kind)
            run("INSERT INTO answers VALUES (:pk, :pk, :v, 0.5, 1, NULL)", pk=pk, v=answer)
            run("INSERT INTO labels VALUES (:pk, :pk, :v, :t)", pk=pk, v=label, t=now)
    upgrade(bare_store_engine)
    assert check(bare_store_engine) == []
    with bare_store_engine.connect() as connection:
        for table in ("answers", "labels"):
            rows = connection.execute(sa.text(f"SELECT value_json, value_key FROM {table} ORDER BY id")).all()
            assert [key for _, key in rows] == [value for value, _ in rows]
    with session_factory(bare_store_engine)() as session:
        report = accuracy_report(session, ReportFilters())
    assert (report.questions["q1"].correct, report.questions["q2"].correct) == (1, 0)
    downgrade(bare_store_engine, "0001")
    columns = {c["name"] for c in sa.inspect(bare_store_engine).get_columns("answers")}
    assert "value_key" not in columns and "value_json" in columns


def test_fixed_by_is_backfilled_and_downgrade_keeps_the_decisions(bare_store_engine):
    """Revision 0003 marks answers stored before it: step 0 with a one-value schema "schema", other step-0
    answers "rule", the rest "model"; going back to 0002 drops the new columns and keeps every row."""
    upgrade(bare_store_engine, "0002")
    now = "2024-01-01 00:00:00"
    schemas = {1: '{"type":"string","enum":["only"]}', 2: '{"type":"boolean"}', 3: '{"type":"integer","minimum":0,"maximum":9}'}
    with bare_store_engine.begin() as connection:
        run = lambda sql, **values: connection.execute(sa.text(sql), values)  # noqa: E731
        run("INSERT INTO api_keys VALUES (1, 'dek_abcd', 'h', 'read', :t, NULL)", t=now)
        run("INSERT INTO runs VALUES (1, 'r', 'm', 'v', 'joint', '', :t)", t=now)
        run("INSERT INTO documents VALUES (1, 'sha', 3, 'abc', NULL, :t)", t=now)
        run("INSERT INTO decision_groups VALUES ('g', 1, 1, NULL, NULL, 'h', 1, 1, '[]', '{}', '{}', :t)", t=now)
        for pk, step in ((1, 0), (2, 0), (3, 2)):
            run("INSERT INTO questions VALUES (:pk, 'g', :pk, :q, 't', :s, 'enum')", pk=pk, q=f"q{pk}", s=schemas[pk])
            run("INSERT INTO answers VALUES (:pk, :pk, 'true', 0.5, :step, NULL, 'true')", pk=pk, step=step)
    upgrade(bare_store_engine)
    assert check(bare_store_engine) == []
    with bare_store_engine.connect() as connection:
        fixed = connection.execute(sa.text("SELECT fixed_by FROM answers ORDER BY id")).scalars().all()
        keys = connection.execute(sa.text("SELECT expires_at, last_used_at FROM api_keys")).one()
        ref = connection.execute(sa.text("SELECT document_ref FROM decision_groups")).scalar_one()
    assert fixed == ["schema", "rule", "model"]
    assert tuple(keys) == (None, None) and ref is None
    downgrade(bare_store_engine, "0002")
    assert current_revision(bare_store_engine) == "0002"
    assert "fixed_by" not in {c["name"] for c in sa.inspect(bare_store_engine).get_columns("answers")}
    assert "document_ref" not in {c["name"] for c in sa.inspect(bare_store_engine).get_columns("decision_groups")}
    with bare_store_engine.connect() as connection:
        counts = [connection.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one() for t in ("decision_groups", "questions", "answers", "api_keys")]
    assert counts == [1, 3, 3, 1]
