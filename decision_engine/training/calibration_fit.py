"""Fitting a checkpoint's confidence calibration on training material (never on held-out documents).

The model decides the ContractNLI training documents (the split that also trained it) and fresh
generated training groups, in joint and independent mode; each answer it chose gives a (raw
confidence, right) pair, and `calibration.fit_calibration` fits one map per mode and answer kind.

The model has learnt the generated training wordings, so on them it is surer of itself than on
wordings it never saw. With `reword`, each group is decided reworded (`reworded_line`: a quarter of
the words of its questions and its document left out, never a value, a number or a negation), so the
maps see answers as a new wording finds them.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..calibration import fit_calibration
from ..engine import calibration_kind
from ..evaluation import LabelledGroup, load_groups
from ..kinds import same_answer
from ..model.loader import copy_checkpoint
from ..types import DecisionResponse
from ..validation import request_from_object

CALIBRATION_SEED = 9_000  # generated groups for calibration: apart from the reader's and the chooser's


def reworded_line(line: dict, rng: random.Random) -> dict:
    """A labelled request line with its questions and its document reworded (`value_choice.drop_words`
    and `value_choice.reworded_document`, both keeping what carries meaning); its labels still hold."""
    from ..grounding.mentions import find_mentions
    from .value_choice import carries_meaning, drop_words, reworded_document

    text = line["document"]["text"]
    reworded, _ = reworded_document(text, find_mentions(text), rng)
    questions = [{**q, "text": drop_words(q["text"], rng, keep=carries_meaning)} for q in line["questions"]]
    return {**line, "document": {**line["document"], "text": reworded}, "questions": questions, "evidence": {}}


MODES = ("joint", "independent")


def _kind(key: str) -> str:
    """The answer kind of a calibration key ("joint:compared" -> "compared")."""
    return key.split(":", 1)[1]


def collect_answers(engine, groups: Sequence[LabelledGroup], mode: str, batch_size: int = 8) -> list[tuple[str, float, bool]]:
    """("mode:kind", raw confidence, right) of every answer the model chose; the kind is the one the
    engine calibrates it as (`engine.calibration_kind`: "compared" for a boolean a comparison chose)."""
    out = []
    for start in range(0, len(groups), batch_size):
        chunk = groups[start : start + batch_size]
        requests = [request_from_object(g.request_line) for g in chunk]
        laid_out = engine.lay_out_many(requests, mode)
        for g, request, layout, response in zip(chunk, requests, laid_out, engine.decide_laid_out(laid_out)):
            if not isinstance(response, DecisionResponse):  # a refused request has no answers to count
                continue
            for slot, (q, answer) in enumerate(zip(request.questions, response.answers)):
                if answer.fixed_by == "model":
                    ok = same_answer(q.schema, answer.value, g.labels.get(q.id))
                    out.append((f"{mode}:{calibration_kind(layout, slot)}", answer.confidence, ok))
    return out


def calibrate_checkpoint(
    engine, folder: Path, out: Path, contractnli: Path | None, generated: int, log: Callable[[str], None] = print,
    kinds: Sequence[str] = (),
    reword: bool = False,
    cross_fit: int = 0,
    device: str = "cpu",
) -> dict:
    """Copy the checkpoint in `folder` to `out` with a calibration fitted by `engine` (over that checkpoint,
    uncalibrated) on training material; returns the maps and how many answers each was fitted on.
    With `kinds` (answer kinds such as "compared") only those kinds' maps are fitted again and the
    checkpoint's other maps are kept as they are. With `reword`, every group is decided reworded
    (`reworded_line`). With `cross_fit` folds, the ContractNLI documents are decided by readers that
    never saw them (`cross_calibration.cross_fitted_answers`) rather than by `engine`."""
    from ..datasets.linked_groups import generate_groups

    started = time.monotonic()
    groups = load_groups(contractnli, "contractnli", "train") if contractnli and not cross_fit else []
    lines = generate_groups("train", generated, seed=CALIBRATION_SEED) if generated else []
    groups += [LabelledGroup(line, line["labels"], {}) for line in lines]
    if reword:
        rng = random.Random(CALIBRATION_SEED)
        groups = [LabelledGroup(reworded_line(g.request_line, rng), g.labels, {}) for g in groups]
    answers = []
    for mode in MODES:
        answers += collect_answers(engine, groups, mode)
        log(f"calibration: {len(answers)} answers after {mode} ({time.monotonic() - started:.0f} s)")
    record = {
        "contractnli_groups": len(groups) - len(lines), "generated_groups": len(lines),
        **({"reworded": True} if reword else {}),
    }
    crossing = bool(cross_fit and contractnli)
    if crossing:
        from .cross_calibration import cross_fitted_answers

        crossed, cross_record = cross_fitted_answers(folder, contractnli, cross_fit, cross_fit_folder(out), device, log)
        answers += crossed
        record |= cross_record
    written = write_calibration(folder, out, answers, kinds, record, started, log)
    if crossing:  # the folds' readers and answers are kept until the maps are written
        shutil.rmtree(cross_fit_folder(out), ignore_errors=True)
    return written


def cross_fit_folder(out: Path) -> Path:
    """Where `calibrate --cross-fit` keeps its folds' readers and answers until `out` is written."""
    return out.with_name(out.name + ".cross-fit")


def write_calibration(
    folder: Path, out: Path, answers: Sequence[tuple[str, float, bool]], kinds: Sequence[str], record: dict,
    started: float, log: Callable[[str], None] = print,
) -> dict:
    """Copy the checkpoint in `folder` to `out` with maps fitted on `answers` ("mode:kind", raw
    confidence, right), only for `kinds` where given (the other maps kept); `record` joins the
    checkpoint's training record with the answer counts and the minutes since `started`."""
    if kinds:
        answers = [a for a in answers if _kind(a[0]) in kinds]
    calibration = fit_calibration(answers)
    counts: dict[str, int] = {}
    for key, _, _ in answers:
        counts[key] = counts.get(key, 0) + 1
    copy_checkpoint(folder, out)
    meta = json.loads((out / "config.json").read_text())
    fitted = calibration.to_dict()
    earlier = meta.get("calibration") or {}
    kept = {k: v for k, v in earlier.items() if kinds and _kind(k) not in kinds}
    # A map this fit had too few answers for stays as it was rather than vanish; the record names it.
    unfitted = {k: v for k, v in earlier.items() if k not in kept and k not in fitted}
    if unfitted:
        log(f"calibration: too few answers to fit {', '.join(sorted(unfitted))} again; their maps are kept")
    meta["calibration"] = {**kept, **unfitted, **fitted}
    record = {
        "answers": counts, **record,
        **({"kinds": list(kinds)} if kinds else {}),
        **({"kept_for_too_few_answers": sorted(unfitted)} if unfitted else {}),
        "minutes": round((time.monotonic() - started) / 60, 2),
    }
    training = meta.setdefault("training", {})
    if kinds and "calibration" in training:  # the earlier fit's record stays; this one joins it
        training["calibration"].setdefault("refitted", []).append(record)
    else:
        training["calibration"] = record
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return record | {"maps": meta["calibration"]}
