"""Reading whole numbers written in English words: "fifteen", "thirty-one", "one hundred and twenty"."""

from __future__ import annotations

import re
from collections.abc import Iterator

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
}  # fmt: skip
TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9}

_WORDS = sorted([*UNITS, *TEENS, *TENS, "hundred", *SCALES], key=len, reverse=True)
_ONE_WORD = "(?:" + "|".join(_WORDS) + r")\b"
_FIRST_LETTERS = "".join(sorted({word[0] for word in _WORDS}))  # a cheap test before the long alternation
# A run of number words joined by spaces, hyphens or "and"; the parser splits it into numbers.
_RUN = re.compile(rf"\b(?=[{_FIRST_LETTERS}]){_ONE_WORD}(?:(?:\s+and\s+|[\s\-]+){_ONE_WORD})*", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z]+")


def word_numbers(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end, value) of every number written in words, in document order."""
    for run in _RUN.finditer(text):
        tokens = [(t.group().lower(), t.start(), t.end()) for t in _TOKEN.finditer(text, run.start(), run.end())]
        words = [word for word, _, _ in tokens]
        i = 0
        while i < len(words):
            parsed = _number(words, i)
            if parsed is None:
                i += 1  # a stray "and", "hundred" or scale word
                continue
            value, j = parsed
            yield tokens[i][1], tokens[j - 1][2], value
            i = j


def word_number_at(text: str, pos: int) -> tuple[int, int] | None:
    """(end, value) of the number in words that starts exactly at `pos`, else None."""
    run = _RUN.match(text, pos)
    if run is None:
        return None
    tokens = [(t.group().lower(), t.end()) for t in _TOKEN.finditer(text, run.start(), run.end())]
    parsed = _number([word for word, _ in tokens], 0)
    if parsed is None:
        return None
    value, j = parsed
    return tokens[j - 1][1], value


def _below_hundred(words: list[str], i: int) -> tuple[int, int] | None:
    """(value, next index) of "seven", "seventeen", "seventy" or "seventy-seven" at `i`."""
    if i >= len(words):
        return None
    word = words[i]
    if word in TENS:
        if i + 1 < len(words) and UNITS.get(words[i + 1], 0) > 0:
            return TENS[word] + UNITS[words[i + 1]], i + 2
        return TENS[word], i + 1
    if word in TEENS:
        return TEENS[word], i + 1
    if word in UNITS:
        return UNITS[word], i + 1
    return None


def _below_thousand(words: list[str], i: int) -> tuple[int, int] | None:
    """(value, next index) of a group under a thousand, "fifteen hundred" included."""
    parsed = _below_hundred(words, i)
    if parsed is None:
        return None
    value, j = parsed
    if value > 0 and j < len(words) and words[j] == "hundred":
        value, j = value * 100, j + 1
        k = j + 1 if j < len(words) and words[j] == "and" else j
        rest = _below_hundred(words, k)
        if rest is not None and rest[0] > 0:
            value, j = value + rest[0], rest[1]
    return value, j


def _number(words: list[str], i: int) -> tuple[int, int] | None:
    """(value, next index) of the longest well-formed number starting at `i`."""
    group = _below_thousand(words, i)
    if group is None:
        return None
    value, j = group
    if value == 0:
        return 0, j  # "zero" stands alone
    total, last_scale = 0, None
    while j < len(words) and words[j] in SCALES and (last_scale is None or SCALES[words[j]] < last_scale):
        last_scale = SCALES[words[j]]
        total, value, j = total + value * last_scale, 0, j + 1
        k = j + 1 if j < len(words) and words[j] == "and" else j
        group = _below_thousand(words, k)
        if group is None or group[0] == 0:
            break
        after = group[1]
        if after < len(words) and words[after] in SCALES and SCALES[words[after]] >= last_scale:
            break  # "two thousand three thousand": the second group is its own number
        value, j = group
    return total + value, j
