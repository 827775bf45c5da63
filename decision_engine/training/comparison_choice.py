"""Training the comparison chooser on the boolean questions of generated groups.

Each side's value chooser starts from the model's fitted value chooser (which already points at the
value a question is about) and the pair is learnt from how often its comparison gives the gold answer.
Where a generated group says which two values a boolean compares (its `compared` field: left <= right),
each side is also taught to point at its value (`SIDE_WEIGHT`), as the evidence loss teaches the reader
where an answer comes from; a side whose value no candidate reaches is left to the answer alone. The
gate learns which questions are comparisons at all, against answering each question from habit, and,
where the group names its compared questions, from that list (`GATE_WEIGHT`); the others are left to
the reader.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..datasets.linked_groups import compared_value
from ..grounding.candidates import Candidate
from ..grounding.mentions import find_mentions
from ..reader.comparison_chooser import (
    ComparisonChooser, ComparisonTable, comparison_candidates, comparison_loss, side_loss,
)
from ..reader.value_chooser import CANDIDATE_FEATURES, MAX_OPERANDS, mention_features, question_mention_features
from ..retrieval.embedder import SpanEmbedder
from .generated_fit import fit_on_generated, model_pointer, train_epochs
from .value_choice import reworded_mention_features, reworded_vectors, with_rewording

BATCH = 32
SIDE_WEIGHT = 1.0  # the side loss beside the answer's, per side
GATE_WEIGHT = 1.0  # the loss of the gate's knowing which questions are comparisons, beside the answer's
COMPARER_SEED = 8_000  # the comparer's generated groups: apart from the reader's and the value chooser's


@dataclass
class ComparisonExample:
    """One labelled boolean question: its vector, its document's mentions and comparison table, its answer."""

    question: torch.Tensor  # (D,)
    mentions: torch.Tensor  # (M, F)
    table: ComparisonTable
    answer: bool
    question_id: str = ""
    left: torch.Tensor | None = None  # (K,) True on candidates of the compared left value, where known
    right: torch.Tensor | None = None  # (K,) the same for the right value
    is_comparison: bool | None = None  # whether the group says its answer is a comparison, where it says


def comparison_examples(
    lines: Sequence[dict], embedder: SpanEmbedder, pointer=None, variants: int = 0, seed: int = 0,
    reword_documents: bool = False,
) -> list[ComparisonExample]:
    """One example per labelled boolean question of documents with at least one candidate value; with
    `variants`, that many more per question, read with some of its words left out, each reading its
    mentions in a rewording of the document with `reword_documents` (as `value_choice.choice_examples`)."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        labels = line.get("labels") or {}
        compared = line.get("compared")  # generated groups name their compared questions; others say nothing
        asked = [
            (q["text"], q["id"], labels[q["id"]])
            for q in line["questions"]
            if q["schema"].get("type") == "boolean" and isinstance(labels.get(q["id"]), bool)
        ]
        if not asked:
            continue
        text = line["document"]["text"]
        mentions = find_mentions(text)
        candidates = comparison_candidates(mentions)
        if not candidates:
            continue
        table = ComparisonTable.of(candidates, mentions)
        features = mention_features(embedder, text, mentions)
        texts = [t for t, _, _ in asked]
        vectors = embedder.embed_questions(texts)
        reworded = reworded_vectors(embedder, texts, variants, rng)
        copies = [reworded_mention_features(embedder, text, mentions, features, rng) for _ in range(variants)] if reword_documents else []
        looked = pointer.question_evidence(text, texts) if pointer is not None else [None] * len(asked)
        for i, (vector, evidence, (_, qid, answer)) in enumerate(zip(vectors, looked, asked)):
            seen = question_mention_features(features, mentions, evidence)
            left, right = (_holding(candidates, v) for v in (compared or {}).get(qid, (None, None)))
            is_comparison = None if compared is None else qid in compared
            out.append(ComparisonExample(vector, seen, table, answer, qid, left, right, is_comparison))
            read = [question_mention_features(copy, mentions, evidence) for copy in copies] or [seen] * variants
            out.extend(
                ComparisonExample(v.clone(), r, table, answer, qid, left, right, is_comparison) for v, r in zip(reworded[i], read)
            )
    return out


def _holding(candidates: Sequence[Candidate], value: int | str | None) -> torch.Tensor | None:
    """(K,) True on the candidates whose value is `value` (an ISO date or a number), or None where
    none is (or no value is known)."""
    if value is None or isinstance(value, bool):
        return None
    wanted = compared_value(value)
    hits = torch.tensor([type(c.value) is type(wanted) and c.value == wanted for c in candidates], dtype=torch.bool)
    return hits if bool(hits.any()) else None


def side_targets(examples: Sequence[ComparisonExample]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, K) the left side's known candidates and (B, K) the right's, K the batch's widest table (all
    False where a side is unknown)."""
    k = max(1, max(len(e.table.table.operations) for e in examples))
    left, right = (torch.zeros((len(examples), k), dtype=torch.bool) for _ in range(2))
    for i, e in enumerate(examples):
        for target, known in ((left, e.left), (right, e.right)):
            if known is not None:
                target[i, : known.numel()] = known
    return left, right


def collate(examples: Sequence[ComparisonExample]) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """The chooser's padded inputs for a batch, and its answers."""
    b = len(examples)
    m = max(1, max(e.mentions.shape[0] for e in examples))
    k = max(1, max(len(e.table.table.operations) for e in examples))
    mentions = torch.zeros((b, m, examples[0].mentions.shape[1]))
    operations = torch.zeros((b, k), dtype=torch.long)
    operands = torch.full((b, k, MAX_OPERANDS), -1, dtype=torch.long)
    features = torch.zeros((b, k, CANDIDATE_FEATURES))
    valid = torch.zeros((b, k), dtype=torch.bool)
    less_equal, less, comparable = (torch.zeros((b, k, k), dtype=torch.bool) for _ in range(3))
    for i, e in enumerate(examples):
        n, t = len(e.table.table.operations), e.table
        mentions[i, : e.mentions.shape[0]] = e.mentions
        operations[i, :n] = t.table.operations
        operands[i, :n] = t.table.operands
        features[i, :n] = t.table.features
        valid[i, :n] = True
        less_equal[i, :n, :n] = t.less_equal
        less[i, :n, :n] = t.less
        comparable[i, :n, :n] = t.comparable
    questions = torch.stack([e.question for e in examples])
    answers = torch.tensor([e.answer for e in examples], dtype=torch.bool)
    return (questions, mentions, operations, operands, features, valid, less_equal, less, comparable), answers


def comparison_accuracy(chooser: ComparisonChooser, examples: Sequence[ComparisonExample]) -> dict:
    """Share of examples where the comparison's likelier answer is right, and the share it claims
    (the gate above one half), with the accuracy where it claims them."""
    right = claimed = right_claimed = 0
    sides = [0, 0]  # sides with a known value, and those whose likeliest candidate has it
    training = chooser.training
    chooser.eval()
    with torch.no_grad():
        for first in range(0, len(examples), BATCH):
            chunk = examples[first : first + BATCH]
            inputs, answers = collate(chunk)
            pair = chooser.sides(*inputs[:6])  # once: for the answer and for each side's own choice
            true, compares = chooser.compare(*pair, inputs[0], *inputs[6:])
            hit = (true > 0.5) == answers
            mine = compares > 0.5
            right += int(hit.sum())
            claimed += int(mine.sum())
            right_claimed += int((hit & mine).sum())
            for side, known in zip(pair, side_targets(chunk)):
                rows = known.any(dim=-1)
                sides[0] += int(rows.sum())
                sides[1] += int(known.gather(1, side.argmax(dim=-1, keepdim=True))[rows].sum())
    chooser.train(training)
    n = max(len(examples), 1)
    return {
        "accuracy": right / n, "claimed": claimed / n, "accuracy_where_claimed": right_claimed / max(claimed, 1),
        "sides_known": sides[0], "side_accuracy": sides[1] / max(sides[0], 1),
    }


def train_comparer(
    chooser: ComparisonChooser,
    examples: Sequence[ComparisonExample],
    epochs: int,
    seed: int = 0,
    learning_rate: float = 1e-3,
    weight_decay: float = 1e-2,
    log: Callable[[str], None] = print,
) -> dict:
    """Fit the chooser to the examples; returns its accuracy on them before and after."""
    return train_epochs(
        chooser, examples, epochs, seed, what="comparer", loss_of=_batch_loss, accuracy=comparison_accuracy,
        batch=BATCH, learning_rate=learning_rate, weight_decay=weight_decay, log=log,
    )


def _batch_loss(chooser: ComparisonChooser, examples: Sequence[ComparisonExample]) -> torch.Tensor:
    inputs, answers = collate(examples)
    habit = torch.sigmoid(chooser.prior(inputs[0])).squeeze(-1)
    left, right = chooser.sides(*inputs[:6])
    logits = chooser.columns(left, right, inputs[0], *inputs[6:])
    loss = comparison_loss(logits, answers, habit)
    for side, known in zip((left, right), side_targets(examples)):
        loss = loss + SIDE_WEIGHT * side_loss(side, known)
    said = [i for i, e in enumerate(examples) if e.is_comparison is not None]
    if said:
        gate = chooser.gate(inputs[0][said]).squeeze(-1)
        wanted = torch.tensor([float(examples[i].is_comparison) for i in said])
        loss = loss + GATE_WEIGHT * torch.nn.functional.binary_cross_entropy_with_logits(gate, wanted)
    return loss


def fit_comparison_chooser(
    chooser: ComparisonChooser,
    groups: int,
    epochs: int,
    seed: int,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    pointer=None,
    question_variants: int = 0,
    reword_documents: bool = False,
) -> dict:
    """Train `chooser` on the boolean questions of `groups` generated training groups, then freeze it;
    returns what the fit measured, with its accuracy on `held_out` labelled lines where given.
    `question_variants` and `reword_documents` as for the value chooser (`comparison_examples`)."""
    fitted = fit_on_generated(
        chooser, what="boolean questions", groups=groups, epochs=epochs, seed=seed, first_seed=COMPARER_SEED,
        examples_of=comparison_examples, train=train_comparer, accuracy=comparison_accuracy,
        log=log, held_out=held_out, pointer=pointer,
        training_examples_of=functools.partial(
            comparison_examples, variants=question_variants, seed=seed, reword_documents=reword_documents
        ),
    )
    return with_rewording(fitted, question_variants, reword_documents)


def add_comparison_chooser(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    question_variants: int = 0,
    reword_documents: bool = False,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a comparison chooser fitted beside
    its unchanged reader and value chooser (whose weights both sides start from); returns the fit's
    summary (with `held_out` accuracy where lines are given)."""
    from dataclasses import replace

    from ..model.loader import ModelLoadError, checkpoint_config, load_checkpoint, save_refitted

    saved, meta = checkpoint_config(folder)
    if not saved.chooses_values:
        raise ModelLoadError(f"{folder} has no value chooser to start the comparison chooser from; fit one first (fit-chooser)")
    sides = saved.value_choosers  # each side as many choosers as the value chooser it starts from
    cfg = replace(saved, compares_values=True, comparer_sides=sides, comparer_answers_alone=True)
    model, meta = load_checkpoint(folder, cfg=cfg, fresh_comparer=True)
    comparer = model.comparison_chooser
    comparer.start_from(model.value_chooser)
    pointer = model_pointer(model)
    fitted = fit_comparison_chooser(comparer, groups, epochs, seed, log, held_out, pointer, question_variants, reword_documents)
    save_refitted(model, meta, out, folder, "comparison_chooser", fitted)
    return fitted
