"""Fitting a checkpoint's verdict reader (`reader/verdict_reader.py`) on ContractNLI's training documents.

Each training hypothesis is read beside the evidence the checkpoint's context builder reports for it
(its evidence pointer's best spans), exactly as a decision lays it out, and labelled with its gold
verdict. Only the verdict reader's low-rank updates and head learn; the base encoder and the rest of
the checkpoint stay as they are. The held-out documents are read afterwards, for the record only.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn

from ..datasets.contractnli import load_contractnli, training_documents
from ..datasets.hypothesis_drills import SourceDocument, hypothesis_drills
from ..datasets.linked_groups import generate_groups
from ..datasets.paraphrase_drills import paraphrase_drills as paraphrase_drills_of
from ..evaluation import LabelledGroup, labelled_groups, load_groups
from ..reader.absence_gate import is_hypothesis_slot
from ..reader.verdict_reader import VerdictReader, load_base_encoder, tokenize_pairs, verdict_of

BATCH = 16
LEARNING_RATE = 5e-4
WARMUP_SHARE = 0.1  # of the steps, rising to the learning rate; then a linear fall to zero
GENERATED_SOURCES = 400  # generated training documents the drills take statements from, beside ContractNLI's


@dataclass(frozen=True)
class VerdictExample:
    """One hypothesis, the evidence it is read beside (best first) and its gold verdict (index in VERDICTS)."""

    hypothesis: str
    evidence: tuple[str, ...]
    verdict: int


def verdict_examples(context, groups: Sequence[LabelledGroup]) -> list[VerdictExample]:
    """The hypothesis questions of `groups`, each with the evidence `context` reports for it."""
    examples = []
    for group in groups:
        line = group.request_line
        questions = [
            q for q in line["questions"]
            if is_hypothesis_slot(q["schema"].get("enum") or ()) and verdict_of(group.labels.get(q["id"])) is not None
        ]
        if not questions:
            continue
        texts = [q["text"] for q in questions]
        choice = context(line["document"]["text"], texts, 0)
        for q, text, evidence in zip(questions, texts, choice.evidence):
            examples.append(VerdictExample(text, tuple(e.text for e in evidence), verdict_of(group.labels[q["id"]])))
    return examples


def drill_groups(contractnli: Path, count: int, seed: int = 0) -> list[LabelledGroup]:
    """`count` hypothesis drills (`datasets/hypothesis_drills.py`) over ContractNLI's training documents
    and generated training documents; the held-out documents are never read."""
    if count == 0:
        return []
    docs, _ = load_contractnli(contractnli)
    sources = [SourceDocument("nda", d.text) for d in training_documents(docs, seed=seed)]
    sources += [
        SourceDocument(line["id"].split("-")[1], line["document"]["text"])
        for line in generate_groups("train", GENERATED_SOURCES, seed)
    ]
    return labelled_groups(hypothesis_drills(sources, count, seed))


def train_verdict_reader(
    reader: VerdictReader,
    examples: Sequence[VerdictExample],
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> list[float]:
    """Fit `reader`'s updates and head on `examples` (the base encoder frozen); returns each epoch's
    mean loss. The reader is left in eval mode, its merged encoder rebuilt on next use."""

    def loss_of(encoder, tokenizer, batch: Sequence[VerdictExample]) -> torch.Tensor:
        encoded = tokenize_pairs(tokenizer, [e.hypothesis for e in batch], [e.evidence for e in batch])
        return nn.functional.cross_entropy(reader.logits(encoder, encoded), torch.tensor([e.verdict for e in batch]))

    return train_low_rank(reader, examples, epochs, loss_of, seed, log, what="verdict reader")


def train_low_rank(
    reader: VerdictReader,
    examples: Sequence,
    epochs: int,
    loss_of: Callable,
    seed: int = 0,
    log: Callable[[str], None] = print,
    what: str = "reader",
    learning_rate: float = LEARNING_RATE,
) -> list[float]:
    """Fit a low-rank reader's updates and head (the base encoder frozen, its dropout on) over
    `examples` in shuffled batches of `BATCH` at a peak `learning_rate`, `loss_of(encoder, tokenizer, batch)` giving a batch's
    mean loss: AdamW, a short warm-up then a linear fall to zero. Returns each epoch's mean loss; the
    reader is left in eval mode, its merged encoder rebuilt on next use. `what` names it in the log."""
    torch.manual_seed(seed)
    order = list(examples)
    shuffle = random.Random(seed).shuffle
    encoder, tokenizer = load_base_encoder()
    for parameter in encoder.parameters():
        parameter.requires_grad_(False)
    encoder.train()  # its dropout, as the base was trained with
    reader.train()
    hooks = reader.attach(encoder)
    steps = epochs * max(1, -(-len(order) // BATCH))
    optimizer = torch.optim.AdamW(reader.parameters(), lr=learning_rate, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=learning_rate, total_steps=steps, pct_start=WARMUP_SHARE, anneal_strategy="linear"
    )
    losses = []
    try:
        for epoch in range(epochs):
            shuffle(order)
            started, total = time.monotonic(), 0.0
            for first in range(0, len(order), BATCH):
                batch = order[first : first + BATCH]
                loss = loss_of(encoder, tokenizer, batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                total += loss.item() * len(batch)
            losses.append(total / max(len(order), 1))
            log(f"{what} epoch {epoch + 1}/{epochs}: loss {losses[-1]:.4f} ({time.monotonic() - started:.0f} s)")
    finally:
        for hook in hooks:
            hook.remove()
        reader.eval()
        reader.forget_encoder()
    return losses


def verdict_accuracy(reader: VerdictReader, examples: Sequence[VerdictExample]) -> float:
    """The share of `examples` whose most likely verdict is the gold one."""
    if not examples:
        return 0.0
    right = 0
    for first in range(0, len(examples), 32):
        batch = examples[first : first + 32]
        predicted = reader.log_probs([e.hypothesis for e in batch], [e.evidence for e in batch]).argmax(dim=-1)
        right += sum(int(p) == e.verdict for p, e in zip(predicted.tolist(), batch))
    return right / len(examples)


def add_verdict_reader(
    engine,
    folder: Path,
    out: Path,
    contractnli: Path,
    epochs: int = 3,
    rank: int = 8,
    seed: int = 0,
    log: Callable[[str], None] = print,
    wide: bool = False,
    int8_parts: Sequence[str] = (),
    drills: int = 0,
    paraphrase_drills: int = 0,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a verdict reader fitted on the
    ContractNLI training documents (and `drills` hypothesis drills, `drill_groups`, and `paraphrase_drills`
    paraphrase drills, `datasets/paraphrase_drills.py`) as `engine` (opened on that checkpoint) lays them
    out; returns the fit's record, with the reader's accuracy on the held-out documents. A `wide` reader
    updates the attention output and feed-forward projections too; `int8_parts` names parts of the
    checkpoint to store in int8 from now on (room for it under the size cap)."""
    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted, store_in_int8

    if not hasattr(engine.context, "strengths"):
        raise ValueError(f"{folder} has no span pointer: the verdict reader reads the evidence it reports")
    if epochs < 1 or rank < 1:
        raise ValueError("epochs and rank must be at least 1")
    started = time.monotonic()
    train = verdict_examples(engine.context, load_groups(contractnli, "contractnli", "train", seed=seed))
    held_out = verdict_examples(engine.context, load_groups(contractnli, "contractnli", "validation", seed=seed))
    if not train:
        raise ValueError(f"{contractnli}: no labelled hypotheses in its training documents")
    drilled = verdict_examples(engine.context, drill_groups(contractnli, drills, seed))
    paraphrased = verdict_examples(engine.context, labelled_groups(paraphrase_drills_of(paraphrase_drills, seed)))
    log(f"verdict reader: {len(train)} training hypotheses, {len(drilled)} drills and {len(paraphrased)} paraphrase "
        f"drills, {len(held_out)} held out")
    saved, _ = checkpoint_config(folder)
    model, meta = load_checkpoint(
        folder, cfg=replace(saved, reads_verdicts=True, verdict_rank=rank, verdict_wide=wide), fresh_verdict=True
    )
    store_in_int8(model, meta, folder, int8_parts)
    losses = train_verdict_reader(model.verdict_reader, train + drilled + paraphrased, epochs, seed, log)
    record = {
        "hypotheses": len(train), "drills": len(drilled), "paraphrase_drills": len(paraphrased),
        "epochs": epochs, "rank": rank, "wide": wide,
        "losses": [round(x, 4) for x in losses],
        "held_out_hypotheses": len(held_out),
        "held_out_accuracy": round(verdict_accuracy(model.verdict_reader, held_out), 4),
        "minutes": round((time.monotonic() - started) / 60, 2),
    }
    log(f"verdict reader: held-out accuracy {record['held_out_accuracy']:.3f} on {len(held_out)} hypotheses")
    save_refitted(model, meta, out, folder, "verdict_reader", record)
    return record
