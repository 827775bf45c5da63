"""Fitting how the value chooser weighs what a group's other questions answer (`grounding.siblings`).

Only the chooser's sibling weights learn (nine operations by three features per chooser); the rest
stays as fitted. Each generated training group is grounded as a joint request is: every integer and
date question scored alone by the frozen chooser, then each one's candidates read against the
others' answers, so the features in training are the ones the engine computes when it decides.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
import torch
from torch import nn

from ..grounding.mentions import find_mentions
from ..grounding.siblings import group_sibling_features
from ..grounding.slot_candidates import is_grounded, slot_candidates
from ..reader.value_chooser import SIBLING_FEATURES, choice_loss
from ..types import AnswerSchema
from .generated_fit import model_pointer
from .value_choice import ChoiceExample, choice_examples, collate

SIBLING_SEED = 9_000  # the groups it learns from: apart from those the chooser itself was fitted on
BATCH = 64
LEARNING_RATE = 0.05


@dataclass
class SiblingExample:
    """One grounded question of a group: its chooser example, and its candidates' sibling features."""

    example: ChoiceExample
    siblings: torch.Tensor  # (K, SIBLING_FEATURES)


def sibling_examples(lines: Sequence[dict], chooser: nn.Module, embedder, pointer=None) -> list[SiblingExample]:
    """Per labelled integer or date question of groups with at least two, its example and what the
    group's other grounded questions answer, scored alone by `chooser` (eval mode, no gradient)."""
    out = []
    for line in lines:
        labels = line.get("labels") or {}
        schemas = [msgspec.convert(q["schema"], AnswerSchema) for q in line["questions"]]
        asked = [s for q, s in zip(line["questions"], schemas) if is_grounded(s) and q["id"] in labels]
        if len(asked) < 2:
            continue
        examples = choice_examples([line], embedder, pointer)
        mentions = find_mentions(line["document"]["text"])
        slots = []
        for example, schema in zip(examples, asked):
            *inputs, _ = collate([example])
            with torch.no_grad():
                alone = chooser(*inputs)[0].softmax(-1)[:-1]
            slots.append((slot_candidates(schema, mentions), mentions, alone))
        out.extend(SiblingExample(e, f) for e, f in zip(examples, group_sibling_features(slots)))
    return out


def _batch(examples: Sequence[SiblingExample]) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    *inputs, target = collate([e.example for e in examples])
    siblings = torch.zeros((len(examples), inputs[2].shape[1], SIBLING_FEATURES))
    for i, e in enumerate(examples):
        siblings[i, : e.siblings.shape[0]] = e.siblings
    return inputs, siblings, target


def sibling_accuracy(chooser: nn.Module, examples: Sequence[SiblingExample], weigh: bool = True) -> float:
    """Share of examples whose best column is right, weighing the siblings (or, with `weigh` False, alone)."""
    right = 0
    with torch.no_grad():
        for first in range(0, len(examples), BATCH):
            inputs, siblings, target = _batch(examples[first : first + BATCH])
            best = chooser(*inputs, siblings=siblings if weigh else None).argmax(dim=-1)
            right += int(target[torch.arange(len(best)), best].sum())
    return right / max(len(examples), 1)


def train_sibling_weights(
    chooser: nn.Module, examples: Sequence[SiblingExample], epochs: int, seed: int = 0, log: Callable[[str], None] = print
) -> dict:
    """AdamW on the chooser's sibling weights only, the rest frozen and in eval mode (no dropout)."""
    chooser.eval()
    weights = [p for name, p in chooser.named_parameters() if name.endswith("sibling")]
    for p in chooser.parameters():
        p.requires_grad_(False)
    for p in weights:
        p.requires_grad_(True)
    optimiser = torch.optim.AdamW(weights, lr=LEARNING_RATE, weight_decay=0.0)
    rng = random.Random(seed)
    before = sibling_accuracy(chooser, examples)
    for epoch in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total = 0.0
        for first in range(0, len(order), BATCH):
            inputs, siblings, target = _batch([examples[i] for i in order[first : first + BATCH]])
            loss = choice_loss(chooser(*inputs, siblings=siblings), target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(target)
        log(f"siblings epoch {epoch + 1}/{epochs}: loss {total / max(len(examples), 1):.4f}")
    for p in weights:
        p.requires_grad_(False)
    return {"examples": len(examples), "epochs": epochs, "before": before, "after": sibling_accuracy(chooser, examples)}


def add_sibling_weights(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, whose value chooser weighs what the other
    questions of a joint request answer; returns the fit's summary (with `held_out` accuracy alone and
    weighing the siblings, where lines are given)."""
    import time

    from ..datasets.linked_groups import generate_groups
    from ..model.loader import ModelLoadError, load_checkpoint, save_refitted

    started = time.monotonic()
    model, meta = load_checkpoint(folder)
    chooser = model.value_chooser
    if chooser is None:
        raise ModelLoadError(f"{folder} has no value chooser to weigh siblings with; fit one first (fit-chooser)")
    chooser.eval()
    for name, p in chooser.named_parameters():  # fitted afresh, from none
        if name.endswith("sibling"):
            p.data.zero_()
    pointer = model_pointer(model)
    torch.manual_seed(seed)
    lines = generate_groups("train", groups, seed=SIBLING_SEED + seed)
    examples = sibling_examples(lines, chooser, pointer.embedder, pointer)
    log(f"{len(examples)} grounded questions with siblings from {groups} groups ({time.monotonic() - started:.0f} s)")
    fitted = train_sibling_weights(chooser, examples, epochs, seed, log)
    if held_out:
        checked = sibling_examples(held_out, chooser, pointer.embedder, pointer)
        fitted["held_out"] = {
            "questions": len(checked),
            "accuracy_alone": sibling_accuracy(chooser, checked, weigh=False),
            "accuracy": sibling_accuracy(chooser, checked),
        }
        log(f"held-out grounded questions with siblings ({len(checked)}): "
            f"{fitted['held_out']['accuracy_alone']:.3f} alone -> {fitted['held_out']['accuracy']:.3f} weighing them")
    fitted = {**fitted, "groups": groups, "seed": seed, "minutes": round((time.monotonic() - started) / 60, 2)}
    save_refitted(model, meta, out, folder, "value_chooser_siblings", fitted)
    return fitted
