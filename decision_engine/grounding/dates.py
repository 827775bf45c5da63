"""Reading calendar dates: ISO, numeric day/month or month/day, and month names.

A numeric date such as 08/03/2024 is read in the order the caller gives, else the order the
document states ("DD/MM/YYYY", "month/day/year") or implies (another numeric date whose first or
second field exceeds 12). A date valid in only one order is read that way whatever the order. When
nothing settles it, both readings are returned, each flagged `ambiguous`, day-first reading first.
"""

from __future__ import annotations

import datetime as dt
import re

from .mention import Mention

MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip

_MONTH = (
    r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})(?!\w)"
_BEFORE = r"(?<![\w.,/\-])"  # not the tail of a longer number or word
_AFTER = r"(?!\d|[\-/.]\d)"  # not the head of one
# "8 March 2024", "8th of March, 2024", "the 8th day of March, 2024", "8 Mar. 2024"
_DAY_MONTH_YEAR = re.compile(rf"{_BEFORE}{_DAY}(?:\s+day)?(?:\s+of)?,?\s+{_MONTH},?\s+{_YEAR}", re.I)
# "March 8, 2024", "Mar. 8th 2024"
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}", re.I)
# "2024-03-08", "2024/3/8"
_ISO = re.compile(rf"{_BEFORE}(?P<year>\d{{4}})(?P<sep>[\-/.])(?P<month>\d{{1,2}})(?P=sep)(?P<day>\d{{1,2}}){_AFTER}")
# "08/03/2024", "8.3.2024", "03-08-2024"
_NUMERIC = re.compile(rf"{_BEFORE}(?P<a>\d{{1,2}})(?P<sep>[\-/.])(?P<b>\d{{1,2}})(?P=sep)(?P<year>\d{{4}}){_AFTER}")
# "08/03/24": a date shape read as nothing, so that its parts do not turn into numbers.
_SHORT_YEAR = re.compile(rf"{_BEFORE}\d{{1,2}}/\d{{1,2}}/\d{{2}}{_AFTER}")

_STATED_DAY_FIRST = re.compile(r"\b(?:d{1,2}([/.\-])m{1,2}\1y{2,4}|day([/.\-])month\2year)\b", re.I)
_STATED_MONTH_FIRST = re.compile(r"\b(?:m{1,2}([/.\-])d{1,2}\1y{2,4}|month([/.\-])day\2year)\b", re.I)


def infer_day_first(text: str) -> bool | None:
    """True for day/month, False for month/day, None when the document does not settle it."""
    stated = {True} if _STATED_DAY_FIRST.search(text) else set()
    if _STATED_MONTH_FIRST.search(text):
        stated.add(False)
    if len(stated) == 1:
        return stated.pop()
    implied = set()
    for match in _NUMERIC.finditer(text):
        a, b, year = int(match["a"]), int(match["b"]), int(match["year"])
        if a > 12 >= b and _date(year, b, a) is not None:
            implied.add(True)
        elif b > 12 >= a and _date(year, a, b) is not None:
            implied.add(False)
    return implied.pop() if len(implied) == 1 else None


def read_dates(text: str, day_first: bool | None) -> tuple[list[Mention], list[tuple[int, int]]]:
    """The date mentions in document order, and the (start, end) of every date shape, valid or not."""
    shapes: list[tuple[int, int, list[tuple[dt.date, bool]]]] = []
    for match in _DAY_MONTH_YEAR.finditer(text):
        shapes.append((match.start(), match.end(), _named(match)))
    for match in _MONTH_DAY_YEAR.finditer(text):
        shapes.append((match.start(), match.end(), _named(match)))
    for match in _ISO.finditer(text):
        day = _date(int(match["year"]), int(match["month"]), int(match["day"]))
        shapes.append((match.start(), match.end(), [] if day is None else [(day, False)]))
    for match in _NUMERIC.finditer(text):
        readings = _numeric(int(match["a"]), int(match["b"]), int(match["year"]), day_first)
        shapes.append((match.start(), match.end(), readings))
    for match in _SHORT_YEAR.finditer(text):
        shapes.append((match.start(), match.end(), []))
    shapes.sort(key=lambda shape: (shape[0], -shape[1]))
    mentions: list[Mention] = []
    spans: list[tuple[int, int]] = []
    for start, end, readings in shapes:
        if spans and start < spans[-1][1]:
            continue  # overlaps an earlier, longer shape
        spans.append((start, end))
        for day, ambiguous in readings:
            mentions.append(Mention("date", start, end, day, text[start:end], ambiguous=ambiguous))
    return mentions, spans


def _named(match: re.Match[str]) -> list[tuple[dt.date, bool]]:
    day = _date(int(match["year"]), MONTHS[match["month"][:3].lower()], int(match["day"]))
    return [] if day is None else [(day, False)]


def _numeric(a: int, b: int, year: int, day_first: bool | None) -> list[tuple[dt.date, bool]]:
    """The readings of a/b/year: one when the order is known or only one is valid, else both."""
    day_month, month_day = _date(year, b, a), _date(year, a, b)
    if day_month is None or month_day is None or day_month == month_day:
        day = day_month or month_day
        return [] if day is None else [(day, False)]
    if day_first is None:
        return [(day_month, True), (month_day, True)]
    return [(day_month if day_first else month_day, False)]


def _date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
