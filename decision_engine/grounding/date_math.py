"""Calendar arithmetic for durations: months that clamp to the month's end, and business days."""

from __future__ import annotations

import calendar
import datetime as dt


def shift(day: dt.date, count: int, unit: str, business: bool = False) -> dt.date:
    """`day` moved by `count` (negative: back) of `unit`; OverflowError past the calendar's ends.

    Months and years keep the day of the month where it exists and clamp to the month's last day
    otherwise (Jan 31 + 1 month = Feb 28 or 29). Business days skip Saturdays and Sundays only.
    """
    if unit == "days":
        return add_business_days(day, count) if business else day + dt.timedelta(days=count)
    if unit == "weeks":
        return day + dt.timedelta(weeks=count)
    if unit == "months":
        return add_months(day, count)
    if unit == "years":
        return add_months(day, 12 * count)
    raise ValueError(f"not a duration unit: {unit!r}")


def add_months(day: dt.date, months: int) -> dt.date:
    """`day` moved by whole months, clamped to the last day of the month it lands in."""
    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
    if not dt.MINYEAR <= year <= dt.MAXYEAR:
        raise OverflowError("date value out of range")
    last = calendar.monthrange(year, month0 + 1)[1]
    return dt.date(year, month0 + 1, min(day.day, last))


def add_business_days(day: dt.date, count: int) -> dt.date:
    """The `count`-th weekday after `day` (before it when negative); `day` itself never counts."""
    if count == 0:
        return day
    step = 1 if count > 0 else -1
    weeks, rest = divmod(abs(count), 5)
    if rest == 0:  # land on the last weekday of the final week, even when starting on a weekend
        weeks, rest = weeks - 1, 5
    day += dt.timedelta(weeks=step * weeks)
    while rest:
        day += dt.timedelta(days=step)
        if day.weekday() < 5:
            rest -= 1
    return day
