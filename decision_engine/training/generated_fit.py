"""Fitting a small part of a model (the value chooser, the comparison chooser) on generated training
groups beside a frozen reader: the examples are made once from frozen vectors, the part is trained on
them, frozen, and measured on held-out lines where given."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

import torch

from ..retrieval.embedder import SpanEmbedder


def model_embedder(model) -> SpanEmbedder:
    """A sentence encoder that keeps no document, reading value mentions as `model`'s choosers do."""
    return SpanEmbedder(cache_size=0, mentions_in_spans=model.cfg.mentions_in_spans)


def model_pointer(model):
    """The pointed context of a model with a span pointer (its evidence per question), else None."""
    if model.span_pointer is None:
        return None
    from ..backends.native import model_vocabulary
    from ..retrieval.pointed import PointedContext

    return PointedContext(model_vocabulary(model), model.span_pointer.eval(), model_embedder(model))


def fit_on_generated(
    part: torch.nn.Module,
    *,
    what: str,
    groups: int,
    epochs: int,
    seed: int,
    first_seed: int,
    examples_of: Callable,
    train: Callable,
    accuracy: Callable,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    pointer=None,
    training_examples_of: Callable | None = None,
    extra_lines: Sequence[dict] = (),
) -> dict:
    """Train `part` on the examples `examples_of(lines, embedder, pointer)` makes of `groups` generated
    training groups (seed `first_seed + seed`) with `train(part, examples, epochs, seed, log=log)`,
    then freeze it; returns what the fit measured, with `accuracy(part, examples)` on `held_out`
    labelled lines where given. `what` names the examples in the log; `training_examples_of`, where
    given, makes the training examples instead (held-out ones always come from `examples_of`);
    `extra_lines`, labelled request lines of another source, train beside the generated groups."""
    from ..datasets.linked_groups import generate_groups

    started = time.monotonic()
    torch.manual_seed(seed)
    lines = generate_groups("train", groups, seed=first_seed + seed) + list(extra_lines)
    embedder = pointer.embedder if pointer is not None else SpanEmbedder(cache_size=0)
    examples = (training_examples_of or examples_of)(lines, embedder, pointer)
    extra = f" and {len(extra_lines)} other lines" if extra_lines else ""
    log(f"{len(examples)} {what} from {groups} groups{extra} ({time.monotonic() - started:.0f} s)")
    part.train()
    fitted = train(part, examples, epochs, seed, log=log)
    part.eval()
    for p in part.parameters():
        p.requires_grad_(False)
    if held_out:
        checked = examples_of(held_out, embedder, pointer)
        fitted["held_out"] = {"questions": len(checked), **accuracy(part, checked)}
        log(f"accuracy on {len(checked)} held-out {what}: {fitted['held_out']['accuracy']:.3f}")
    return {**fitted, "groups": groups, "seed": seed, "minutes": round((time.monotonic() - started) / 60, 2)}


def train_epochs(
    part: torch.nn.Module,
    examples: Sequence,
    epochs: int,
    seed: int,
    *,
    what: str,
    loss_of: Callable,
    accuracy: Callable,
    batch: int,
    learning_rate: float,
    weight_decay: float = 1e-2,
    log: Callable[[str], None] = print,
) -> dict:
    """AdamW over `examples` in shuffled batches of `batch` for `epochs` passes, where
    `loss_of(part, batch_examples)` gives a batch's mean loss; returns `accuracy(part, examples)` on
    them before and after. `what` names the part in the log."""
    before = accuracy(part, examples)
    rng = random.Random(seed)
    optimiser = torch.optim.AdamW(part.parameters(), lr=learning_rate, weight_decay=weight_decay)
    order = list(range(len(examples)))
    for epoch in range(epochs):
        rng.shuffle(order)
        total = 0.0
        for first in range(0, len(order), batch):
            chunk = [examples[i] for i in order[first : first + batch]]
            loss = loss_of(part, chunk)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            total += loss.item() * len(chunk)
        if (epoch + 1) % 5 == 0 or epoch + 1 == epochs:
            log(f"{what} epoch {epoch + 1}/{epochs}: loss {total / max(len(order), 1):.4f}")
    after = accuracy(part, examples)
    log(f"{what} accuracy on its training questions: {before['accuracy']:.3f} -> {after['accuracy']:.3f}")
    return {"examples": len(examples), "epochs": epochs, "before": before, "after": after}
