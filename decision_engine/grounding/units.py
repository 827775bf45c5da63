"""Whether a candidate's value is in the unit its question asks for, as features of an integer slot's candidates.

"For how many months does the restriction apply?" asks for months: a copy of "12 months" answers in
that unit, a copy of "second anniversary" (2 years) in another. The question's unit is the first
unit word it names (day, week, month, year, hour, percent); a candidate's is its first operand's
(a duration's unit, "percent" for a percentage), or days for the days between two dates. A
candidate without a unit (a plain number, zero, a percentage of an amount) neither agrees nor
conflicts. The value chooser weighs the two features per operation (`ValueChooser.unit`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from ..reader.value_chooser import UNIT_FEATURES
from ..types import AnswerSchema
from .candidates import Candidate
from .mention import Mention

_ASKED = re.compile(r"\b(day|week|month|year|hour|percent|percentage)s?\b|%", re.I)
_SINGULAR = {"percentage": "percent", "%": "percent"}


def asked_unit(question: str) -> str | None:
    """The unit a question asks its answer in ("days", "percent"), or None where it names none."""
    found = _ASKED.search(question)
    if found is None:
        return None
    word = found.group(1) or found.group(0)
    word = _SINGULAR.get(word.lower(), word.lower())
    return word if word == "percent" else word + "s"


def candidate_unit(candidate: Candidate, mentions: Sequence[Mention]) -> str | None:
    """The unit a candidate's value is counted in, or None for a plain number."""
    if candidate.operation == "days_between":
        return "days"
    if candidate.operation in ("zero", "percent_of") or not candidate.operands:
        return None
    return mentions[candidate.operands[0]].unit


def unit_features(question: str, schema: AnswerSchema, candidates: Sequence[Candidate], mentions: Sequence[Mention]) -> torch.Tensor:
    """(K, UNIT_FEATURES) per candidate: its unit is the one the question asks for, it is another.
    All zero for a date slot, and for a question that names no unit."""
    out = torch.zeros((len(candidates), UNIT_FEATURES))
    asked = asked_unit(question) if schema.type == "integer" else None
    if asked is None:
        return out
    for k, candidate in enumerate(candidates):
        unit = candidate_unit(candidate, mentions)
        if unit is not None:
            out[k, 0 if unit == asked else 1] = 1.0
    return out
