"""Stored times, which are all UTC, as timezone-aware datetimes."""

from __future__ import annotations

import datetime as dt
from typing import overload


@overload
def as_utc(moment: dt.datetime) -> dt.datetime: ...


@overload
def as_utc(moment: None) -> None: ...


def as_utc(moment: dt.datetime | None) -> dt.datetime | None:
    """`moment` in UTC; a naive time (SQLite returns them) is taken as UTC, as every stored time is."""
    if moment is None:
        return None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)
