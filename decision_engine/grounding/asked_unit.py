"""The duration unit an integer question counts in ("How many months ...?"), and the candidates that
cannot count in it: a question asking for months is never answered by copying "2 years" or a bare
"two", nor by the days between two dates; and whether it asks for a percentage, which no count of
listed items answers."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .candidates import Candidate
from .mention import DURATION_UNITS, Mention

_PERCENT_WORD = re.compile(r"\bper\s?cent(?:age)?s?\b", re.I)
_HOW_MANY = re.compile(r"\bhow\s+many\b", re.I)
_UNIT_WORD = re.compile(r"\b(?:(which|what)\s+(?:\w+\s+)?)?(minute|hour|day|week|month|year)s?\b", re.I)


def asked_unit(question: str) -> str | None:
    """The one duration unit ("days", "weeks", "months" or "years") the question counts in, or None
    where it names none or several (then any candidate may answer). A question that asks which one
    ("in which year", "what day of the month") asks for a point in time, not a count, and one naming
    hours or minutes, which the document's durations are not read in, leaves every candidate too."""
    found = list(_UNIT_WORD.finditer(question))
    if any(match[1] for match in found):  # a point in time is asked for, not a count
        return None
    units = {match[2].lower() + "s" for match in found}
    return units.pop() if len(units) == 1 and units <= set(DURATION_UNITS) else None


def asks_for_percentage(question: str) -> bool:
    """Whether the question asks for a percentage ("What percentage ...?", "which threshold, in
    percent, ..."): it names percent and does not ask how many ("How many owners hold 10 per cent?")."""
    return bool(_PERCENT_WORD.search(question)) and not _HOW_MANY.search(question)


def cannot_count_in(
    candidates: Sequence[Candidate], mentions: Sequence[Mention], unit: str | None, percentage: bool = False
) -> list[bool]:
    """Per candidate, whether it cannot be a count of `unit`: a copy of anything but a duration in that
    unit, days between two dates where the unit is not days, a count of listed percentages, or a step
    over a duration of another unit. Without a unit, only where the question asks for a `percentage`
    (`asks_for_percentage`), a count of listed percentages; otherwise nothing."""
    if unit is None:
        return [percentage and c.operation == "count_at_least" for c in candidates]
    assert unit in DURATION_UNITS, unit

    def other(j: int) -> bool:
        return mentions[j].kind == "duration" and mentions[j].unit != unit

    out = []
    for c in candidates:
        if c.operation == "copy":
            m = mentions[c.operands[0]]
            out.append(not (m.kind == "duration" and m.unit == unit))
        elif c.operation == "days_between":
            out.append(unit != "days")
        elif c.operation == "count_at_least":
            out.append(True)
        else:
            out.append(any(other(j) for j in c.operands))
    return out
