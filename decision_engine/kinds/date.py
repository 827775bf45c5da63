"""Date answers: `{"type": "string", "format": "date"}`, ISO days, optionally bounded, written as YYYYMMDD."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..decoding.slot_space import DateSpace
from ..types import AnswerSchema, Value
from .base import AnswerKind, canonical_json

DATE_FLOOR = dt.date(1000, 1, 1)  # date slots hold four year digits
DATE_CEILING = dt.date(2999, 12, 31)  # keeps a date slot's value table small (730k rows at most)
DEFAULT_DATE_MIN = dt.date(1900, 1, 1)
DEFAULT_DATE_MAX = dt.date(2199, 12, 31)


def json_schema(minimum: str | None = None, maximum: str | None = None) -> dict[str, Any]:
    """The schema a client writes for an ISO date, optionally within [minimum, maximum]."""
    schema: dict[str, Any] = {"type": "string", "format": "date"}
    if minimum is not None:
        schema["formatMinimum"] = minimum
    if maximum is not None:
        schema["formatMaximum"] = maximum
    return schema


def parse_date(text: str) -> dt.date | None:
    """An ISO `YYYY-MM-DD` date, or None when `text` is not one."""
    if not isinstance(text, str) or len(text) != 10 or text[4] != "-" or text[7] != "-":
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def date_bounds(schema: AnswerSchema) -> tuple[dt.date, dt.date]:
    """The inclusive date range a date slot may take; an unset bound defaults around the set one."""
    low = parse_date(schema.formatMinimum) if schema.formatMinimum else None
    high = parse_date(schema.formatMaximum) if schema.formatMaximum else None
    if low is None:
        low = DEFAULT_DATE_MIN if high is None or high >= DEFAULT_DATE_MIN else DATE_FLOOR
    if high is None:
        high = DEFAULT_DATE_MAX if low <= DEFAULT_DATE_MAX else DATE_CEILING
    return low, high


class DateKind(AnswerKind):
    """A calendar day. Its only spelling is `YYYY-MM-DD` (the value check admits no other), and its
    key is that day: equal days are the same answer, and a string that is not such a date never is."""

    name = "date"
    keywords = frozenset({"format", "formatMinimum", "formatMaximum"})

    def claims(self, schema: AnswerSchema) -> bool:
        return schema.type == "string" and schema.format == "date"

    def schema_problem(self, schema: AnswerSchema) -> tuple[str, str] | None:
        if schema.enum is not None:
            return "format", '"enum" and "format" cannot be combined'
        problem = self.keyword_problem(schema)
        if problem:
            return problem
        for name in ("formatMinimum", "formatMaximum"):
            text = getattr(schema, name)
            if text is None:
                continue
            day = parse_date(text)
            if day is None:
                return name, f"{text!r} is not an ISO date YYYY-MM-DD"
            if not DATE_FLOOR <= day <= DATE_CEILING:
                return name, f"must lie between {DATE_FLOOR} and {DATE_CEILING}"
        low, high = date_bounds(schema)
        if low > high:
            return "formatMinimum", f"formatMinimum {low} is after formatMaximum {high}"
        return None

    def value_problem(self, schema: AnswerSchema, value: Value) -> str | None:
        if not isinstance(value, str):
            return f"{value!r} is not a string"
        day = parse_date(value)
        if day is None:
            return f"{value!r} is not an ISO date YYYY-MM-DD"
        low, high = date_bounds(schema)
        if not low <= day <= high:
            return f"{value} is outside [{low}, {high}]"
        return None

    def domain_size(self, schema: AnswerSchema) -> int:
        low, high = date_bounds(schema)
        return (high - low).days + 1

    def space(self, schema, vocab, classes, field):
        return DateSpace(*date_bounds(schema), vocab, classes)

    def answer_key(self, value: object) -> str:
        day = parse_date(value) if isinstance(value, str) else None
        return canonical_json(value if day is None else day.isoformat())


KIND = DateKind()
