"""What values an answer schema admits, independent of any tokenizer."""

from __future__ import annotations

import datetime as dt

from .types import AnswerSchema, Value

DATE_FLOOR = dt.date(1000, 1, 1)  # date slots hold four year digits
DATE_CEILING = dt.date(2999, 12, 31)  # keeps a date slot's value table small (730k rows at most)
DEFAULT_DATE_MIN = dt.date(1900, 1, 1)
DEFAULT_DATE_MAX = dt.date(2199, 12, 31)
INTEGER_LIMIT = 10**15 - 1  # integer slots hold at most 15 digits


def kind(schema: AnswerSchema) -> str:
    """One of 'enum', 'boolean', 'integer', 'date'."""
    if schema.type == "boolean":
        return "boolean"
    if schema.type == "integer":
        return "integer"
    return "date" if schema.format == "date" else "enum"


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


def schema_problem(schema: AnswerSchema) -> tuple[str, str] | None:
    """(keyword, problem) for a schema the engine cannot decode, else None."""
    present = {
        name
        for name in ("enum", "minimum", "maximum", "format", "formatMinimum", "formatMaximum")
        if getattr(schema, name) is not None
    }
    allowed_by_kind = {
        "enum": {"enum"},
        "boolean": set(),
        "integer": {"minimum", "maximum"},
        "date": {"format", "formatMinimum", "formatMaximum"},
    }
    if schema.type == "string" and "enum" not in present and schema.format is None:
        return "type", 'a string answer needs "enum" (2 to 32 choices) or "format": "date"'
    if schema.type == "string" and "enum" in present and schema.format is not None:
        return "format", '"enum" and "format" cannot be combined'
    k = kind(schema)
    extra = sorted(present - allowed_by_kind[k])
    if extra:
        return extra[0], f'keyword "{extra[0]}" does not apply to a {k} answer'
    if k == "enum":
        choices = schema.enum or []
        if not 2 <= len(choices) <= 32:
            return "enum", f"needs 2 to 32 choices, got {len(choices)}"
        for i, choice in enumerate(choices):
            if not choice.strip():
                return f"enum[{i}]", "choices must be non-empty strings"
        seen: dict[str, int] = {}
        for i, choice in enumerate(choices):
            if choice in seen:
                return f"enum[{i}]", f"duplicate choice {choice!r} (also enum[{seen[choice]}])"
            seen[choice] = i
    if k == "integer":
        if schema.minimum is None or schema.maximum is None:
            missing = "minimum" if schema.minimum is None else "maximum"
            return missing, 'an integer answer needs both "minimum" and "maximum"'
        if schema.minimum > schema.maximum:
            return "minimum", f"minimum {schema.minimum} is greater than maximum {schema.maximum}"
        for name in ("minimum", "maximum"):
            if abs(getattr(schema, name)) > INTEGER_LIMIT:
                return name, f"must lie within +/-{INTEGER_LIMIT}"
    if k == "date":
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


def value_problem(schema: AnswerSchema, value: Value) -> str | None:
    """Why `value` is not a valid answer for `schema`, or None when it is."""
    k = kind(schema)
    if k == "boolean":
        return None if isinstance(value, bool) else f"{value!r} is not a boolean"
    if k == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{value!r} is not an integer"
        if not schema.minimum <= value <= schema.maximum:
            return f"{value} is outside [{schema.minimum}, {schema.maximum}]"
        return None
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    if k == "enum":
        return None if value in schema.enum else f"{value!r} is not one of the choices {schema.enum}"
    day = parse_date(value)
    if day is None:
        return f"{value!r} is not an ISO date YYYY-MM-DD"
    low, high = date_bounds(schema)
    if not low <= day <= high:
        return f"{value} is outside [{low}, {high}]"
    return None


def domain_size(schema: AnswerSchema) -> int:
    """How many distinct values the schema admits."""
    k = kind(schema)
    if k == "boolean":
        return 2
    if k == "enum":
        return len(schema.enum)
    if k == "integer":
        return schema.maximum - schema.minimum + 1
    low, high = date_bounds(schema)
    return (high - low).days + 1


def enumerated_values(schema: AnswerSchema) -> list[Value] | None:
    """Every value of a boolean or enum schema, in declared order; None for open ranges."""
    k = kind(schema)
    if k == "boolean":
        return [True, False]
    if k == "enum":
        return list(schema.enum)
    return None
