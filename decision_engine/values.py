"""What values an answer schema admits, independent of any tokenizer.

Kept for its callers: each function asks the schema's answer kind (`decision_engine.kinds`).
"""

from __future__ import annotations

from .kinds import kind_of, schema_problem
from .kinds.date import DATE_CEILING, DATE_FLOOR, DEFAULT_DATE_MAX, DEFAULT_DATE_MIN, date_bounds, parse_date
from .kinds.integer import INTEGER_LIMIT
from .types import AnswerSchema, Value

__all__ = [
    "DATE_CEILING",
    "DATE_FLOOR",
    "DEFAULT_DATE_MAX",
    "DEFAULT_DATE_MIN",
    "INTEGER_LIMIT",
    "date_bounds",
    "domain_size",
    "enumerated_values",
    "kind",
    "parse_date",
    "schema_problem",
    "value_problem",
]


def kind(schema: AnswerSchema) -> str:
    """The name of the schema's answer kind: 'enum', 'boolean', 'integer', 'date' or a registered one."""
    return kind_of(schema).name


def value_problem(schema: AnswerSchema, value: Value) -> str | None:
    """Why `value` is not a valid answer for `schema`, or None when it is."""
    return kind_of(schema).value_problem(schema, value)


def domain_size(schema: AnswerSchema) -> int:
    """How many distinct values the schema admits."""
    return kind_of(schema).domain_size(schema)


def enumerated_values(schema: AnswerSchema) -> list[Value] | None:
    """Every value of a boolean or enum schema, in declared order; None for open ranges."""
    return kind_of(schema).enumerated_values(schema)
