"""The record of one value written in a document: a date, a number or a duration, with its offsets."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

DURATION_UNITS = ("days", "weeks", "months", "years")


@dataclass(frozen=True)
class Mention:
    """A value the document writes: `text == document[start:end]`.

    `value` is a `datetime.date` for dates and an int for numbers and durations (a duration's
    count). `unit` is "percent" for percentages and one of `DURATION_UNITS` for durations.
    `ambiguous` marks one of two readings of a numeric date whose day/month order is unknown.
    """

    kind: str  # "date", "number" or "duration"
    start: int  # character offset of the first character
    end: int  # character offset just past the last character
    value: int | dt.date
    text: str
    unit: str | None = None  # "percent", or a duration unit such as "days"
    currency: str | None = None  # ISO code of a money amount ("USD" for "$16,000")
    business: bool = False  # a duration in business (working) days
    ambiguous: bool = False  # a day/month reading the document does not settle
    line: int = 0  # the document line it starts on, counted from 0 (items of one list share a line)
