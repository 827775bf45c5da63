"""Answer kinds: each type of answer in one module, found through a registry.

A kind (see `AnswerKind`) holds its schema check, value check, slot space, text form and
comparison key. Two answers to a question are the same answer when the question's kind gives
them equal keys (`same_answer`); the store's report, the dashboard and evaluation all use it.
"""

from __future__ import annotations

from ..types import AnswerSchema, Value
from .base import AnswerKind, canonical_json, plain_text
from .registry import all_kinds, built_in_names, find_kind, get, kind_of, register, unregister

__all__ = [
    "AnswerKind",
    "all_kinds",
    "answer_key",
    "built_in_names",
    "canonical_json",
    "find_kind",
    "get",
    "kind_of",
    "plain_text",
    "register",
    "same_answer",
    "schema_problem",
    "unregister",
    "value_text",
]


def schema_problem(schema: AnswerSchema) -> tuple[str, str] | None:
    """(keyword, problem) for a schema the engine cannot decode, else None."""
    kind = find_kind(schema)
    if kind is None:
        return "type", f"no answer kind reads a schema of type {schema.type!r}"
    return kind.schema_problem(schema)


def answer_key(schema: AnswerSchema | None, value: object) -> str:
    """The key `value` compares by as an answer to `schema`; without a schema (a question that
    cannot be read) the value's canonical JSON, which is also what the built-in kinds use."""
    kind = None if schema is None else find_kind(schema)
    return canonical_json(value) if kind is None else kind.answer_key(value)


def same_answer(schema: AnswerSchema | None, a: object, b: object) -> bool:
    """Whether `a` and `b` are the same answer to a question of `schema`; a missing one (None) never is."""
    if a is None or b is None:
        return False
    return answer_key(schema, a) == answer_key(schema, b)


def value_text(value: Value, kind: AnswerKind | str | None = None) -> str:
    """The value as pages and the terminal show it, in its kind's text form (a kind or its name)."""
    if isinstance(kind, str):
        kind = next((k for k in all_kinds() if k.name == kind), None)
    return plain_text(value) if kind is None else kind.text(value)
