"""Rerunning a batch job after a crash: each id exactly once in OUT and in the store, nothing lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from decision_engine.batch.deciding import LocalDecider
from decision_engine.batch.job_engine import TINY_RANDOM, build_job_engine
from decision_engine.batch.inputs import check_ids, read_lines
from decision_engine.batch.progress import Progress
from decision_engine.batch.runner import BatchJob, run_batch
from decision_engine.cli import main
from decision_engine.options import EngineOptions
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.migrate import upgrade

from batch_helpers import read_jsonl, stored_ids, write_planted


class SpyDecider(LocalDecider):
    """A local decider that remembers which item ids it was asked to decide."""

    def __init__(self, engine):
        super().__init__(engine)
        self.decided: list[str] = []

    def decide(self, chunks):
        for chunk, outcomes, version in super().decide(chunks):
            self.decided.extend(item.id for item in chunk)
            yield chunk, outcomes, version


@pytest.fixture(scope="module")
def tiny_engine():
    return build_job_engine(EngineOptions(TINY_RANDOM))


@pytest.fixture
def sqlite_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    engine = create_db_engine(url)
    upgrade(engine)
    yield url, session_factory(engine)
    engine.dispose()


def _run(path, out, sessions, engine, run="resume"):
    decider = SpyDecider(engine)
    with sessions() as session:
        progress = run_batch(check_ids(read_lines(path)), BatchJob(out, run), decider, session, Progress(0, every_s=1e9))
    return decider, progress


def test_items_stored_but_missing_from_out_are_written_from_the_store(tmp_path, sqlite_store, tiny_engine):
    url, sessions = sqlite_store
    planted = write_planted(tmp_path / "in.jsonl", copies=2)
    out = tmp_path / "out.jsonl"
    first, _ = _run(planted.path, out, sessions, tiny_engine)
    assert set(planted.good) <= set(first.decided)
    complete = read_jsonl(out)

    # A crash after the store's commit but before OUT was written: one line missing, the last cut in half.
    raw = out.read_text().splitlines(keepends=True)
    missing, cut = json.loads(raw[2])["id"], json.loads(raw[-1])["id"]
    out.write_text("".join(raw[:2] + raw[3:-1]) + raw[-1][: len(raw[-1]) // 2])

    second, progress = _run(planted.path, out, sessions, tiny_engine)
    assert second.decided == []  # nothing decided again
    assert progress.skipped == len(planted.good) and progress.decided == 0
    assert progress.errors == len(planted.bad)
    lines = read_jsonl(out)  # parses: the truncated line was dropped
    assert sorted(line["id"] for line in lines) == sorted(planted.good)
    assert {line["id"]: line for line in lines} == {line["id"]: line for line in complete}
    assert {missing, cut} <= {line["id"] for line in lines[-2:]}  # written again, at the end
    assert stored_ids(url, "resume") == {item_id: 1 for item_id in planted.good}
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert sorted(error["line"] for error in errors) == sorted(planted.bad)  # none listed twice


def test_a_truncated_line_of_an_item_not_yet_stored_is_decided(tmp_path, sqlite_store, tiny_engine):
    url, sessions = sqlite_store
    planted = write_planted(tmp_path / "in.jsonl", copies=1)
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "lease-001-0", "decision_id": "0123')  # a crash mid-write of a first line
    decider, _ = _run(planted.path, out, sessions, tiny_engine)
    assert set(planted.good) <= set(decider.decided)
    assert sorted(line["id"] for line in read_jsonl(out)) == sorted(planted.good)


def test_an_id_stored_for_another_request_is_an_error_not_an_overwrite(tmp_path, sqlite_store, tiny_engine):
    url, sessions = sqlite_store
    planted = write_planted(tmp_path / "in.jsonl", copies=1)
    _run(planted.path, tmp_path / "first.jsonl", sessions, tiny_engine)
    changed = tmp_path / "changed.jsonl"
    text = planted.path.read_text().replace("RESIDENTIAL TENANCY", "COMMERCIAL TENANCY")
    assert text != planted.path.read_text()
    changed.write_text(text)

    decider, progress = _run(changed, tmp_path / "second.jsonl", sessions, tiny_engine)
    errors = {error["line"]: error for error in read_jsonl(tmp_path / "second.errors.jsonl")}
    assert errors[1]["id"] == "lease-001-0"
    assert "already stored in run 'resume' for a different request" in errors[1]["reason"]
    assert "lease-001-0" not in decider.decided
    assert stored_ids(url, "resume")["lease-001-0"] == 1


def test_a_changed_question_with_the_same_document_is_also_another_request(tmp_path, sqlite_store, tiny_engine):
    """Resuming compares the whole request (questions, schemas, rules), not only the document and question ids."""
    url, sessions = sqlite_store
    planted = write_planted(tmp_path / "in.jsonl", copies=1)
    _run(planted.path, tmp_path / "first.jsonl", sessions, tiny_engine)
    first = json.loads(planted.path.read_text().splitlines()[0])
    first["questions"][0]["text"] += " Answer from the tenancy terms only."
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps(first) + "\n")

    decider, _ = _run(changed, tmp_path / "second.jsonl", sessions, tiny_engine)
    errors = read_jsonl(tmp_path / "second.errors.jsonl")
    assert [e["id"] for e in errors] == [first["id"]]
    assert "for a different request" in errors[0]["reason"]
    assert first["id"] not in decider.decided
    assert stored_ids(url, "resume")[first["id"]] == 1


def _lines_in(path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_a_job_killed_with_sigkill_resumes_to_each_id_exactly_once(tmp_path, capsys):
    planted = write_planted(tmp_path / "in.jsonl", copies=4)
    out, url = tmp_path / "out.jsonl", f"sqlite:///{tmp_path / 'store.sqlite3'}"
    args = ["batch", str(planted.path), "--out", str(out), "--run", "crash", "--db", url, "--model", "tiny-random"]
    with open(tmp_path / "stderr.txt", "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "decision_engine.cli", *args, "--batch-size", "1"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        try:
            deadline = time.monotonic() + 120
            while _lines_in(out) < 3:
                assert process.poll() is None, (tmp_path / "stderr.txt").read_text()
                assert time.monotonic() < deadline, "the job wrote no results within 120 s"
                time.sleep(0.01)
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    written = _lines_in(out)
    assert written < len(planted.good), "the job finished before it could be killed"

    assert main(args) == 2  # the planted errors remain errors
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    decided = int(summary.split(",")[0].removeprefix("decided "))
    assert 0 < decided <= len(planted.good) - written
    assert sorted(line["id"] for line in read_jsonl(out)) == sorted(planted.good)
    assert stored_ids(url, "crash") == {item_id: 1 for item_id in planted.good}
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert sorted(error["line"] for error in errors) == sorted(planted.bad)
