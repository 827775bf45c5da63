"""Fitting how the value chooser weighs whether a candidate is in the unit its question asks for
(`grounding.units`).

Only the unit weights learn (nine operations by two features per chooser); the rest stays as fitted.
The examples are the integer and date questions of fresh generated training groups, each with its
candidates' unit features, computed as the engine computes them when it decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
import torch
from torch import nn

from ..grounding.mentions import find_mentions
from ..grounding.slot_candidates import is_grounded, slot_candidates
from ..grounding.units import unit_features
from ..reader.value_chooser import UNIT_FEATURES, choice_loss
from ..types import AnswerSchema
from .generated_fit import model_pointer
from .sibling_fit import train_sibling_weights
from .value_choice import ChoiceExample, choice_examples, collate

UNIT_SEED = 9_500  # the groups it learns from: apart from the chooser's own and the sibling fit's
BATCH = 64


@dataclass
class UnitExample:
    """One integer or date question: its chooser example and its candidates' unit features."""

    example: ChoiceExample
    units: torch.Tensor  # (K, UNIT_FEATURES)


def unit_examples(lines: Sequence[dict], embedder, pointer=None) -> list[UnitExample]:
    """Per labelled integer or date question of the lines, its example and its candidates' unit features."""
    out = []
    for line in lines:
        labels = line.get("labels") or {}
        asked = [(q["text"], msgspec.convert(q["schema"], AnswerSchema)) for q in line["questions"] if q["id"] in labels]
        asked = [(text, schema) for text, schema in asked if is_grounded(schema)]
        if not asked:
            continue
        mentions = find_mentions(line["document"]["text"])
        examples = choice_examples([line], embedder, pointer)
        for example, (text, schema) in zip(examples, asked):
            out.append(UnitExample(example, unit_features(text, schema, slot_candidates(schema, mentions), mentions)))
    return out


def _chosen_batch(chooser: nn.Module, examples: Sequence[UnitExample], weigh: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The chooser's (B, K + 1) logits on a batch, weighing the units or not, and the right columns."""
    *inputs, target = collate([e.example for e in examples])
    units = torch.zeros((len(examples), inputs[2].shape[1], UNIT_FEATURES))
    for i, e in enumerate(examples):
        units[i, : e.units.shape[0]] = e.units
    return chooser(*inputs, units=units if weigh else None), target


def _unit_loss(chooser: nn.Module, examples: Sequence[UnitExample]) -> torch.Tensor:
    return choice_loss(*_chosen_batch(chooser, examples, True))


def unit_accuracy(chooser: nn.Module, examples: Sequence[UnitExample], weigh: bool = True) -> float:
    """Share of examples whose best column is right, weighing the units (or, with `weigh` False, not)."""
    right = 0
    with torch.no_grad():
        for first in range(0, len(examples), BATCH):
            logits, target = _chosen_batch(chooser, examples[first : first + BATCH], weigh)
            right += int(target[torch.arange(len(target)), logits.argmax(dim=-1)].sum())
    return right / max(len(examples), 1)


def add_unit_weights(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, whose value chooser weighs whether each
    candidate is in the unit its question asks for; returns the fit's summary (with `held_out`
    accuracy without and with the unit weights, where lines are given)."""
    import time

    from ..datasets.linked_groups import generate_groups
    from ..model.loader import ModelLoadError, load_checkpoint, save_refitted

    started = time.monotonic()
    model, meta = load_checkpoint(folder)
    chooser = model.value_chooser
    if chooser is None:
        raise ModelLoadError(f"{folder} has no value chooser to weigh units with; fit one first (fit-chooser)")
    for name, p in chooser.named_parameters():  # fitted afresh, from none
        if name.endswith("unit"):
            p.data.zero_()
    pointer = model_pointer(model)
    torch.manual_seed(seed)
    examples = unit_examples(generate_groups("train", groups, seed=UNIT_SEED + seed), pointer.embedder, pointer)
    log(f"{len(examples)} integer and date questions from {groups} groups ({time.monotonic() - started:.0f} s)")
    fitted = train_sibling_weights(chooser, examples, epochs, seed, log, _unit_loss, unit_accuracy, named="unit")
    if held_out:
        checked = unit_examples(held_out, pointer.embedder, pointer)
        without, weighed = unit_accuracy(chooser, checked, weigh=False), unit_accuracy(chooser, checked)
        log(f"held-out integer and date questions ({len(checked)}): {without:.3f} without units -> {weighed:.3f} with them")
        fitted["held_out"] = {"questions": len(checked), "accuracy_without": without, "accuracy": weighed}
    fitted = {**fitted, "groups": groups, "seed": seed, "minutes": round((time.monotonic() - started) / 60, 2)}
    save_refitted(model, meta, out, folder, "value_chooser_units", fitted)
    return fitted
