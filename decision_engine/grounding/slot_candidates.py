"""The candidates of one answer slot: integer or date slots get them, within the slot's bounds."""

from __future__ import annotations

from collections.abc import Sequence

from ..kinds.date import date_bounds
from ..types import AnswerSchema
from .candidates import Candidate, date_candidates, integer_candidates
from .mention import Mention


def is_grounded(schema: AnswerSchema) -> bool:
    """Whether a slot of this schema chooses among mentions: integer and date slots do."""
    return schema.type == "integer" or (schema.type == "string" and schema.format == "date")


def slot_candidates(schema: AnswerSchema, mentions: Sequence[Mention]) -> list[Candidate]:
    """The values the slot can reach from the mentions, in the candidate order of `candidates`."""
    if schema.type == "integer":
        return integer_candidates(mentions, schema.minimum, schema.maximum)
    if schema.type == "string" and schema.format == "date":
        return date_candidates(mentions, *date_bounds(schema))
    return []


def candidate_text(candidate: Candidate) -> str:
    """The value as an answer writes it: an int, or an ISO date."""
    value = candidate.value
    return value if isinstance(value, int) else value.isoformat()
