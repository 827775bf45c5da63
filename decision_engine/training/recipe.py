"""A fresh model of the bundled kind from the base encoder, one stage after another.

Each stage is one `decision-engine` command onto the checkpoint the stage before it wrote, into its own
folder under the recipe's folder (`01-reader`, `02-evidence-pointer`, ...). The reader comes first
(the answer-layers loop, whose document states are encoded once and kept across steps and epochs),
then every head is fitted over it, and its confidence maps on ContractNLI are cross-fitted last.
`recipe.json` there records each finished stage and its minutes, so running the recipe again skips
what is done and goes on from the first stage not finished; the reader's own run resumes from its
last finished epoch (`train --resume`). A stage may also train apart from the chain (`continue_chain`)
for a later stage to name, as a graft of one reader under other heads does.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

RECORD = "recipe.json"


@dataclass(frozen=True)
class Stage:
    """One command of the recipe; "{model}", "{out}" and "{contractnli}" in its arguments stand for the
    checkpoint before it, its own folder and the ContractNLI file, and an earlier stage's name (with
    underscores for hyphens, "{answer_layers_reader}") for that stage's folder. A stage that does not
    `continue_chain` writes a checkpoint the stages after it name, not the one they continue."""

    name: str
    args: tuple[str, ...]
    continue_chain: bool = True


def _onto(command: str, *rest: str) -> tuple[str, ...]:
    return (command, "--model", "{model}", "--out", "{out}", *rest)


STAGES: tuple[Stage, ...] = (
    Stage("reader", ("train", "--config", "shipped", "--contractnli", "{contractnli}", "--out", "{out}")),
    Stage("evidence-pointer", _onto("fit-pointer", "--evidence-only", "--contractnli", "{contractnli}")),
    Stage("value-choosers", _onto(
        "fit-chooser", "--groups", "1000", "--epochs", "20", "--question-variants", "2", "--reword-documents")),
    Stage("comparer", _onto("fit-comparer", "--question-variants", "2", "--reword-documents")),
    Stage("absence-gate", _onto("fit-gate", "--contractnli", "{contractnli}", "--novel")),
    Stage("verdict-reader", _onto("fit-verdict", "--contractnli", "{contractnli}")),
    Stage("choice-reader", _onto(
        "fit-choices", "--groups", "2000", "--reword-documents", "--int8", "comparison_chooser")),
    Stage("calibration", _onto("calibrate", "--contractnli", "{contractnli}", "--groups", "200")),
    Stage("reworded-calibration", _onto(
        "calibrate", "--groups", "200", "--kinds", "integer,date,boolean,enum,compared", "--reword")),
    Stage("reworded-hypothesis-calibration", _onto(
        "calibrate", "--contractnli", "{contractnli}", "--groups", "0", "--kinds", "hypothesis", "--reword")),
    # last: they weigh answers again by how sure the others are, as the maps above report it
    Stage("agreement-reader", _onto("fit-agreement", "--groups", "3200", "--epochs", "5")),
    Stage("value-agreement-reader", _onto(
        "fit-value-agreement", "--groups", "3200", "--epochs", "5", "--question-variants", "2",
        "--int8", "agreement_reader,value_agreement_reader")),
    Stage("cross-fitted-hypothesis-calibration", _onto(
        "calibrate", "--contractnli", "{contractnli}", "--groups", "0", "--kinds", "hypothesis", "--cross-fit", "2")),
)


class StageFailed(Exception):
    """A stage's command ended with a non-zero exit status."""

    def __init__(self, stage: str, code: int):
        super().__init__(f"stage {stage} failed (exit status {code}); run the recipe again to go on from it")
        self.code = code


def stage_folder(out: Path, index: int, stage: Stage) -> Path:
    return out / f"{index + 1:02d}-{stage.name}"


def stage_args(
    stage: Stage, model: Path | None, folder: Path, contractnli: str, earlier: dict[str, Path] | None = None
) -> list[str]:
    """The stage's command line, its placeholders filled in (`earlier`: the folders of the stages before
    it, by name); a reader resumes where it has a resume file."""
    named = {name.replace("-", "_"): path for name, path in (earlier or {}).items()}
    args = [a.format(model=model, out=folder, contractnli=contractnli, **named) for a in stage.args]
    if stage.args[0] == "train" and (folder / "resume.pt").exists():
        args.append("--resume")
    return args


def _write_record(out: Path, record: dict) -> None:
    partial = out / (RECORD + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(partial, out / RECORD)


def run_recipe(
    contractnli: str,
    out: Path,
    run_command: Callable[[Sequence[str]], int],
    stages: Sequence[Stage] = STAGES,
    log: Callable[[str], None] = print,
) -> dict:
    """Run every stage not yet finished, in order; returns the record (each stage's folder and minutes,
    the total and the final checkpoint). Raises `StageFailed` at the first stage that fails."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / RECORD
    record = json.loads(path.read_text()) if path.exists() else {"stages": {}}
    model: Path | None = None
    earlier: dict[str, Path] = {}
    for index, stage in enumerate(stages):
        folder = stage_folder(out, index, stage)
        if stage.name in record["stages"]:
            earlier[stage.name] = folder
            model = folder if stage.continue_chain else model
            continue
        args = stage_args(stage, model, folder, contractnli, earlier)
        log(f"stage {index + 1}/{len(stages)} {stage.name}: decision-engine {' '.join(args)}")
        began = time.monotonic()
        code = run_command(args)
        if code != 0:
            raise StageFailed(stage.name, code)
        minutes = (time.monotonic() - began) / 60
        earlier[stage.name] = folder
        model = folder if stage.continue_chain else model
        record["stages"][stage.name] = {"folder": folder.name, "minutes": round(minutes, 2)}
        record["total_minutes"] = round(sum(s["minutes"] for s in record["stages"].values()), 2)
        record["model"] = str(model)  # the newest checkpoint the stages continue; the last stage's once all are done
        _write_record(out, record)
        log(f"stage {stage.name} done in {minutes:.1f} minutes")
    return record
