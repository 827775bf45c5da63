"""Finding the values a document writes: dates, numbers (amounts, percentages) and durations."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import replace

from .dates import infer_day_first, read_dates
from .mention import Mention
from .quantities import read_quantities

__all__ = ["Mention", "find_mentions"]


def find_mentions(text: str, day_first: bool | None = None) -> list[Mention]:
    """Every value mention of `text` in document order.

    `day_first` fixes how numeric dates such as 08/03/2024 read; None lets the document decide
    (see `dates`). The parts of a date are never number mentions of their own, nor are the parts
    of a date shape that is not a real date (31/02/2024).
    """
    if day_first is None:
        day_first = infer_day_first(text)
    dates, date_spans = read_dates(text, day_first)
    quantities = read_quantities(text, date_spans)
    found = sorted(dates + quantities, key=lambda mention: mention.start)
    breaks = [newline.start() for newline in re.finditer("\n", text)]
    return [replace(m, line=bisect_right(breaks, m.start - 1)) for m in found]
