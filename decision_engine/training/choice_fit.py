"""Fitting the choice reader (`reader/choice_reader.py`) on the boolean and enum questions of
generated training groups, beside a frozen reader: every vector comes from the frozen base sentence
encoder once, so the head trains in seconds an epoch."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..reader.choice_reader import DIM, ChoiceReader, ChoiceReaderEnsemble, choice_reader, choice_text, slot_choices
from ..retrieval.context import SPAN_CHARS
from ..retrieval.embedder import SpanEmbedder
from ..retrieval.spans import split_spans
from .generated_fit import fit_on_generated, train_epochs
from .value_choice import carries_meaning, reworded_vectors

CHOICES_SEED = 10_000  # the choice reader's generated groups: apart from the reader's, the choosers' and calibration's
BATCH = 32
LEARNING_RATE = 1e-3


@dataclass(frozen=True)
class ChoiceExample:
    question: torch.Tensor  # (D,)
    spans: torch.Tensor  # (N, D) the document's spans
    choices: torch.Tensor  # (K, D)
    answer: int  # index of the gold choice


def gold_choice(choices: Sequence[object], labels: dict, question_id: str) -> int | None:
    """The index of a question's labelled answer among its choices, or None (no label, or not a choice)."""
    if question_id not in labels:
        return None
    label = labels[question_id]
    return next((i for i, c in enumerate(choices) if c == label and type(c) is type(label)), None)


def choice_examples(
    lines: Sequence[dict], embedder: SpanEmbedder, pointer=None, variants: int = 0, seed: int = 0,
    reword_documents: bool = False,
) -> list[ChoiceExample]:
    """One example per labelled boolean or enum question (hypotheses left out) of `lines`; with
    `variants`, each question also comes that many more times read with some of its words left out
    (`value_choice.drop_words`). With `reword_documents`, each such copy also reads the document's
    spans with words left out, a rewording of its own per copy, so the reader meets clauses worded
    as the generator never writes them."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        text = line["document"]["text"]
        labels = line.get("labels", {})
        asked = [
            (q, c, gold) for q in line["questions"]
            if (c := slot_choices(q["schema"])) is not None and (gold := gold_choice(c, labels, q["id"])) is not None
        ]
        if not asked:
            continue
        spans = embedder.embed_spans(text, split_spans(text, SPAN_CHARS))
        questions = embedder.embed_questions([q["text"] for q, _, _ in asked])
        reworded = reworded_vectors(embedder, [q["text"] for q, _, _ in asked], variants, rng)
        copies = _reworded_spans(embedder, text, variants, rng) if reword_documents else [spans] * variants
        for i, ((_, choices, gold), vector) in enumerate(zip(asked, questions)):
            read = embedder.embed_words([choice_text(c) for c in choices])
            out.append(ChoiceExample(vector, spans, read, gold))
            out.extend(ChoiceExample(v, copy, read, gold) for v, copy in zip(reworded[i], copies))
    return out


def _reworded_spans(embedder: SpanEmbedder, text: str, variants: int, rng: random.Random) -> list[torch.Tensor]:
    """`variants` copies of the document's span vectors (N, D), each span read with words left out,
    never those that carry its meaning (`carries_meaning`)."""
    spans = split_spans(text, SPAN_CHARS)
    per_span = reworded_vectors(embedder, [s.text for s in spans], variants, rng, keep=carries_meaning)
    return [torch.stack([copies[i] for copies in per_span]) for i in range(variants)]


def collate(examples: Sequence[ChoiceExample]) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """The reader's five inputs for a batch (spans and choices padded), and the gold choices."""
    n = max(len(e.spans) for e in examples)
    k = max(len(e.choices) for e in examples)
    batch = len(examples)
    spans, span_mask = torch.zeros((batch, n, DIM)), torch.zeros((batch, n), dtype=torch.bool)
    choices, choice_mask = torch.zeros((batch, k, DIM)), torch.zeros((batch, k), dtype=torch.bool)
    for row, e in enumerate(examples):
        spans[row, : len(e.spans)] = e.spans
        span_mask[row, : len(e.spans)] = True
        choices[row, : len(e.choices)] = e.choices
        choice_mask[row, : len(e.choices)] = True
    questions = torch.stack([e.question for e in examples])
    return (questions, spans, span_mask, choices, choice_mask), torch.tensor([e.answer for e in examples])


def choice_accuracy(reader: ChoiceReader | ChoiceReaderEnsemble, examples: Sequence[ChoiceExample]) -> dict:
    """The share of examples whose most likely choice is the gold one."""
    was_training = reader.training
    reader.eval()
    right = 0
    with torch.no_grad():
        for start in range(0, len(examples), 256):
            inputs, answers = collate(examples[start : start + 256])
            right += int((reader(*inputs).argmax(dim=-1) == answers).sum())
    reader.train(was_training)
    return {"accuracy": right / len(examples) if examples else 0.0}


def train_choice_reader(
    reader: ChoiceReader, examples: Sequence[ChoiceExample], epochs: int, seed: int, log: Callable[[str], None] = print
) -> dict:
    """Cross-entropy over each question's choices, AdamW, batches of `BATCH`, `epochs` passes."""
    if not examples:
        raise ValueError("no boolean or enum questions to fit the choice reader on")
    reader.train()
    return train_epochs(
        reader, examples, epochs, seed, what="choice reader", loss_of=_batch_loss, accuracy=choice_accuracy,
        batch=BATCH, learning_rate=LEARNING_RATE, log=log,
    )


def _batch_loss(reader: ChoiceReader, examples: Sequence[ChoiceExample]) -> torch.Tensor:
    inputs, answers = collate(examples)
    return torch.nn.functional.cross_entropy(reader(*inputs), answers)


def train_choice_readers(
    reader: ChoiceReader | ChoiceReaderEnsemble,
    examples: Sequence[ChoiceExample],
    epochs: int,
    seed: int,
    log: Callable[[str], None] = print,
) -> dict:
    """`train_choice_reader` for one reader, or for each member of an ensemble in turn (member i with
    seed + i), then the ensemble's accuracy on the examples before and after."""
    if not isinstance(reader, ChoiceReaderEnsemble):
        return train_choice_reader(reader, examples, epochs, seed, log)
    before = choice_accuracy(reader, examples)
    members = [train_choice_reader(m, examples, epochs, seed + i, log) for i, m in enumerate(reader.members)]
    after = choice_accuracy(reader, examples)
    log(f"choice readers together on their training questions: {before['accuracy']:.3f} -> {after['accuracy']:.3f}")
    return {"examples": len(examples), "epochs": epochs, "before": before, "after": after, "members": members}


def add_choice_reader(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    int8_parts: Sequence[str] = (),
    readers: int = 1,
    question_variants: int = 0,
    reword_documents: bool = False,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a choice reader (`readers` heads
    from seeds `seed`, `seed + 1`, ..., averaged) fitted on the boolean and enum questions of `groups`
    generated training groups beside its unchanged reader; returns the fit's summary (with
    `held_out` accuracy where lines are given). `int8_parts` names parts of the checkpoint to store
    in int8 from now on (room for it under the size cap). `question_variants`: more copies of each
    training question with words left out, and with `reword_documents` each copy reading the
    document's spans with words left out too (`choice_examples`)."""
    from dataclasses import replace

    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted, store_in_int8

    saved, meta = checkpoint_config(folder)
    if readers < 1:
        raise ValueError("--readers must be at least 1")
    model, meta = load_checkpoint(folder, cfg=replace(saved, reads_choices=True, choice_readers=readers), fresh_choices=True)
    store_in_int8(model, meta, folder, int8_parts)
    torch.manual_seed(seed)
    model.choice_reader = choice_reader(readers)  # drawn from the seed, whatever the loader left
    fitted = fit_on_generated(
        model.choice_reader, what="boolean and enum questions", groups=groups, epochs=epochs, seed=seed,
        first_seed=CHOICES_SEED, examples_of=choice_examples, train=train_choice_readers, accuracy=choice_accuracy,
        log=log, held_out=held_out,
        training_examples_of=functools.partial(
            choice_examples, variants=question_variants, seed=seed, reword_documents=reword_documents
        ),
    )
    if question_variants:
        fitted = {**fitted, "question_variants": question_variants}
    if reword_documents:
        fitted = {**fitted, "reword_documents": True}
    save_refitted(model, meta, out, folder, "choice_reader", fitted)
    return fitted
