"""Reading numbers, money amounts, percentages and durations, in digits or words.

A number written twice, "fifteen (15)", "Fifteen Thousand Dollars ($15,000)", "five percent (5%)",
is one mention spanning the whole phrase. Only whole values are mentions: "2,500.00" is 2500,
"12.5" is not a mention. A duration's count is not also a separate number mention. An anniversary,
"the second anniversary" or "the 3rd anniversary", is a duration of that many years.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from fractions import Fraction

from .labels import is_label, phone_spans
from .mention import Mention
from .number_words import word_number_at, word_numbers

# 1,450  16000  2,500.00: not part of a word, a longer number or a time of day (10:30).
_DIGITS = re.compile(r"(?<![\w.,:])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!\w|[.,:]\d)")
_SCALE = re.compile(r"\s+(thousand|million|billion)\b", re.I)
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9}
_CURRENCY_BEFORE = re.compile(r"(?:(?<![A-Za-z])(USD|EUR|GBP|CHF|CAD|AUD|JPY)\s?|(US\$|\$|€|£|¥)\s?)$")
_CURRENCY_AT = re.compile(r"(?:(USD|EUR|GBP|CHF|CAD|AUD|JPY)\s?|(US\$|\$|€|£|¥)\s?)")
_SYMBOLS = {"US$": "USD", "$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_CURRENCY_AFTER = re.compile(
    r"\s+(?:(?P<USD>(?:U\.?S\.?\s+)?dollars?)|(?P<EUR>euros?)|(?P<GBP>pounds?(?:\s+sterling)?)"
    r"|(?P<code>USD|EUR|GBP|CHF|CAD|AUD|JPY))\b",
    re.I,
)
_PERCENT = re.compile(r"\s*%|[\s\-]+per\s?cent\b", re.I)
_DURATION = re.compile(
    r"[\s\-]+(?:(?P<kind>calendar|business|working|banking)[\s\-]+)?(?P<unit>day|week|month|year)s?\b", re.I
)
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_ANNIVERSARY = re.compile(
    r"\b(?:(?P<word>" + "|".join(_ORDINALS) + r")|(?P<digits>\d{1,2})(?:st|nd|rd|th))[\s\-]+anniversary\b", re.I
)
_OPEN = re.compile(r"\s*\(\s*")
_CLOSE = re.compile(r"\s*\)")


@dataclass(slots=True)
class _Reading:
    """A quantity being read, from `start` to `end`, before it becomes a Mention."""

    start: int
    end: int
    value: int | Fraction  # a Fraction only for digits with decimals ("2,500.00", "1.5 million")
    unit: str | None = None
    currency: str | None = None
    business: bool = False


def read_quantities(text: str, blocked: list[tuple[int, int]]) -> list[Mention]:
    """Number and duration mentions in document order, none starting inside a `blocked` span or a
    phone number, and none that names rather than counts (`labels.is_label`)."""
    atoms: list[tuple[int, int, bool, re.Match[str] | int]] = [
        (m.start(), m.end(), False, m) for m in _DIGITS.finditer(text)
    ]
    atoms += [(start, end, True, value) for start, end, value in word_numbers(text)]
    atoms.sort(key=lambda atom: atom[0])
    blocked = sorted([*blocked, *phone_spans(text)])
    starts = [start for start, _ in blocked]
    mentions: list[Mention] = []
    taken = 0
    for start, end, words, found in atoms:
        if start < taken or _inside(blocked, starts, start):
            continue
        reading = _Reading(start, end, found if words else _digit_value(found))
        if not words and (before := _CURRENCY_BEFORE.search(text, max(taken, start - 8), start)):
            reading.start, reading.currency = before.start(), before[1] or _SYMBOLS[before[2]]
        _extend(text, reading, words, twins=True)
        if not isinstance(reading.value, int) and reading.value.denominator != 1:
            continue  # a fraction such as 12.5: integer slots cannot hold it
        if is_label(text, start, end, reading.end):
            continue
        kind = "number" if reading.unit in (None, "percent") else "duration"
        mentions.append(
            Mention(
                kind,
                reading.start,
                reading.end,
                int(reading.value),
                text[reading.start : reading.end],
                unit=reading.unit,
                currency=reading.currency,
                business=reading.business,
            )
        )
        taken = reading.end
    mentions += _anniversaries(text, blocked, starts)
    return sorted(mentions, key=lambda mention: mention.start)


def _anniversaries(text: str, blocked: list[tuple[int, int]], starts: list[int]) -> list[Mention]:
    """"the second anniversary", "3rd anniversary": durations of that many years (none in a blocked span)."""
    found = []
    for match in _ANNIVERSARY.finditer(text):
        years = _ORDINALS.index(match["word"].lower()) + 1 if match["word"] else int(match["digits"])
        if years >= 1 and not _inside(blocked, starts, match.start()):
            found.append(Mention("duration", match.start(), match.end(), years, match[0], unit="years"))
    return found


def _extend(text: str, reading: _Reading, words: bool, twins: bool) -> None:
    """Grow `reading` by a scale word, a twin in brackets, and a currency, percent or duration word."""
    if not words and (scale := _SCALE.match(text, reading.end)):
        reading.end, reading.value = scale.end(), reading.value * _SCALES[scale[1].lower()]
    if twins and (twin := _matching_twin(text, reading)):
        reading.end, reading.unit, reading.business = twin.end, twin.unit, twin.business
        reading.currency = reading.currency or twin.currency
    if reading.unit is None and _suffix(text, reading) and twins and (twin := _matching_twin(text, reading)):
        reading.end, reading.currency = twin.end, reading.currency or twin.currency


def _matching_twin(text: str, reading: _Reading) -> _Reading | None:
    """The twin in brackets right after `reading` when it repeats the same quantity."""
    twin = _twin(text, reading.end)
    if twin is None or twin.value != reading.value:
        return None
    if reading.currency and twin.currency and reading.currency != twin.currency:
        return None
    if reading.unit and twin.unit and reading.unit != twin.unit:
        return None
    if (reading.currency and twin.unit) or (reading.unit and twin.currency):
        return None  # "5 percent ($5)": a different quantity
    return twin


def _suffix(text: str, reading: _Reading) -> bool:
    """Grow `reading` by a following currency, percent or duration word; whether one was there."""
    if money := _CURRENCY_AFTER.match(text, reading.end):
        code = money["code"].upper() if money["code"] else next(k for k in ("USD", "EUR", "GBP") if money[k])
        if reading.currency in (None, code):
            reading.end, reading.currency = money.end(), code
            return True
    if reading.currency is not None:
        return False
    if percent := _PERCENT.match(text, reading.end):
        reading.end, reading.unit = percent.end(), "percent"
        return True
    if duration := _DURATION.match(text, reading.end):
        reading.end, reading.unit = duration.end(), duration["unit"].lower() + "s"
        kind = (duration["kind"] or "").lower()
        reading.business = reading.unit == "days" and kind in ("business", "working", "banking")
        return True
    return False


def _twin(text: str, pos: int) -> _Reading | None:
    """The same quantity written again in brackets at `pos`: "(15)", "($15,000)", "(5%)"."""
    opened = _OPEN.match(text, pos)
    if opened is None:
        return None
    inner = opened.end()
    currency = None
    if money := _CURRENCY_AT.match(text, inner):
        currency, inner = money[1] or _SYMBOLS[money[2]], money.end()
    if digits := _DIGITS.match(text, inner):
        reading, words = _Reading(inner, digits.end(), _digit_value(digits)), False
    elif spelled := word_number_at(text, inner):
        reading, words = _Reading(inner, spelled[0], spelled[1]), True
    else:
        return None
    _extend(text, reading, words, twins=False)
    closed = _CLOSE.match(text, reading.end)
    if closed is None:
        return None
    reading.end, reading.currency = closed.end(), reading.currency or currency
    return reading


def _digit_value(match: re.Match[str]) -> int | Fraction:
    whole = int(match[1].replace(",", ""))
    return whole + Fraction(match[2]) if match[2] else whole


def _inside(blocked: list[tuple[int, int]], starts: list[int], pos: int) -> bool:
    i = bisect.bisect_right(starts, pos) - 1
    return i >= 0 and pos < blocked[i][1]
