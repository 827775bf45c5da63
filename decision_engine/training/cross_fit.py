"""Fitting a checkpoint's cross reader (`reader/cross_reader.py`) on the boolean and enum questions of
generated training groups.

Each question is read beside the evidence the checkpoint's context builder reports for it (its
evidence pointer's best spans), exactly as a decision lays it out, and labelled with its gold
choice. Only the cross reader's low-rank updates and head learn; the rest of the checkpoint stays as
it is. Held-out lines, where given, are read afterwards, for the record only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn

from ..reader.choice_reader import slot_choices
from ..reader.cross_reader import CrossReader, reads_across, tokenize_choices
from .choice_fit import CHOICES_SEED, gold_choice
from .verdict_fit import train_low_rank

CROSS_SEED = CHOICES_SEED  # the same fresh generated groups as the choice reader's: apart from the reader's


@dataclass(frozen=True)
class CrossExample:
    """One question, its choices, the evidence it is read beside (best first) and its gold choice's index."""

    question: str
    choices: tuple
    evidence: tuple[str, ...]
    answer: int


def cross_examples(context, lines: Sequence[dict]) -> list[CrossExample]:
    """The labelled boolean and enum questions (hypotheses left out) of `lines`, each with the
    evidence `context` reports for it."""
    examples = []
    for line in lines:
        labels = line.get("labels") or {}
        asked = []
        for q in line["questions"]:
            choices = slot_choices(q["schema"])
            if choices is not None and reads_across(choices) and (gold := gold_choice(choices, labels, q["id"])) is not None:
                asked.append((q["text"], tuple(choices), gold))
        if not asked:
            continue
        found = context(line["document"]["text"], [text for text, _, _ in asked], 0)
        for (text, choices, gold), evidence in zip(asked, found.evidence):
            examples.append(CrossExample(text, choices, tuple(e.text for e in evidence), gold))
    return examples


def train_cross_reader(
    reader: CrossReader, examples: Sequence[CrossExample], epochs: int, seed: int = 0, log: Callable[[str], None] = print
) -> list[float]:
    """Fit `reader`'s updates and head on `examples` (cross-entropy over each question's choices);
    returns each epoch's mean loss."""

    def loss_of(encoder, tokenizer, batch: Sequence[CrossExample]) -> torch.Tensor:
        encoded, marks = tokenize_choices(
            tokenizer, [e.question for e in batch], [e.choices for e in batch], [e.evidence for e in batch]
        )
        logits = reader.choice_logits(encoder, encoded, marks)
        return nn.functional.cross_entropy(logits, torch.tensor([e.answer for e in batch]))

    return train_low_rank(reader, examples, epochs, loss_of, seed, log, what="cross reader")


def cross_accuracy(reader: CrossReader, examples: Sequence[CrossExample]) -> float:
    """The share of `examples` whose most likely choice is the gold one."""
    right = 0
    for first in range(0, len(examples), 32):
        batch = examples[first : first + 32]
        read = reader.choice_log_probs([e.question for e in batch], [e.choices for e in batch], [e.evidence for e in batch])
        right += sum(max(range(len(r)), key=r.__getitem__) == e.answer for r, e in zip(read, batch))
    return right / len(examples) if examples else 0.0


def add_cross_reader(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    rank: int = 8,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a cross reader fitted on the
    boolean and enum questions of `groups` generated training groups as an engine opened on that
    checkpoint lays them out; returns the fit's record, with its accuracy on `held_out` lines."""
    from ..datasets.linked_groups import generate_groups
    from ..factory import build_engine
    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted
    from ..models import open_model

    engine = build_engine(model=open_model(folder))
    if not hasattr(engine.context, "strengths"):
        raise ValueError(f"{folder} has no span pointer: the cross reader reads the evidence it reports")
    if groups < 1 or epochs < 1 or rank < 1:
        raise ValueError("groups, epochs and rank must be at least 1")
    started = time.monotonic()
    train = cross_examples(engine.context, generate_groups("train", groups, seed=CROSS_SEED + seed))
    checked = cross_examples(engine.context, held_out)
    if not train:
        raise ValueError("no boolean or enum questions to fit the cross reader on")
    log(f"cross reader: {len(train)} training questions from {groups} groups, {len(checked)} held out")
    saved, _ = checkpoint_config(folder)
    model, meta = load_checkpoint(folder, cfg=replace(saved, reads_across=True, cross_rank=rank), fresh_cross=True)
    torch.manual_seed(seed)
    model.cross_reader = CrossReader(rank)  # drawn from the seed, whatever the loader left
    losses = train_cross_reader(model.cross_reader, train, epochs, seed, log)
    for p in model.cross_reader.parameters():
        p.requires_grad_(False)
    record = {
        "questions": len(train), "groups": groups, "epochs": epochs, "rank": rank, "seed": seed,
        "losses": [round(x, 4) for x in losses],
    }
    if checked:
        record["held_out"] = {"questions": len(checked), "accuracy": round(cross_accuracy(model.cross_reader, checked), 4)}
        log(f"cross reader: held-out accuracy {record['held_out']['accuracy']:.3f} on {len(checked)} questions")
    record["minutes"] = round((time.monotonic() - started) / 60, 2)
    save_refitted(model, meta, out, folder, "cross_reader", record)
    return record
