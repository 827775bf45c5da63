"""Fitting the value agreement reader (`decoding/value_agreement.py`) on generated training groups the
model decides itself, jointly, without one: each integer or date answer the model chose among its
candidates, with the boolean and enum answers of its group the model was surer of, is an example whose
gold is the labelled value, where it is among the values weighed."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch

from ..decoding.agreement import decided_answers
from ..decoding.value_agreement import grounded_answers, surer_answers
from ..reader.agreement_reader import DIM, AgreementReader
from .agreement_fit import AgreementExample, decided_jointly, fit_reader
from .value_choice import reworded_vectors

VALUE_AGREEMENT_SEED = 13_000  # generated groups for the value agreement reader: apart from every other fit's


def value_agreement_reader() -> AgreementReader:
    """An unfitted value agreement reader: a value is read as its context's two sentence vectors."""
    return AgreementReader(words=2 * DIM)


def value_examples(
    engine, lines: Sequence[dict], variants: int = 0, seed: int = 0, batch_size: int = 8
) -> list[AgreementExample]:
    """The model decides each line jointly; one example per integer or date answer it chose among its
    candidates that has a surer boolean or enum answer beside it and its labelled value among those
    weighed. With `variants`, each also comes that many more times with its questions reworded."""
    embedder = engine.context.embedder
    rng = random.Random(seed)
    out = []
    for line, request, layout, response in decided_jointly(engine, lines, batch_size):
        labels = line.get("labels", {})
        values = [a.value for a in response.answers]
        confidences = [a.confidence for a in response.answers]
        settled = [a.fixed_by for a in response.answers]
        constraints = layout.group.constraints
        answered = decided_answers(request.questions, values, confidences, settled, embedder)
        answers = [item for _, item in answered]
        grounded = grounded_answers(
            request.questions, constraints.spaces, constraints.patterns, settled, confidences,
            request.document.text, embedder,
        )
        for slot, picked, item in grounded:
            label = labels.get(request.questions[slot].id)
            gold = next((j for j, k in enumerate(picked) if str(constraints.spaces[slot].values[k]) == str(label)), None)
            surer = surer_answers(item, answers)
            if gold is None or not surer:
                continue
            out.append(AgreementExample(item, tuple(surer), gold))
            if variants:
                slots = [slot] + [s for s, a in answered if a.confidence > item.confidence]
                reworded = reworded_vectors(embedder, [request.questions[s].text for s in slots], variants, rng)
                for v in range(variants):
                    out.append(AgreementExample(
                        replace(item, question=reworded[0][v]),
                        tuple(replace(a, question=reworded[1 + j][v]) for j, a in enumerate(surer)),
                        gold,
                    ))
    return out


def add_value_agreement_reader(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    question_variants: int = 0,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a value agreement reader fitted on
    the joint answers the checkpoint (without one) gives `groups` generated training groups; returns the
    fit's summary, with `held_out` accuracy where labelled lines are given."""
    from ..datasets.linked_groups import generate_groups
    from ..factory import build_engine
    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted
    from ..models import open_model

    started = time.monotonic()
    backend = open_model(folder)
    backend.value_agreement_reader = None  # the answers it weighs are the model's own
    engine = build_engine(model=backend)
    lines = generate_groups("train", groups, seed=VALUE_AGREEMENT_SEED + seed)
    examples = value_examples(engine, lines, question_variants, seed)
    answers = len(examples) // (question_variants + 1)
    log(
        f"{len(examples)} examples: {answers} weighed integer and date answers of {groups} groups and their "
        f"rewordings ({time.monotonic() - started:.0f} s)"
    )
    saved, meta = checkpoint_config(folder)
    model, meta = load_checkpoint(folder, cfg=replace(saved, weighs_values=True), fresh_values=True)
    torch.manual_seed(seed)
    reader = model.value_agreement_reader = value_agreement_reader()
    checked = value_examples(engine, held_out) if held_out else None
    fitted = fit_reader(reader, examples, epochs, seed, "value agreement reader", log, checked)
    minutes = round((time.monotonic() - started) / 60, 2)
    fitted = {**fitted, "weighed_answers": answers, "groups": groups, "seed": seed, "minutes": minutes}
    if question_variants:
        fitted["question_variants"] = question_variants
    save_refitted(model, meta, out, folder, "value_agreement_reader", fitted)
    return fitted
