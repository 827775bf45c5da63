"""Figures `eval` reports beside accuracy: calibration, where evidence points, what grounding can reach."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence

CALIBRATION_BINS = 10
BOOTSTRAP_RESAMPLES = 1000


def group_bootstrap_interval(
    per_group: Sequence[tuple[int, int]], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """A `level` percentile interval of sum(right) / sum(asked) over `per_group` (right, asked) pairs,
    resampling whole groups, since the answers of one group (one document, linked questions) are not
    independent draws. The same inputs always give the same interval."""
    groups = [(right, asked) for right, asked in per_group if asked]
    return _bootstrap(groups, lambda drawn: sum(r for r, _ in drawn) / sum(a for _, a in drawn), level, resamples, seed)


def ece_bootstrap_interval(
    chosen_per_group: Sequence[Sequence[tuple[float, bool]]],
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """A `level` percentile interval of `expected_calibration_error` over each group's (confidence,
    right) answers, resampling whole groups as `group_bootstrap_interval` does: how far the `ece` of a
    set this size could move on another draw."""

    def ece(drawn: Sequence[Sequence[tuple[float, bool]]]) -> float:
        answers = [pair for group in drawn for pair in group]
        return expected_calibration_error([c for c, _ in answers], [ok for _, ok in answers])

    return _bootstrap([g for g in chosen_per_group if g], ece, level, resamples, seed)


def _bootstrap(groups: Sequence, statistic: Callable[[Sequence], float], level: float, resamples: int, seed: int) -> tuple[float, float]:
    """The `level` percentile interval of `statistic` over `resamples` draws of `groups` with replacement."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if not groups:
        return (0.0, 0.0)
    rng = random.Random(seed)
    values = sorted(statistic(rng.choices(groups, k=len(groups))) for _ in range(resamples))
    tail = (1.0 - level) / 2
    return (values[int(tail * (resamples - 1))], values[round((1.0 - tail) * (resamples - 1))])


def expected_calibration_error(confidences: Sequence[float], right: Sequence[bool], bins: int = CALIBRATION_BINS) -> float:
    """Mean |accuracy - confidence| over equal-width confidence bins, weighted by each bin's share of answers."""
    if len(confidences) != len(right):
        raise ValueError("need one correctness flag per confidence")
    if not confidences:
        return 0.0
    totals = [[0, 0.0, 0] for _ in range(bins)]  # answers, summed confidence, right answers
    for confidence, ok in zip(confidences, right):
        b = min(int(confidence * bins), bins - 1)
        totals[b][0] += 1
        totals[b][1] += confidence
        totals[b][2] += bool(ok)
    return sum(abs(c - r) for n, c, r in totals if n) / len(confidences)


def overlaps(span: tuple[int, int], golds: Sequence[Sequence[int]]) -> bool:
    """Whether a character range shares at least one character with any gold range."""
    start, end = span
    return any(min(end, g[1]) > max(start, g[0]) for g in golds)


def grounding_reachable(document: str, schema, gold) -> bool | None:
    """Whether the document's mentions give a candidate equal to `gold` for an integer or date slot (None: other kinds)."""
    from .grounding.candidates import covers, date_candidates, integer_candidates
    from .grounding.mentions import find_mentions

    if schema.type == "integer":
        if isinstance(gold, bool) or not isinstance(gold, int):
            return False
        return covers(integer_candidates(find_mentions(document), schema.minimum, schema.maximum), gold)
    if schema.type == "string" and schema.format == "date":
        try:
            day = dt.date.fromisoformat(gold)
        except (TypeError, ValueError):
            return False
        return covers(date_candidates(find_mentions(document), None, None), day)
    return None
