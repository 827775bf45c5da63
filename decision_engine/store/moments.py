"""Stored times, which are all UTC, as timezone-aware datetimes."""

from __future__ import annotations

import datetime as dt
from typing import overload


@overload
def as_utc(moment: dt.datetime) -> dt.datetime: ...


@overload
def as_utc(moment: None) -> None: ...


def as_utc(moment: dt.datetime | None) -> dt.datetime | None:
    """`moment` in UTC; a naive time (SQLite returns them) is taken as UTC, as every stored time is.

    A time whose UTC falls outside years 1 to 9999 (0001-01-01T00:00+05:00, say) becomes the first or last
    representable moment, which as a filter bound means the same: every stored time lies between them.
    """
    if moment is None:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    try:
        return moment.astimezone(dt.UTC)
    except OverflowError:
        return (dt.datetime.min if moment.year == dt.MINYEAR else dt.datetime.max).replace(tzinfo=dt.UTC)
