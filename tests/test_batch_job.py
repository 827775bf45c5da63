"""`decision-engine batch INPUT.jsonl`: every good line decided once into OUT and the store, every bad one listed."""

from __future__ import annotations

import msgspec
import pytest

from decision_engine.cli import main
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.records import ReportFilters
from decision_engine.store.recording import find_idempotent, load_decision
from decision_engine.store.reports import accuracy_report

from batch_helpers import read_jsonl, stored_ids, write_planted


def _batch(input_path, out, url, *extra):
    return main(["batch", str(input_path), "--out", str(out), "--run", "nightly", "--db", url,
                 "--model", "tiny-random", "--dataset", "samples", *extra])


def test_good_lines_decided_once_and_bad_lines_listed(tmp_path, store_url, capsys):
    planted = write_planted(tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    assert len(planted.good) >= 20

    assert _batch(planted.path, out, store_url) == 2  # some items were errors
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"decided {len(planted.good)}, skipped 0 (already done), errors {len(planted.bad)}, ")

    lines = read_jsonl(out)
    assert sorted(line["id"] for line in lines) == sorted(planted.good)
    for line in lines:
        assert line["labels"] == planted.good[line["id"]]
        assert set(line) == {"id", "decision_id", "answers", "mode", "steps", "model", "timings_ms", "labels"}
        assert line["model"] == "tiny-random" and line["mode"] == "joint"
        assert [a["id"] for a in line["answers"]] == list(planted.good[line["id"]])

    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert sorted(error["line"] for error in errors) == sorted(planted.bad)
    by_line = {error["line"]: error for error in errors}
    assert "id" not in by_line[3] and "not valid JSON" in by_line[3]["reason"]
    assert by_line[7]["id"] == "bad-schema" and "schema" in by_line[7]["reason"]
    assert by_line[11]["id"] == "lease-001-0" and "duplicate id" in by_line[11]["reason"]
    assert by_line[15]["id"] == "bad-label" and "labels." in by_line[15]["reason"]
    assert by_line[19]["id"] == "too-large" and "questions" in by_line[19]["reason"]

    assert stored_ids(store_url, "nightly") == {item_id: 1 for item_id in planted.good}
    engine = create_db_engine(store_url)
    try:
        with session_factory(engine)() as session:
            report = accuracy_report(session, ReportFilters(run="nightly", dataset="samples"))
            assert report.groups == report.groups_labelled == len(planted.good)
            assert report.questions_labelled == sum(len(labels) for labels in planted.good.values())
            stored = load_decision(session, find_idempotent(session, "batch:nightly:nda-002-3", None))
            assert stored.labels == planted.good["nda-002-3"] and stored.external_id == "nda-002-3"
            line = next(line for line in lines if line["id"] == "nda-002-3")
            assert stored.id == line["decision_id"]
            assert msgspec.to_builtins(stored.answers) == line["answers"]
    finally:
        engine.dispose()


def test_rerun_of_a_finished_job_decides_nothing_and_lists_nothing_twice(tmp_path, capsys):
    planted = write_planted(tmp_path / "in.jsonl", copies=1)
    out, url = tmp_path / "out.jsonl", f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert _batch(planted.path, out, url) == 2
    first_out, first_errors = out.read_bytes(), (tmp_path / "out.errors.jsonl").read_bytes()

    assert _batch(planted.path, out, url) == 2
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"decided 0, skipped {len(planted.good)} (already done), errors {len(planted.bad)}, ")
    assert out.read_bytes() == first_out
    assert (tmp_path / "out.errors.jsonl").read_bytes() == first_errors
    assert stored_ids(url, "nightly") == {item_id: 1 for item_id in planted.good}


def test_clean_input_exits_0_with_an_empty_errors_file_and_mode_override(tmp_path, capsys):
    planted = write_planted(tmp_path / "in.jsonl", copies=1)
    good = [line for number, line in enumerate(planted.path.read_text().splitlines(), 1) if number not in planted.bad]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(good) + "\n\n")  # a blank line is not an item
    out = tmp_path / "results"  # no .jsonl suffix: the errors file name is appended
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert _batch(clean, out, url, "--mode", "independent", "--batch-size", "3") == 0
    assert (tmp_path / "results.errors.jsonl").read_text() == ""
    assert {line["mode"] for line in read_jsonl(out)} == {"independent"}
    assert "errors 0" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--documents", "docs"], "--documents and --checklist go together"),
        (["in.jsonl", "--documents", "docs", "--checklist", "c.json"], "either INPUT.jsonl or --documents"),
        (["missing.jsonl"], "missing.jsonl: no such file"),
        (["in.jsonl", "--db", "mysql://x/y"], "--db: unsupported database"),
        (["in.jsonl", "--model", "no-such-folder"], "no-such-folder has no config.json"),
    ],
    ids=["documents-without-checklist", "both-inputs", "missing-input", "bad-db-url", "bad-model"],
)
def test_fatal_problems_exit_1_with_one_line(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text("{}\n")
    assert main(["batch", "--out", "out.jsonl", "--run", "r", "--model", "tiny-random", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("error: ")


def test_unreachable_store_exits_1_with_one_line(tmp_path, capsys):
    (tmp_path / "in.jsonl").write_text("{}\n")
    url = "postgresql://nobody@127.0.0.1:9/none"  # nothing listens on port 9
    assert main(["batch", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "o.jsonl"), "--run", "r", "--db", url]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot reach the store at postgresql")
