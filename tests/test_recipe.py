"""The whole training recipe: stages in order, each onto the one before, resumable after a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decision_engine.cli import build_parser, main
from decision_engine.training.recipe import STAGES, Stage, StageFailed, run_recipe, stage_args, stage_folder


class FakeCommands:
    """Records each command line and writes a checkpoint into its --out; fails once at `fail_at`."""

    def __init__(self, fail_at: str | None = None):
        self.calls: list[list[str]] = []
        self.fail_at = fail_at

    def __call__(self, args):
        self.calls.append(list(args))
        if self.fail_at and args[0] == self.fail_at:
            self.fail_at = None
            return 3
        out = args[args.index("--out") + 1]
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "config.json").write_text("{}")
        return 0


def test_every_stage_runs_in_order_onto_the_checkpoint_before_it(tmp_path):
    commands = FakeCommands()
    record = run_recipe("cnli.json", tmp_path, commands, log=lambda _: None)
    assert [c[0] for c in commands.calls] == [s.args[0] for s in STAGES]
    folders = [str(stage_folder(tmp_path, i, stage)) for i, stage in enumerate(STAGES)]
    for index, call in enumerate(commands.calls):
        assert call[call.index("--out") + 1] == folders[index]
        if index == 0:
            assert call[0] == "train" and "--model" not in call  # the reader starts from the base encoder
            assert call[call.index("--config") + 1] == "shipped"  # the reader the model ships
        else:  # every head is fitted over the reader the model ships, with the heads before it
            assert call[call.index("--model") + 1] == folders[index - 1]
    assert record["model"] == folders[-1]
    assert set(record["stages"]) == {s.name for s in STAGES}
    assert json.loads((tmp_path / "recipe.json").read_text()) == record


def test_a_stage_that_does_not_continue_the_chain_is_named_by_a_later_one(tmp_path):
    stages = (
        Stage("reader", ("train", "--config", "smoke", "--out", "{out}")),
        Stage("other-reader", ("train", "--config", "shipped", "--out", "{out}"), continue_chain=False),
        Stage("graft", ("graft-heads", "--reader", "{other_reader}", "--heads", "{model}", "--out", "{out}")),
    )
    commands = FakeCommands()
    record = run_recipe("cnli.json", tmp_path, commands, stages=stages, log=lambda _: None)
    graft = commands.calls[-1]
    assert graft[graft.index("--reader") + 1] == str(stage_folder(tmp_path, 1, stages[1]))
    assert graft[graft.index("--heads") + 1] == str(stage_folder(tmp_path, 0, stages[0]))
    assert record["model"] == str(stage_folder(tmp_path, 2, stages[2]))


def test_a_second_run_goes_on_from_the_stage_that_failed(tmp_path):
    first = FakeCommands(fail_at="fit-verdict")
    with pytest.raises(StageFailed) as failed:
        run_recipe("cnli.json", tmp_path, first, log=lambda _: None)
    assert failed.value.code == 3
    assert first.calls[-1][0] == "fit-verdict"
    again = FakeCommands()
    run_recipe("cnli.json", tmp_path, again, log=lambda _: None)
    assert again.calls[0][0] == "fit-verdict"  # nothing finished is run twice
    assert again.calls[0][again.calls[0].index("--model") + 1].endswith("05-absence-gate")
    assert len(first.calls) + len(again.calls) == len(STAGES) + 1
    done = FakeCommands()
    run_recipe("cnli.json", tmp_path, done, log=lambda _: None)
    assert done.calls == []


def test_the_reader_resumes_from_its_last_finished_epoch(tmp_path):
    folder = stage_folder(tmp_path, 0, STAGES[0])
    assert "--resume" not in stage_args(STAGES[0], None, folder, "cnli.json")
    folder.mkdir(parents=True)
    (folder / "resume.pt").write_bytes(b"")
    assert stage_args(STAGES[0], None, folder, "cnli.json")[-1] == "--resume"


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_each_stage_is_a_command_line_the_tool_accepts(stage, tmp_path):
    earlier = {s.name: tmp_path / s.name for s in STAGES[: STAGES.index(stage)]}
    args = stage_args(stage, tmp_path / "before", tmp_path / "after", "cnli.json", earlier)
    parsed = build_parser().parse_args(args)
    assert parsed.command == stage.args[0]


def test_a_missing_contractnli_file_is_named(tmp_path, capsys):
    assert main(["train-all", "--contractnli", str(tmp_path / "none.json"), "--out", str(tmp_path / "r")]) == 2
    assert "none.json" in capsys.readouterr().err
