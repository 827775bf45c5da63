"""The batch job's files and progress display, without a model."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from decision_engine.batch.outputs import JobFiles, OutputError, errors_path
from decision_engine.batch.progress import Progress
from decision_engine.batch.runner import MAX_KEY_CHARS, idempotency_key


@pytest.mark.parametrize(
    ("out", "errors"),
    [("out.jsonl", "out.errors.jsonl"), ("results", "results.errors.jsonl"), ("a.b.jsonl", "a.b.errors.jsonl")],
)
def test_errors_file_sits_beside_out(out, errors):
    assert errors_path(Path("runs") / out) == Path("runs") / errors


def test_resume_state_comes_from_both_files_and_a_fresh_job_starts_a_new_errors_file(tmp_path):
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.errors.jsonl").write_text('{"line": 4, "reason": "stale"}\n')
    files = JobFiles(out)  # no OUT yet: a fresh job
    assert not files.state.resumed and files.state.error_keys == set()
    files.write_results([{"id": "a"}, {"id": 7}])
    files.write_errors([{"line": 2, "reason": "bad"}, {"path": "x.txt", "id": "x.txt", "reason": "bad"}])
    files.close()
    assert (tmp_path / "out.errors.jsonl").read_text().count("\n") == 2  # the stale line is gone

    files = JobFiles(out)
    assert files.state.resumed
    assert files.state.done_ids == {"a", "7"} and files.state.error_keys == {"line:2", "path:x.txt"}
    files.write_errors([{"line": 2, "reason": "bad"}, {"line": 3, "reason": "new"}])  # line 2 is not repeated
    files.close()
    assert (tmp_path / "out.errors.jsonl").read_text().count("\n") == 3


def test_a_corrupt_complete_line_stops_the_job_instead_of_being_dropped(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(OutputError, match=r"out.jsonl:2 is not a line this job wrote"):
        JobFiles(out)
    assert out.read_text().count("\n") == 3  # left as it was


def test_long_ids_get_a_fixed_length_key():
    assert idempotency_key("nightly", "doc-1") == "batch:nightly:doc-1"
    long = idempotency_key("r" * 200, "x" * 200)
    assert len(long) <= MAX_KEY_CHARS and long != idempotency_key("r" * 200, "x" * 199 + "y")


def test_plain_progress_lines_give_done_total_rate_and_eta():
    stream = io.StringIO()
    progress = Progress(10, stream=stream, every_s=0, live=False)
    progress.advance(skipped=2)
    progress.advance(decided=3, errors=1)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("progress: 2/10 items, ")  # close() repeats nothing
    assert lines[1].startswith("progress: 6/10 items, ") and "items/s, ETA " in lines[1]
    assert progress.summary().startswith("decided 3, skipped 2 (already done), errors 1, ")

    stream = io.StringIO()
    progress = Progress(10, stream=stream, every_s=3600, live=False)
    progress.advance(decided=10)
    progress.close()  # no periodic line came: the end gets one
    [line] = stream.getvalue().splitlines()
    assert line.startswith("progress: 10/10 items, ") and line.endswith("ETA 0:00")


def test_the_live_bar_uses_rich_or_a_plain_line(monkeypatch):
    stream = io.StringIO()
    progress = Progress(3, stream=stream, live=True)
    progress.advance(decided=3)
    progress.close()
    assert "3/3" in stream.getvalue() and "items/s" in stream.getvalue()

    for name in [name for name in sys.modules if name == "rich" or name.startswith("rich.")] + ["rich"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if rich were not installed
    stream = io.StringIO()
    progress = Progress(3, stream=stream, live=True)
    progress.advance(decided=3)
    progress.close()
    assert stream.getvalue().startswith("\r") and stream.getvalue().endswith("ETA 0:00\x1b[K\n")
