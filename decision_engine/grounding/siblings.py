"""What the other questions of a group answer, as features of one grounded slot's candidates.

Asked together, linked questions rarely share an answer ("the deadline" is not "the day of
awareness" it counts from) and often build on each other's values. Each grounded slot first scores
its candidates alone; `answer_mass` then gathers, per value, the most probability any one of the
slots surer of their answer gives it (`group_sibling_features`), and `sibling_features` reads that
mass at each candidate's value, its first operand and (on average) its later operands. The value chooser weighs the three per operation
(`reader.value_chooser.ValueChooser.sibling`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

import torch

from ..reader.value_chooser import SIBLING_FEATURES
from .candidates import Candidate
from .mention import Mention

AnswerMass = dict[tuple[str, object], float]  # (kind of value, value) -> the most probability one slot gives it


def value_key(value: int | dt.date) -> tuple[str, object]:
    """A value as answers compare it: 30 (a number or a count of days) is not the date it might name."""
    return ("date" if isinstance(value, dt.date) else "integer", value)


def answer_mass(slots: Sequence[tuple[Sequence[int | dt.date], torch.Tensor]]) -> AnswerMass:
    """Per value, the most probability any one slot gives it (summed over the ways that slot reaches
    it); slots are (candidate values, their probabilities) of the other grounded questions."""
    mass: AnswerMass = {}
    for values, probabilities in slots:
        for key, p in _per_value(values, probabilities).items():
            mass[key] = max(mass.get(key, 0.0), p)
    return mass


def slots_answer_mass(slots: Sequence[tuple[Sequence[Candidate], Sequence[Mention], torch.Tensor]]) -> AnswerMass:
    """`answer_mass` of grounded slots given as (candidates, mentions, probabilities over the candidates)."""
    return answer_mass(_answers(slots))


def _answers(slots) -> list[tuple[list[int | dt.date], torch.Tensor]]:
    """(candidate values, probabilities) of each (candidates, mentions, probabilities) slot."""
    return [([c.value for c in candidates], p) for candidates, _, p in slots]


def _per_value(values: Sequence[int | dt.date], probabilities: torch.Tensor) -> AnswerMass:
    """One slot's probability per value, its derivations' summed."""
    summed: AnswerMass = {}
    for value, p in zip(values, probabilities.tolist()):
        key = value_key(value)
        summed[key] = summed.get(key, 0.0) + p
    return summed


def sibling_features(candidates: Sequence[Candidate], mentions: Sequence[Mention], mass: Mapping) -> torch.Tensor:
    """(K, SIBLING_FEATURES) per candidate: the mass on its value, on its first operand's value, and
    the mean mass on its later operands' values (0 where it has none)."""
    rows = []
    for c in candidates:
        values = [mentions[j].value for j in c.operands]
        first = mass.get(value_key(values[0]), 0.0) if values else 0.0
        later = sum(mass.get(value_key(v), 0.0) for v in values[1:]) / max(len(values) - 1, 1)
        rows.append([mass.get(value_key(c.value), 0.0), first, later])
    return torch.tensor(rows, dtype=torch.float32).reshape(len(candidates), SIBLING_FEATURES)


def group_sibling_features(
    slots: Sequence[tuple[Sequence[Candidate], Sequence[Mention], torch.Tensor]],
) -> list[torch.Tensor]:
    """Per grounded slot of one group, given (candidates, mentions, its own probabilities over the
    candidates), the `sibling_features` of its candidates from the answers of the slots surer of
    theirs (a higher top probability; the earlier slot on a tie), as threshold decoding commits the
    surest first: the surest slot weighs nothing, and two slots never push each other off one value."""
    answers = _answers(slots)
    sureness = [(max(_per_value(values, p).values(), default=0.0), -i) for i, (values, p) in enumerate(answers)]
    return [
        sibling_features(candidates, mentions, answer_mass([a for a, s in zip(answers, sureness) if s > sureness[i]]))
        for i, (candidates, mentions, _) in enumerate(slots)
    ]
