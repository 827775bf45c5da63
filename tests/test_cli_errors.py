"""Hostile inputs on the command line: one line on stderr and exit 2 (batch's fatal problems exit 1), never a
traceback; a reader that leaves early (`| head`) ends a command quietly; errors files in input order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batch_helpers import good_lines, read_jsonl
from decision_engine.cli import build_parser, main
from decision_engine.json_input import MAX_DEPTH
from decision_engine.options import EngineOptions
from decision_engine.validation import Limits
from service_helpers import migrated_keys, sample_request


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        ("[" * 200_000 + "]" * 200_000, f"the limit is {MAX_DEPTH}"),
        ("[" * 200_000, f"the limit is {MAX_DEPTH}"),
        (json.dumps(sample_request()[0] | {"extra": json.loads("[" * 100 + "]" * 100)}), f"the limit is {MAX_DEPTH}"),
        (json.dumps(sample_request()[0] | {"document": {"text": "a\x00b"}}), "document.text: holds a NUL"),
        (json.dumps(sample_request()[0]).replace('"rules"', '"options": {"threshold": 1e999}, "rules"'),
         "Number out of range"),
    ],
    ids=["deep", "deep-unclosed", "deep-in-an-ignored-key", "nul-in-text", "number-out-of-range"],
)
def test_decide_refuses_a_hostile_file_in_one_line(tmp_path, capsys, content, phrase):
    path = tmp_path / "request.json"
    path.write_text(content, encoding="utf-8")
    assert main(["decide", str(path), "--model", "tiny-random"]) == 2
    line = one_error_line(capsys)
    assert phrase in line and f"{path}:1:" in line


@pytest.fixture
def migrated(store_url):
    migrated_keys(store_url)
    return store_url


@pytest.mark.parametrize(
    "flags",
    [
        ["--since", "0001-01-01T00:00:00+05:00"],
        ["--until", "9999-12-31T23:59:59-05:00"],
        ["--since", "0001-01-01T00:00:00+05:00", "--until", "9999-12-31T23:59:59-05:00"],
    ],
    ids=["since-before-year-1", "until-after-year-9999", "both"],
)
def test_report_dates_at_the_ends_of_time(migrated, capsys, flags):
    assert main(["report", "--db", migrated, "--json", *flags]) == 0
    assert json.loads(capsys.readouterr().out)["groups"] == 0


@pytest.mark.parametrize("flag", ["--run", "--dataset", "--model"])
def test_report_refuses_a_filter_no_store_can_hold(migrated, capsys, flag):
    assert main(["report", "--db", migrated, flag, "bad\udcff"]) == 2  # how a non-UTF-8 argument arrives
    assert f"{flag}: holds U+DCFF" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("flags", "phrase"),
    [
        (["--dataset", "d" * 201], "--dataset: must be 1 to 200 characters, not 201"),
        (["--dataset", "bad\udcff"], "--dataset: holds U+DCFF"),
        (["--run", "r" * 201], "--run: must be 1 to 200 characters, not 201"),
    ],
    ids=["dataset-too-long", "dataset-surrogate", "run-too-long"],
)
def test_batch_refuses_a_tag_no_store_can_hold(tmp_path, migrated, capsys, flags, phrase):
    (tmp_path / "in.jsonl").write_text(json.dumps(good_lines(1)[0]) + "\n")
    argv = ["batch", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out.jsonl"), "--run", "r", "--db", migrated]
    assert main([*argv, "--model", "tiny-random", *flags]) == 1
    assert phrase in one_error_line(capsys)
    assert not (tmp_path / "out.jsonl").exists()


def test_batch_errors_file_keeps_input_order(tmp_path, capsys):
    """An unreadable line met while a chunk is gathered is listed after the chunk's own refusals before it."""
    good = good_lines(1)
    too_large = {
        **good[0],
        "id": "too-large",  # refused by the engine: more than the tiny model's window
        "questions": [
            {"id": f"q{i}", "text": f"Question {i}: " + "is the tenant liable for the damage " * 50,
             "schema": {"type": "boolean"}}
            for i in range(8)
        ],
        "rules": [],
    }
    too_large.pop("labels")
    lines = [json.dumps(good[0]), json.dumps(too_large), '{"id": "broken", ', json.dumps(good[1]), "[" * 500]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    argv = ["batch", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out.jsonl"), "--run", "r", "--db", url]
    assert main([*argv, "--model", "tiny-random", "--batch-size", "3"]) == 2
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert [error["line"] for error in errors] == [2, 3, 5]
    assert "questions" in errors[0]["reason"] and "not valid JSON" in errors[1]["reason"]
    assert f"the limit is {MAX_DEPTH}" in errors[2]["reason"]
    assert sorted(line["id"] for line in read_jsonl(tmp_path / "out.jsonl")) == sorted([good[0]["id"], good[1]["id"]])


def test_db_upgrade_says_which_store(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert main(["db", "upgrade", "--db", url]) == 0
    assert url in capsys.readouterr().out


def _closed_early(argv: list[str], lines: int, cwd) -> subprocess.CompletedProcess:
    """Run the CLI with its stdout read for `lines` lines and then closed, as `| head -n LINES` does."""
    command = [sys.executable, "-m", "decision_engine.cli", *argv]
    env = os.environ | {"HF_HUB_OFFLINE": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env) as process:
        for _ in range(lines):
            process.stdout.readline()
        process.stdout.close()
        err = process.stderr.read().decode()
        return subprocess.CompletedProcess(command, process.wait(timeout=120), "", err)


@pytest.mark.parametrize(
    ("argv", "lines"),
    [(["generate", "--count", "3000"], 1), (["report", "--db", "sqlite:///store.sqlite3"], 0)],
    ids=["generate-head-1", "report-head-0"],
)
def test_a_reader_leaving_early_ends_the_command_quietly(tmp_path, argv, lines):
    migrated_keys(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    done = _closed_early(argv, lines, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr and "Exception ignored" not in done.stderr


@pytest.mark.parametrize("command", [["serve"], ["decide", "x.json"], ["batch", "x.jsonl", "--out", "o", "--run", "r"]])
def test_rule_limit_flags_reach_the_engine_options(command):
    args = build_parser().parse_args([*command, "--max-rules", "5", "--max-rule-values", "7", "--max-rule-values-total", "9"])
    assert EngineOptions.from_args(args).limits == Limits(max_rules=5, max_rule_values=7, max_rule_values_total=9)
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--max-rules", "0"])


@pytest.mark.parametrize("seconds", ["0", "-1", "4000"])
def test_serve_refuses_a_time_budget_out_of_range(capsys, seconds):
    assert main(["serve", "--request-timeout-s", seconds]) == 2
    assert "--request-timeout-s" in one_error_line(capsys)


@pytest.mark.parametrize("command", ["fit-agreement", "fit-value-agreement"])
def test_agreement_fits_refuse_negative_question_variants(tmp_path, capsys, command):
    assert main([command, "--out", str(tmp_path / "out"), "--question-variants", "-1"]) == 2
    assert "--question-variants" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_a_value_agreement_fit_names_a_folder_that_is_no_checkpoint(tmp_path, capsys):
    assert main(["fit-value-agreement", "--model", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "needs config.json" in one_error_line(capsys)


def test_a_value_agreement_fit_refuses_no_heads(tmp_path, capsys):
    assert main(["fit-value-agreement", "--out", str(tmp_path / "out"), "--readers", "0"]) == 2
    assert "--readers" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["fit-value-agreement", "fit-chooser"])
def test_a_fit_names_an_unknown_int8_part(tmp_path, capsys, command):
    assert main([command, "--out", str(tmp_path / "out"), "--int8", "no_such_part", "--groups", "1"]) == 2
    assert "no_such_part" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_new_operations_are_refused_where_the_choosers_know_every_operation(tmp_path, capsys):
    assert main(["fit-chooser", "--new-operations", "--out", str(tmp_path / "out"), "--groups", "1", "--epochs", "1"]) == 2
    assert "already have forms for every operation" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["decide", "eval", "batch", "serve"])
def test_a_cuda_device_on_a_machine_without_one_is_named_not_traced(tmp_path, capsys, monkeypatch, command):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    requests = Path(__file__).resolve().parents[1] / "samples" / "nda.jsonl"
    args = {
        "decide": ["decide", str(requests)],
        "eval": ["eval", "--path", str(requests)],
        "batch": ["batch", str(requests), "--run", "r", "--out", str(tmp_path / "out.jsonl"),
                  "--db", f"sqlite:///{tmp_path / 'store.sqlite3'}"],
        "serve": ["serve", "--db", f"sqlite:///{tmp_path / 'store.sqlite3'}"],
    }[command]
    assert main([*args, "--device", "cuda"]) != 0
    assert "no CUDA device" in one_error_line(capsys)


@pytest.mark.parametrize("command", [
    ["train", "--config", "smoke"],
    ["calibrate", "--groups", "0"],
])
@pytest.mark.parametrize(("content", "phrase"), [
    ('{"documents": [], "labels": {"nda-1": {"hypothesis": "h"}}}', "holds no documents"),
    ("not json", "not JSON"),
    ('{"documents": [{"text": "t"}], "labels": {}}', "documents[0] is malformed"),
])
def test_a_contractnli_file_that_cannot_teach_anything_is_refused_before_the_run(tmp_path, capsys, command, content, phrase):
    path = tmp_path / "contractnli.json"
    path.write_text(content)
    code = main([*command, "--contractnli", str(path), "--out", str(tmp_path / "out")])
    line = one_error_line(capsys)
    assert code == 2 and phrase in line and str(path) in line
    assert not (tmp_path / "out").exists()
