"""Fitting a checkpoint's absence gate (`reader/absence_gate.py`) on ContractNLI's training documents.

Each hypothesis asked of a training document gives one row: the hypothesis, the pointer's strength
for it (its best span score and the document's span count), and whether its gold answer is "not
mentioned". A logistic regression with one intercept per hypothesis (its usual rate of absence) and
two shared slopes, on the best score and on the log of the span count, gives the gate's weights; the
centres are the rows' means, so the gate leaves the average odds of absence where the reader has
them. The held-out documents are never read.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ..evaluation import LabelledGroup, load_groups
from ..model.loader import copy_checkpoint
from ..reader.absence_gate import FEATURES, AbsenceGate, PassageStrength, is_absence_choice, is_hypothesis_slot

L2 = 1e-3  # ridge on the per-question intercepts, so a question always absent (or never) stays finite


@dataclass(frozen=True)
class StrengthRow:
    question: str
    strength: PassageStrength
    absent: bool


def strength_rows(context, groups: Sequence[LabelledGroup]) -> list[StrengthRow]:
    """One row per labelled hypothesis slot (`is_hypothesis_slot`); `context` is a `PointedContext`."""
    rows = []
    for g in groups:
        asked = []
        for q in g.request_line["questions"]:
            choices = q.get("schema", {}).get("enum") or []
            gold = g.labels.get(q["id"])
            if gold is not None and is_hypothesis_slot(choices):
                asked.append((q["text"], isinstance(gold, str) and is_absence_choice(gold)))
        if not asked:
            continue
        found = context.strengths(g.request_line["document"]["text"], [text for text, _ in asked])
        rows += [StrengthRow(text, s, absent) for (text, absent), s in zip(asked, found or ())]
    return rows


def fit_gate(rows: Sequence[StrengthRow], steps: int = 200, reads: str = "best") -> AbsenceGate:
    """The gate whose slopes best predict absence beside one intercept per question (log loss), on the
    strength it `reads` (`PassageStrength.read`)."""
    if reads not in FEATURES:
        raise ValueError(f"a gate reads one of {', '.join(FEATURES)}, not {reads!r}")
    if len({r.absent for r in rows}) < 2:
        raise ValueError("the gate needs rows both with and without an absent answer")
    names = sorted({r.question for r in rows})
    index = {q: i for i, q in enumerate(names)}
    x = torch.tensor([[r.strength.read(reads), math.log(max(r.strength.spans, 1))] for r in rows], dtype=torch.float64)
    centres = x.mean(dim=0)
    x = x - centres
    which = torch.tensor([index[r.question] for r in rows])
    y = torch.tensor([float(r.absent) for r in rows], dtype=torch.float64)
    weights = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    intercepts = torch.zeros(len(names), dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([weights, intercepts], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        logits = intercepts[which] + x @ weights
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y) + L2 * intercepts.pow(2).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    (weight, spans_weight), (centre, spans_centre) = weights.tolist(), centres.tolist()
    return AbsenceGate(round(weight, 6), round(centre, 6), round(spans_weight, 6), round(spans_centre, 6), reads)


def with_novel_gate(gate: AbsenceGate, rows: Sequence[StrengthRow]) -> AbsenceGate:
    """`gate` for the hypotheses of `rows`, beside a gate reading the pointer's top probability (fitted
    on the same rows) for every other hypothesis."""
    return replace(gate, known=frozenset(r.question for r in rows), novel=fit_gate(rows, reads="top"))


def gate_checkpoint(
    engine, folder: Path, out: Path, contractnli: Path, log: Callable[[str], None] = print, novel: bool = False
) -> dict:
    """Copy the checkpoint in `folder` to `out` with an absence gate fitted through `engine`'s context
    (a span pointer's) on ContractNLI's training documents; returns the gate and what it was fitted on.
    With `novel`, the checkpoint's own gate (fitted anew where it has none) is kept for the hypotheses
    fitted on and a gate on the top probability is added for every other (`with_novel_gate`)."""
    if not hasattr(engine.context, "strengths"):
        raise ValueError(f"{folder} has no span pointer: the gate reads its scores")
    started = time.monotonic()
    groups = load_groups(contractnli, "contractnli", "train")
    rows = strength_rows(engine.context, groups)
    kept = AbsenceGate.from_dict(json.loads((folder / "config.json").read_text()).get("absence_gate")) if novel else None
    gate = kept if kept is not None else fit_gate(rows)
    log(f"absence gate: weight {gate.weight:.4f} (centre {gate.centre:.3f}), on log spans {gate.spans_weight:.4f} "
        f"(centre {gate.spans_centre:.3f}), {'kept' if kept is not None else f'from {len(rows)} hypotheses'}")
    if novel:
        gate = with_novel_gate(gate, rows)
        log(f"novel hypotheses' gate: weight {gate.novel.weight:.4f} on the top probability's log-odds (centre "
            f"{gate.novel.centre:.3f}), beside {len(gate.known)} hypotheses fitted on")
    copy_checkpoint(folder, out)
    meta = json.loads((out / "config.json").read_text())
    meta["absence_gate"] = gate.to_dict()
    record = {
        "questions": len(rows), "absent": sum(r.absent for r in rows), "contractnli_groups": len(groups),
        "novel": novel, "minutes": round((time.monotonic() - started) / 60, 2),
    }
    meta.setdefault("training", {})["absence_gate"] = record
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return record | {"gate": gate.to_dict()}
