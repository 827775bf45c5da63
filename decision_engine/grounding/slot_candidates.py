"""The candidates of one answer slot: integer or date slots get them, within the slot's bounds, several
ways to a value each; the slot then offers each value once (`merge_derivations`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kinds.date import date_bounds
from ..types import AnswerSchema
from .candidates import DERIVATIONS, Candidate, date_candidates, integer_candidates
from .mention import Mention


def is_grounded(schema: AnswerSchema) -> bool:
    """Whether a slot of this schema chooses among mentions: integer and date slots do."""
    return schema.type == "integer" or (schema.type == "string" and schema.format == "date")


def slot_candidates(schema: AnswerSchema, mentions: Sequence[Mention]) -> list[Candidate]:
    """The values the slot can reach from the mentions, in the candidate order of `candidates`, each
    by up to `DERIVATIONS` ways (`merge_derivations` makes them one choice per value)."""
    if schema.type == "integer":
        return integer_candidates(mentions, schema.minimum, schema.maximum, derivations=DERIVATIONS)
    if schema.type == "string" and schema.format == "date":
        return date_candidates(mentions, *date_bounds(schema), derivations=DERIVATIONS)
    return []


def candidate_text(candidate: Candidate) -> str:
    """The value as an answer writes it: an int, or an ISO date."""
    value = candidate.value
    return value if isinstance(value, int) else value.isoformat()


def merge_derivations(
    candidates: Sequence[Candidate], logits: torch.Tensor
) -> tuple[list[Candidate], torch.Tensor]:
    """One choice per value: each value's logit is the log of its derivations' summed probability,
    and its likeliest derivation stands for it (its operands are the answer's evidence). `logits`:
    (K + 1,) one per candidate, then "write", which stays last."""
    first: dict[tuple[type, object], int] = {}
    members: list[list[int]] = []
    for k, candidate in enumerate(candidates):
        key = (type(candidate.value), candidate.value)
        if key not in first:
            first[key] = len(members)
            members.append([])
        members[first[key]].append(k)
    if len(members) == len(candidates):
        return list(candidates), logits
    merged = [torch.logsumexp(logits[ks], dim=0) for ks in members]
    best = [ks[int(logits[ks].argmax())] for ks in members]
    return [candidates[k] for k in best], torch.stack([*merged, logits[-1]])
