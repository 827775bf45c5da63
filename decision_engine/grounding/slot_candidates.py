"""The candidates of one answer slot: integer or date slots get them, within the slot's bounds, several
ways to a value each; the slot then offers each value once (`merge_derivations`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kinds.date import date_bounds
from ..types import AnswerSchema
from .candidates import COUNT, DERIVATIONS, Candidate, date_candidates, integer_candidates
from .mention import Mention


def is_grounded(schema: AnswerSchema) -> bool:
    """Whether a slot of this schema chooses among mentions: integer and date slots do."""
    return schema.type == "integer" or (schema.type == "string" and schema.format == "date")


def slot_candidates(schema: AnswerSchema, mentions: Sequence[Mention], counts: bool = True) -> list[Candidate]:
    """The values the slot can reach from the mentions, in the candidate order of `candidates`, each
    by up to `DERIVATIONS` ways (`merge_derivations` makes them one choice per value); counts of
    listed percentages only with `counts` (a chooser fitted before them has no forms for them)."""
    if schema.type == "integer":
        return integer_candidates(mentions, schema.minimum, schema.maximum, derivations=DERIVATIONS, counts=counts)
    if schema.type == "string" and schema.format == "date":
        return date_candidates(mentions, *date_bounds(schema), derivations=DERIVATIONS)
    return []


def offers_counts(chooser) -> bool:
    """Whether a value chooser (or ensemble) has forms for counts, so its slots offer them."""
    return getattr(chooser, "operations", COUNT) > COUNT


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
    groups: dict = {}
    index = [groups.setdefault(c.value, len(groups)) for c in candidates]  # each candidate's value, in first-seen order
    if len(groups) == len(candidates):
        return list(candidates), logits
    body, at = logits[:-1], torch.tensor(index)
    top = torch.full((len(groups),), float("-inf"), dtype=body.dtype).scatter_reduce(0, at, body, "amax")
    shift = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # a value no derivation may take stays -inf
    merged = torch.zeros_like(top).index_add_(0, at, (body - shift[at]).exp()).log() + shift
    scores, best = body.tolist(), [-1] * len(groups)
    for k, g in enumerate(index):
        if best[g] < 0 or scores[k] > scores[best[g]]:
            best[g] = k
    return [candidates[k] for k in best], torch.cat([merged, logits[-1:]])
