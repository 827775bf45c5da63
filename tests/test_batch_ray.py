"""`decision-engine batch --engine ray`: the same job with the deciding on Ray actors.

Ray is in the test extra, so CI runs these; without it (outside CI) they are skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from decision_engine.cli import main

from batch_helpers import read_jsonl, stored_ids, write_planted


def _require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ModuleNotFoundError:
        if os.environ.get("CI"):
            pytest.fail("ray is not installed, but the test extra installs it")
        pytest.skip("ray is not installed: pip install -e '.[ray]'")


def test_ray_engine_gives_the_same_answers_and_files_as_the_local_engine(tmp_path, capsys):
    _require_ray()
    planted = write_planted(tmp_path / "in.jsonl", copies=2)
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    common = ["batch", str(planted.path), "--db", url, "--model", "tiny-random", "--batch-size", "4"]
    assert main([*common, "--out", str(tmp_path / "local.jsonl"), "--run", "local"]) == 2

    ray_args = [*common, "--out", str(tmp_path / "ray.jsonl"), "--run", "on-ray", "--engine", "ray", "--ray-cpus", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "decision_engine.cli", *ray_args],
        capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith(
        f"decided {len(planted.good)}, skipped 0 (already done), errors {len(planted.bad)}, "
    )

    local = {line["id"]: line for line in read_jsonl(tmp_path / "local.jsonl")}
    on_ray = {line["id"]: line for line in read_jsonl(tmp_path / "ray.jsonl")}
    assert sorted(on_ray) == sorted(local) == sorted(planted.good)
    for item_id, line in on_ray.items():
        expected = local[item_id]
        assert [(a["id"], a["value"], a["step"]) for a in line["answers"]] == [
            (a["id"], a["value"], a["step"]) for a in expected["answers"]
        ]
        assert [a["confidence"] for a in line["answers"]] == pytest.approx(
            [a["confidence"] for a in expected["answers"]], rel=1e-3, abs=1e-6
        )
        assert line["steps"] == expected["steps"] and line["labels"] == expected["labels"]
    local_errors = sorted((e["line"], e["reason"]) for e in read_jsonl(tmp_path / "local.errors.jsonl"))
    assert sorted((e["line"], e["reason"]) for e in read_jsonl(tmp_path / "ray.errors.jsonl")) == local_errors
    assert stored_ids(url, "on-ray") == stored_ids(url, "local") == {item_id: 1 for item_id in planted.good}


def test_without_ray_the_ray_engine_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ModuleNotFoundError
    planted = write_planted(tmp_path / "in.jsonl", copies=1)
    args = ["batch", str(planted.path), "--out", str(tmp_path / "o.jsonl"), "--run", "r",
            "--db", f"sqlite:///{tmp_path / 's.sqlite3'}", "--model", "tiny-random", "--engine", "ray"]
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: Ray is not installed; run: pip install 'decision-engine[ray]'"]
