"""How numbers, values and times read on the pages; registered as Jinja filters."""

from __future__ import annotations

import datetime as dt

from .. import kinds

NONE = "–"  # shown where a number is undefined (no labels, no timings)


def score(value: float | None) -> str:
    """An accuracy as the text report writes it: three decimals."""
    return NONE if value is None else f"{value:.3f}"


def signed(value: float | None) -> str:
    """A difference of accuracies, with its sign."""
    return NONE if value is None else f"{value:+.3f}"


def rate(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}"


def when(moment: dt.datetime | None) -> str:
    return NONE if moment is None else moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def minute(moment: dt.datetime | None) -> str:
    """A UTC time to the minute, for tables whose header says UTC."""
    return NONE if moment is None else moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M")


def value_text(value: object, kind: str | None = None) -> str:
    """An answer or label as the report keys it: true, false, 42, Entailment (in `kind`'s text form, when named)."""
    return NONE if value is None else kinds.value_text(value, kind)


FILTERS = {"score": score, "signed": signed, "rate": rate, "when": when, "minute": minute, "value": value_text}
