"""Fitting the agreement reader (`reader/agreement_reader.py`) on generated training groups the
model decides itself, jointly, without one: each boolean or enum answer the model chose, with the
answers of its group the model was surer of, is an example whose gold is the labelled choice. The
answers are the model's own, with its calibrated confidences, so the reader learns how far a surer
sibling is to be trusted, not what the labels say. With `reword`, each group is decided reworded
(`calibration_fit.reworded_line`), as the model finds wordings it never saw."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ..decoding.agreement import decided_answers, question_choices
from ..engine import calibration_kind
from ..reader.agreement_reader import AgreementReader, Decided, batch, prior_odds, surer_than
from ..types import DecisionResponse
from ..validation import request_from_object
from .choice_fit import gold_choice
from .generated_fit import train_epochs
from .value_choice import reworded_vectors

AGREEMENT_SEED = 12_000  # generated groups for the agreement reader: apart from every other fit's
BATCH = 32
LEARNING_RATE = 1e-3


@dataclass(frozen=True)
class AgreementExample:
    answer: Decided  # the answer weighed again (for the value agreement reader, an integer or date answer)
    surer: tuple[Decided, ...]  # the (boolean and enum) answers of its group the model was surer of
    gold: int  # index of the labelled choice


def decided_jointly(engine, lines: Sequence[dict], batch_size: int = 8) -> Iterator[tuple]:
    """(line, request, layout, response) for each line the model decides jointly, `batch_size` at a
    time; a line it refuses is left out."""
    for start in range(0, len(lines), batch_size):
        chunk = lines[start : start + batch_size]
        requests = [request_from_object(line) for line in chunk]
        laid_out = engine.lay_out_many(requests, "joint")
        for line, request, layout, response in zip(chunk, requests, laid_out, engine.decide_laid_out(laid_out)):
            if isinstance(response, DecisionResponse):
                yield line, request, layout, response


def decided_groups(engine, lines: Sequence[dict], batch_size: int = 8) -> list[tuple]:
    """Per line the model decides jointly: (questions, values, confidences, fixed_by, which answers a
    comparison chose, labels)."""
    out = []
    for line, request, layout, response in decided_jointly(engine, lines, batch_size):
        answers = response.answers
        compared = [calibration_kind(layout, slot) == "compared" for slot in range(len(answers))]
        out.append((
            request.questions, [a.value for a in answers], [a.confidence for a in answers],
            [a.fixed_by for a in answers], compared, line.get("labels", {}),
        ))
    return out


def agreement_examples(decided: Sequence[tuple], embedder, variants: int = 0, seed: int = 0) -> list[AgreementExample]:
    """One example per boolean or enum answer the model chose that has a surer answer beside it and
    a labelled choice (a comparison's answers only stand beside others); with `variants`, each also
    comes that many more times with every question read with some of its words left out."""
    rng = random.Random(seed)
    out = []
    for questions, values, confidences, settled, compared, labels in decided:
        picked = decided_answers(questions, values, confidences, settled, embedder)
        items = [item for _, item in picked]
        copies = [items]
        if variants and items:
            texts = [questions[slot].text for slot, _ in picked]
            reworded = reworded_vectors(embedder, texts, variants, rng)
            copies += [[replace(item, question=reworded[i][v]) for i, item in enumerate(items)] for v in range(variants)]
        for index, (slot, item) in enumerate(picked):
            gold = gold_choice(question_choices(questions[slot]), labels, questions[slot].id)
            surer = surer_than(items, index)
            if compared[slot] or gold is None or not surer:
                continue
            for copy in copies:
                out.append(AgreementExample(copy[index], tuple(copy[j] for j in surer), gold))
    return out


def _scores(reader: AgreementReader, examples: Sequence[AgreementExample]) -> torch.Tensor:
    """(B, K) each example's choices' log-odds weighed again, padded choices at -inf."""
    choices, answers, present = batch([e.answer for e in examples], [e.surer for e in examples])
    k = choices.shape[1]
    odds = torch.full((len(examples), k), float("-inf"))
    for row, e in enumerate(examples):
        odds[row, : len(e.answer.choices)] = prior_odds(e.answer)
    return odds + reader(choices, answers, present)


def agreement_loss(reader: AgreementReader, examples: Sequence[AgreementExample]) -> torch.Tensor:
    """Mean cross-entropy of the examples' weighed odds against their gold choices."""
    return torch.nn.functional.cross_entropy(_scores(reader, examples), torch.tensor([e.gold for e in examples]))


def agreement_accuracy(reader: AgreementReader, examples: Sequence[AgreementExample]) -> dict:
    """The share of examples answered right as the model answered them, and weighed again."""
    if not examples:
        return {"accuracy": 0.0, "as_decided": 0.0}
    was_training = reader.training
    reader.eval()
    right = 0
    with torch.no_grad():
        for start in range(0, len(examples), 256):
            chunk = examples[start : start + 256]
            best = _scores(reader, chunk).argmax(dim=-1).tolist()
            right += sum(b == e.gold for b, e in zip(best, chunk))
    reader.train(was_training)
    decided = sum(e.answer.chosen == e.gold for e in examples)
    return {"accuracy": right / len(examples), "as_decided": decided / len(examples)}


def fit_reader(
    reader: AgreementReader,
    examples: Sequence[AgreementExample],
    epochs: int,
    seed: int,
    what: str,
    log: Callable[[str], None],
    held_out: Sequence[AgreementExample] | None = None,
) -> dict:
    """Fit an agreement reader on `examples` and freeze it; the fit's summary, with its accuracy on
    `held_out` examples where given."""
    reader.train()
    fitted = train_epochs(
        reader, examples, epochs, seed, what=what, loss_of=agreement_loss, accuracy=agreement_accuracy,
        batch=BATCH, learning_rate=LEARNING_RATE, log=log,
    )
    reader.eval()
    for p in reader.parameters():
        p.requires_grad_(False)
    if held_out is not None:
        fitted["held_out"] = {"answers": len(held_out), **agreement_accuracy(reader, held_out)}
        log(
            f"held out, {len(held_out)} weighed answers: {fitted['held_out']['as_decided']:.3f} as decided, "
            f"{fitted['held_out']['accuracy']:.3f} weighed again"
        )
    return fitted


def add_agreement_reader(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    question_variants: int = 0,
    reword: bool = False,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with an agreement reader fitted on the
    joint answers the checkpoint (without one) gives `groups` generated training groups; returns the
    fit's summary, with `held_out` accuracy where labelled lines are given."""
    from ..datasets.linked_groups import generate_groups
    from ..factory import build_engine
    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted
    from ..models import open_model
    from .calibration_fit import reworded_line

    started = time.monotonic()
    backend = open_model(folder)
    backend.agreement_reader = None  # the answers it weighs are the model's own
    engine = build_engine(model=backend)
    embedder = engine.context.embedder
    rng = random.Random(seed)
    lines = generate_groups("train", groups, seed=AGREEMENT_SEED + seed)
    if reword:
        lines = [reworded_line(line, rng) for line in lines]
    examples = agreement_examples(decided_groups(engine, lines), embedder, question_variants, seed)
    answers = len(examples) // (question_variants + 1)
    log(
        f"{len(examples)} examples: {answers} weighed answers of {groups} groups and their rewordings "
        f"({time.monotonic() - started:.0f} s)"
    )
    saved, meta = checkpoint_config(folder)
    model, meta = load_checkpoint(folder, cfg=replace(saved, weighs_agreement=True), fresh_agreement=True)
    torch.manual_seed(seed)
    reader = model.agreement_reader = AgreementReader()
    checked = agreement_examples(decided_groups(engine, held_out), embedder) if held_out else None
    fitted = fit_reader(reader, examples, epochs, seed, "agreement reader", log, checked)
    minutes = round((time.monotonic() - started) / 60, 2)
    fitted = {**fitted, "weighed_answers": answers, "groups": groups, "seed": seed, "minutes": minutes}
    if question_variants:
        fitted["question_variants"] = question_variants
    if reword:
        fitted["reworded"] = True
    save_refitted(model, meta, out, folder, "agreement_reader", fitted)
    return fitted
