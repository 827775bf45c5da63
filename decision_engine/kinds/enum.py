"""Enum answers: `{"type": "string", "enum": [...]}`, 2 to 32 distinct non-empty choices."""

from __future__ import annotations

from typing import Any

from ..decoding.slot_space import choice_space
from ..types import AnswerSchema, Value
from .base import AnswerKind

MIN_CHOICES, MAX_CHOICES = 2, 32


def json_schema(*choices: str) -> dict[str, Any]:
    """The schema a client writes for an answer that is one of `choices`."""
    return {"type": "string", "enum": list(choices)}


class EnumKind(AnswerKind):
    """One of the declared strings. Choices are exact strings on the wire (`Yes` and `yes` are two
    choices), so the key is the string as written: comparison is case- and space-sensitive."""

    name = "enum"
    keywords = frozenset({"enum"})
    confusion_table = True

    def claims(self, schema: AnswerSchema) -> bool:
        return schema.type == "string" and schema.format is None

    def schema_problem(self, schema: AnswerSchema) -> tuple[str, str] | None:
        if schema.enum is None:
            return "type", 'a string answer needs "enum" (2 to 32 choices) or "format": "date"'
        problem = self.keyword_problem(schema)
        if problem:
            return problem
        choices = schema.enum
        if not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
            return "enum", f"needs {MIN_CHOICES} to {MAX_CHOICES} choices, got {len(choices)}"
        for i, choice in enumerate(choices):
            if not choice.strip():
                return f"enum[{i}]", "choices must be non-empty strings"
        seen: dict[str, int] = {}
        for i, choice in enumerate(choices):
            if choice in seen:
                return f"enum[{i}]", f"duplicate choice {choice!r} (also enum[{seen[choice]}])"
            seen[choice] = i
        return None

    def value_problem(self, schema: AnswerSchema, value: Value) -> str | None:
        if not isinstance(value, str):
            return f"{value!r} is not a string"
        return None if value in schema.enum else f"{value!r} is not one of the choices {schema.enum}"

    def domain_size(self, schema: AnswerSchema) -> int:
        return len(schema.enum)

    def enumerated_values(self, schema: AnswerSchema) -> list[Value]:
        return list(schema.enum)

    def space(self, schema, vocab, classes, field):
        return choice_space(schema.enum, schema.enum, vocab, classes, f"{field}.enum")


KIND = EnumKind()
