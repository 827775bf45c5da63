"""Whether a context covers gold evidence: at least half of a gold range's characters are shown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character ranges with overlapping ones joined, in document order, so no character counts twice."""
    out: list[list[int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(start, end) for start, end in out]


def covers(shown: Sequence[tuple[int, int]], gold: tuple[int, int]) -> bool:
    """Whether the `shown` character ranges hold at least half of the non-empty `gold` range."""
    start, end = gold
    inside = sum(max(0, min(end, b) - max(start, a)) for a, b in merged(shown))
    return end > start and 2 * inside >= end - start


def evidence_recall(gold: Sequence[tuple[int, int]], shown: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """(covered, total) over the gold ranges."""
    shown = merged(shown)
    return sum(covers(shown, g) for g in gold), len(gold)
