"""The `db`, `keys` and `report` subcommands against a temporary SQLite store."""

from __future__ import annotations

import argparse
import sqlite3
import time

import msgspec
import pytest

from decision_engine.store.commands import add_store_commands
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.keys import KeyIdentity, authenticate
from decision_engine.store.recording import record_decision
from decision_engine.store.records import AccuracyReport
from store_fixtures import VALUES, make_request, make_response

UNREACHABLE = "postgresql://nobody@127.0.0.1:1/none"


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="decision-engine")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'cli' / 'store.sqlite3'}"


def _tables(url: str) -> set[str]:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_db_upgrade_current_check_downgrade(url, capsys):
    assert cli("db", "current", "--db", url) == 0
    assert capsys.readouterr().out.strip() == "none (head is 0003)"
    assert cli("db", "upgrade", "--db", url) == 0
    assert cli("db", "current", "--db", url) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "0003 (head)"
    assert cli("db", "check", "--db", url) == 0
    assert "matches" in capsys.readouterr().out
    assert cli("db", "downgrade", "base", "--db", url) == 0
    assert _tables(url) == {"alembic_version"}
    assert cli("db", "upgrade", "--db", url, "--revision", "0001") == 0
    assert "labels" in _tables(url)


def test_db_check_lists_drift(url, capsys):
    assert cli("db", "upgrade", "--db", url) == 0
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        connection.execute("ALTER TABLE documents ADD COLUMN language TEXT")
    capsys.readouterr()
    assert cli("db", "check", "--db", url) == 1
    captured = capsys.readouterr()
    assert captured.out.strip() == "column documents.language is in the database but not in the models"
    assert "1 difference" in captured.err


def test_keys_create_migrates_and_prints_the_key_last(url, capsys):
    assert cli("keys", "create", "--scope", "label", "--db", url) == 0
    lines = capsys.readouterr().out.splitlines()
    key = lines[-1]
    assert key.startswith("dek_")
    assert "shown only now" in lines[-2]
    engine = create_db_engine(url)
    try:
        with session_factory(engine)() as session:
            identity = authenticate(session, key)
    finally:
        engine.dispose()
    assert identity == KeyIdentity(id=1, scope="label")
    assert cli("keys", "revoke", "1", "--db", url) == 0
    assert cli("keys", "revoke", "1", "--db", url) == 1


def test_keys_create_needs_a_known_scope(url, capsys):
    with pytest.raises(SystemExit):
        cli("keys", "create", "--scope", "root", "--db", url)


def test_report_json_and_text(url, capsys):
    assert cli("db", "upgrade", "--db", url) == 0
    engine = create_db_engine(url)
    try:
        with session_factory(engine)() as session:
            labels = {"q1": "Entailment", "q2": False}
            record_decision(session, make_request(), make_response(VALUES), run="cli", labels=labels)
            record_decision(session, make_request(), make_response(VALUES), run="other")
    finally:
        engine.dispose()
    capsys.readouterr()
    assert cli("report", "--db", url, "--run", "cli", "--json", "--since", "2000-01-01") == 0
    report = msgspec.json.decode(capsys.readouterr().out, type=AccuracyReport)
    assert (report.groups, report.questions_labelled, report.per_question_accuracy) == (1, 2, 0.5)
    assert report.filters == {"run": "cli", "since": "2000-01-01T00:00:00+00:00"}
    assert cli("report", "--db", url) == 0
    text = capsys.readouterr().out
    assert "groups: 2  fully labelled: 0  labelled questions: 2" in text and "confusion of q2:" in text


def test_report_refuses_bad_dates(url, capsys):
    assert cli("report", "--db", url, "--since", "last tuesday") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --since:") and err.count("\n") == 1


def test_report_on_a_store_without_tables(url, capsys):
    assert cli("report", "--db", url) == 1
    assert "db upgrade" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [("db", "upgrade"), ("db", "check"), ("keys", "create", "--scope", "read"), ("report",)], ids=" ".join
)
def test_unreachable_store_is_one_line_and_exit_1(argv, capsys):
    start = time.monotonic()
    assert cli(*argv, "--db", UNREACHABLE) == 1
    assert time.monotonic() - start < 5
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: cannot reach the store at {UNREACHABLE}: ")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_db_defaults_to_database_url(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'env.sqlite3'}")
    assert cli("db", "upgrade") == 0
    assert (tmp_path / "env.sqlite3").is_file()


def test_unknown_revision_is_one_line_and_exit_2(url, capsys):
    assert cli("db", "upgrade", "--db", url) == 0
    capsys.readouterr()
    assert cli("db", "downgrade", "nonexistent", "--db", url) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nonexistent" in err and err.count("\n") == 1


def test_keys_create_list_and_revoke_say_which_store(url, capsys):
    assert cli("keys", "create", "--scope", "read", "--db", url) == 0
    out = capsys.readouterr().out
    assert f"in {url}" in out and "valid until" not in out
    assert cli("keys", "create", "--scope", "admin", "--expires-in", "12h", "--db", url) == 0
    out = capsys.readouterr().out
    assert f"in {url}" in out and "valid until" in out
    admin_key = out.strip().splitlines()[-1]
    engine = create_db_engine(url)
    try:
        with session_factory(engine)() as session:
            assert authenticate(session, admin_key) == KeyIdentity(id=2, scope="admin")  # notes its last use
    finally:
        engine.dispose()
    assert cli("keys", "revoke", "1", "--db", url) == 0
    assert url in capsys.readouterr().out
    assert cli("keys", "list", "--db", url) == 0
    lines = capsys.readouterr().out.splitlines()
    assert url in lines[0] and lines[1].split() == ["id", "prefix", "scope", "created", "last", "used", "expires", "state"]
    first, second = lines[2].split(), lines[3].split()
    assert first[0] == "1" and first[2] == "read" and "revoked" in first and first.count("-") == 2  # never used, no expiry
    assert second[0] == "2" and second[2] == "admin" and second[-1] == "active" and "-" not in second
    assert cli("keys", "list", "--json", "--db", url) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["id"], r["state"]) for r in rows] == [(1, "revoked"), (2, "active")]
    assert rows[1]["expires_at"] and rows[1]["last_used_at"] and rows[0]["last_used_at"] is None


@pytest.mark.parametrize("duration", ["0", "-5m", "soon", "3y"])
def test_keys_create_refuses_a_bad_expiry(url, duration, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli("keys", "create", "--scope", "read", "--expires-in", duration, "--db", url)
    assert exit_.value.code == 2 and "--expires-in" in capsys.readouterr().err


def test_db_prune_removes_older_decisions_and_says_from_where(url, capsys):
    import datetime as dt

    from sqlalchemy import update

    from decision_engine.store import schema as db
    from decision_engine.store.records import ReportFilters
    from decision_engine.store.reports import accuracy_report

    assert cli("db", "upgrade", "--db", url) == 0
    engine = create_db_engine(url)
    try:
        with session_factory(engine)() as session:
            for i, (run, year) in enumerate([("old", 2020), ("old", 2021), ("new", 2020), ("old", 2030)]):
                decision_id, _ = record_decision(session, make_request(text=f"Doc {i}."), make_response(VALUES), run=run)
                moment = dt.datetime(year, 1, 1, tzinfo=dt.UTC)
                session.execute(update(db.DecisionGroup).where(db.DecisionGroup.id == decision_id).values(created_at=moment))
            session.commit()
        capsys.readouterr()
        assert cli("db", "prune", "--before", "2025-01-01", "--run", "old", "--dry-run", "--db", url) == 0
        assert capsys.readouterr().out.startswith("would remove 2 decisions of run 'old'")
        with session_factory(engine)() as session:
            assert accuracy_report(session, ReportFilters()).groups == 4
        assert cli("db", "prune", "--before", "2025-01-01", "--run", "old", "--db", url) == 0
        out = capsys.readouterr().out
        assert out.startswith("removed 2 decisions of run 'old'") and "8 answers" in out and "2 documents" in out
        assert out.rstrip().endswith(url)
        with session_factory(engine)() as session:
            assert accuracy_report(session, ReportFilters()).groups == 2
        assert cli("db", "prune", "--before", "2025-01-01", "--db", url) == 0
        assert capsys.readouterr().out.startswith("removed 1 decisions")
        with session_factory(engine)() as session:
            assert accuracy_report(session, ReportFilters(run="old")).groups == 1  # the 2030 one
    finally:
        engine.dispose()
    assert cli("db", "prune", "--before", "someday", "--db", url) == 2
    assert capsys.readouterr().err.startswith("error: --before:")
