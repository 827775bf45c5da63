"""Fitting how the value chooser and the comparison chooser weigh what a group's other questions
answer (`grounding.siblings`).

Only the sibling weights learn (three features per operation and chooser, and per chooser of
each side of a comparison); the rest stays as fitted. Each generated training group is grounded as a
joint request is: every integer and date question scored alone by the frozen value chooser, then each
one's candidates, and every compared boolean's, read against those answers, so the features in
training are the ones the engine computes when it decides.
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
from ..grounding.siblings import group_sibling_features, sibling_features, slots_answer_mass
from ..grounding.slot_candidates import is_grounded, offers_counts, slot_candidates
from ..reader.comparison_chooser import comparison_candidates, comparison_loss
from ..reader.value_chooser import SIBLING_FEATURES, choice_loss
from ..types import AnswerSchema
from .generated_fit import model_pointer
from .comparison_choice import ComparisonExample, comparison_examples
from .comparison_choice import collate as collate_compared
from .value_choice import ChoiceExample, choice_examples, collate

SIBLING_SEED = 9_000  # the groups it learns from: apart from those the chooser itself was fitted on
BATCH = 64
LEARNING_RATE = 0.05


@dataclass
class SiblingExample:
    """One question of a group: its chooser's example (a `ChoiceExample`, or a `ComparisonExample` for
    a compared boolean), and its candidates' sibling features."""

    example: ChoiceExample | ComparisonExample
    siblings: torch.Tensor  # (K, SIBLING_FEATURES)


def _grounded_asked(line: dict) -> list[AnswerSchema]:
    """The schemas of a line's labelled integer and date questions, in question order."""
    labels = line.get("labels") or {}
    schemas = [(q["id"], msgspec.convert(q["schema"], AnswerSchema)) for q in line["questions"]]
    return [schema for qid, schema in schemas if is_grounded(schema) and qid in labels]


def sibling_examples(lines: Sequence[dict], chooser: nn.Module, embedder, pointer=None) -> list[SiblingExample]:
    """Per labelled integer or date question of groups with at least two, its example and what the
    group's other grounded questions answer, scored alone by `chooser` (eval mode, no gradient)."""
    out = []
    for line in lines:
        asked = _grounded_asked(line)
        if len(asked) < 2:
            continue
        examples = choice_examples([line], embedder, pointer, counts=offers_counts(chooser))
        slots = _alone(examples, asked, find_mentions(line["document"]["text"]), chooser)
        out.extend(SiblingExample(e, f) for e, f in zip(examples, group_sibling_features(slots)))
    return out


def _alone(lines_examples: Sequence[ChoiceExample], schemas, mentions, chooser: nn.Module) -> list:
    """(candidates, mentions, probabilities) of each grounded question, scored alone by `chooser`."""
    slots = []
    for example, schema in zip(lines_examples, schemas):
        *inputs, _ = collate([example])
        with torch.no_grad():
            alone = chooser(*inputs)[0].softmax(-1)[:-1]
        slots.append((slot_candidates(schema, mentions, offers_counts(chooser)), mentions, alone))
    return slots


def compared_sibling_examples(lines: Sequence[dict], chooser: nn.Module, embedder, pointer=None) -> list[SiblingExample]:
    """Per labelled boolean question of groups that also ask a grounded question, its comparison
    example and what the group's grounded questions answer alone."""
    out = []
    for line in lines:
        asked = _grounded_asked(line)
        if not asked:
            continue
        compared = comparison_examples([line], embedder, pointer)
        if not compared:
            continue
        mentions = find_mentions(line["document"]["text"])
        slots = _alone(choice_examples([line], embedder, pointer, counts=offers_counts(chooser)), asked, mentions, chooser)
        mass = slots_answer_mass(slots)
        features = sibling_features(comparison_candidates(mentions), mentions, mass)
        out.extend(SiblingExample(e, features) for e in compared)
    return out


def _padded(examples, k: int) -> torch.Tensor:
    siblings = torch.zeros((len(examples), k, SIBLING_FEATURES))
    for i, e in enumerate(examples):
        siblings[i, : e.siblings.shape[0]] = e.siblings
    return siblings


def _chosen_batch(chooser: nn.Module, examples: Sequence[SiblingExample], weigh: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The value chooser's (B, K + 1) logits on a batch, weighing the siblings or not, and the right columns."""
    *inputs, target = collate([e.example for e in examples])
    return chooser(*inputs, siblings=_padded(examples, inputs[2].shape[1]) if weigh else None), target


def _chooser_loss(chooser: nn.Module, examples: Sequence[SiblingExample]) -> torch.Tensor:
    return choice_loss(*_chosen_batch(chooser, examples, True))


def _comparer_loss(comparer: nn.Module, examples: Sequence[SiblingExample]) -> torch.Tensor:
    inputs, answers = collate_compared([e.example for e in examples])
    habit = torch.sigmoid(comparer.prior(inputs[0])).squeeze(-1)
    return comparison_loss(comparer(*inputs, siblings=_padded(examples, inputs[2].shape[1])), answers, habit)


def sibling_accuracy(chooser: nn.Module, examples: Sequence[SiblingExample], weigh: bool = True) -> float:
    """Share of examples whose best column is right, weighing the siblings (or, with `weigh` False, alone)."""
    right = 0
    with torch.no_grad():
        for first in range(0, len(examples), BATCH):
            logits, target = _chosen_batch(chooser, examples[first : first + BATCH], weigh)
            right += int(target[torch.arange(len(target)), logits.argmax(dim=-1)].sum())
    return right / max(len(examples), 1)


def compared_sibling_accuracy(comparer: nn.Module, examples: Sequence[SiblingExample], weigh: bool = True) -> float:
    """Share of boolean examples whose comparison's likelier answer is right, weighing the siblings or not."""
    right = 0
    with torch.no_grad():
        for first in range(0, len(examples), BATCH):
            batch = examples[first : first + BATCH]
            inputs, answers = collate_compared([e.example for e in batch])
            siblings = _padded(batch, inputs[2].shape[1]) if weigh else None
            true, _ = comparer.probabilities(*inputs, siblings=siblings)
            right += int(((true > 0.5) == answers).sum())
    return right / max(len(examples), 1)


def train_sibling_weights(
    part: nn.Module, examples: Sequence, epochs: int, seed: int = 0, log: Callable[[str], None] = print,
    loss_of: Callable = _chooser_loss, accuracy: Callable = sibling_accuracy,
) -> dict:
    """AdamW on a part's sibling weights only (a value chooser's, or with `loss_of=_comparer_loss` and
    `accuracy=compared_sibling_accuracy` a comparison chooser's), the rest frozen and in eval mode."""
    part.eval()
    weights = [p for name, p in part.named_parameters() if name.endswith("sibling")]
    for p in part.parameters():
        p.requires_grad_(False)
    for p in weights:
        p.requires_grad_(True)
    optimiser = torch.optim.AdamW(weights, lr=LEARNING_RATE, weight_decay=0.0)
    rng = random.Random(seed)
    before = accuracy(part, examples)
    for epoch in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total = 0.0
        for first in range(0, len(order), BATCH):
            batch = [examples[i] for i in order[first : first + BATCH]]
            loss = loss_of(part, batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(batch)
        log(f"siblings epoch {epoch + 1}/{epochs}: loss {total / max(len(examples), 1):.4f}")
    for p in weights:
        p.requires_grad_(False)
    return {"examples": len(examples), "epochs": epochs, "before": before, "after": accuracy(part, examples)}


def add_sibling_weights(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    comparer: bool = False,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, whose value chooser (and, with
    `comparer`, its comparison chooser) weighs what the other questions of a joint request answer;
    returns the fit's summary (with `held_out` accuracy alone and weighing the siblings, where lines
    are given). A comparison chooser left out keeps the sibling weights it has."""
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
        fitted["held_out"] = _held_out(
            "grounded questions", sibling_examples(held_out, chooser, pointer.embedder, pointer), chooser,
            sibling_accuracy, log,
        )
    if comparer:
        fitted["comparison_chooser"] = _fit_comparer_siblings(model, chooser, lines, epochs, seed, log, held_out, pointer)
    fitted = {**fitted, "groups": groups, "seed": seed, "minutes": round((time.monotonic() - started) / 60, 2)}
    save_refitted(model, meta, out, folder, "value_chooser_siblings", fitted)
    return fitted


def _fit_comparer_siblings(model, chooser, lines, epochs, seed, log, held_out, pointer) -> dict:
    """Fit the sibling weights of both sides of the model's comparison chooser (from none)."""
    from ..model.loader import ModelLoadError

    comparer = model.comparison_chooser
    if comparer is None:
        raise ModelLoadError("the checkpoint has no comparison chooser to weigh siblings with; fit one first (fit-comparer)")
    for name, p in comparer.named_parameters():
        if name.endswith("sibling"):
            p.data.zero_()
    compared = compared_sibling_examples(lines, chooser, pointer.embedder, pointer)
    log(f"{len(compared)} boolean questions beside grounded ones")
    fitted = train_sibling_weights(comparer, compared, epochs, seed, log, loss_of=_comparer_loss, accuracy=compared_sibling_accuracy)
    if held_out:
        fitted["held_out"] = _held_out(
            "boolean questions", compared_sibling_examples(held_out, chooser, pointer.embedder, pointer),
            comparer, compared_sibling_accuracy, log,
        )
    return fitted


def _held_out(what: str, checked: Sequence, part: nn.Module, accuracy: Callable, log: Callable[[str], None]) -> dict:
    """A part's accuracy on held-out examples alone and weighing the siblings, logged."""
    alone, weighed = accuracy(part, checked, weigh=False), accuracy(part, checked)
    log(f"held-out {what} with siblings ({len(checked)}): {alone:.3f} alone -> {weighed:.3f} weighing them")
    return {"questions": len(checked), "accuracy_alone": alone, "accuracy": weighed}
