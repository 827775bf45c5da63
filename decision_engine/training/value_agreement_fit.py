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
from ..reader.agreement_reader import DIM, AgreementReader, AgreementReaders, agreement_reader
from .agreement_fit import AgreementExample, agreement_accuracy, decided_jointly, fit_reader
from .value_choice import reworded_vectors

VALUE_AGREEMENT_SEED = 13_000  # generated groups for the value agreement reader: apart from every other fit's


def value_agreement_reader(count: int = 1) -> AgreementReader | AgreementReaders:
    """An unfitted value agreement reader (`count` heads read as one): a value is read as its context's
    two sentence vectors."""
    return agreement_reader(count, words=2 * DIM)


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
    readers: int = 1,
    int8_parts: Sequence[str] = (),
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a value agreement reader fitted on
    the joint answers the checkpoint (without one) gives generated training groups; returns the fit's
    summary, with `held_out` accuracy where labelled lines are given. With `readers` heads, head k is
    fitted from seed `seed + k` on its own draw of `groups` groups, and the heads' scores are averaged.
    `int8_parts` names parts to store in int8 from now on (room under the size cap); the groups are
    decided with those parts already rounded so, as the model will answer."""
    from ..datasets.linked_groups import generate_groups
    from ..factory import build_engine
    from ..model.int8_storage import round_in_int8
    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted, store_in_int8
    from ..models import open_model

    if readers < 1:
        raise ValueError("--readers must be at least 1")
    started = time.monotonic()
    saved, meta = checkpoint_config(folder)
    model, meta = load_checkpoint(
        folder, cfg=replace(saved, weighs_values=True, value_agreement_readers=readers), fresh_values=True
    )
    store_in_int8(model, meta, folder, int8_parts)
    backend = open_model(folder)
    round_in_int8(backend.model, int8_parts)  # the parts stored so already load rounded
    backend.value_agreement_reader = None  # the answers it weighs are the model's own
    engine = build_engine(model=backend)
    heads = list(model.value_agreement_reader.members) if readers > 1 else [model.value_agreement_reader]
    checked = value_examples(engine, held_out) if held_out else None
    fits = []
    for k, head in enumerate(heads):
        lines = generate_groups("train", groups, seed=VALUE_AGREEMENT_SEED + seed + k)
        examples = value_examples(engine, lines, question_variants, seed + k)
        answers = len(examples) // (question_variants + 1)
        log(
            f"head {k + 1} of {readers}: {len(examples)} examples, {answers} weighed integer and date answers of "
            f"{groups} groups and their rewordings ({time.monotonic() - started:.0f} s)"
        )
        torch.manual_seed(seed + k)
        head.load_state_dict(value_agreement_reader().state_dict())  # drawn from the head's seed
        fitted = fit_reader(head, examples, epochs, seed + k, "value agreement reader", log, checked)
        fits.append({**fitted, "weighed_answers": answers, "seed": seed + k})
    fitted = fits[0] if readers == 1 else {"heads": fits, "readers": readers}
    if readers > 1 and checked is not None:
        fitted["held_out"] = {"answers": len(checked), **agreement_accuracy(model.value_agreement_reader, checked)}
        log(f"held out, the {readers} heads as one: {fitted['held_out']['accuracy']:.3f} weighed again")
    minutes = round((time.monotonic() - started) / 60, 2)
    fitted = {**fitted, "groups": groups, "seed": seed, "minutes": minutes}
    if question_variants:
        fitted["question_variants"] = question_variants
    save_refitted(model, meta, out, folder, "value_agreement_reader", fitted)
    return fitted
