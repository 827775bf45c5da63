"""Integer answers: `{"type": "integer", "minimum": m, "maximum": n}`, written as a sign and digits."""

from __future__ import annotations

from typing import Any

from ..decoding.slot_space import IntegerSpace
from ..types import AnswerSchema, Value
from .base import AnswerKind

INTEGER_LIMIT = 10**15 - 1  # integer slots hold at most 15 digits


def json_schema(minimum: int, maximum: int) -> dict[str, Any]:
    """The schema a client writes for a whole number in [minimum, maximum]."""
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


class IntegerKind(AnswerKind):
    """A whole number in a closed range; the key is its JSON number, so `1` is neither `true` nor `"1"`."""

    name = "integer"
    keywords = frozenset({"minimum", "maximum"})

    def claims(self, schema: AnswerSchema) -> bool:
        return schema.type == "integer"

    def schema_problem(self, schema: AnswerSchema) -> tuple[str, str] | None:
        problem = self.keyword_problem(schema)
        if problem:
            return problem
        if schema.minimum is None or schema.maximum is None:
            missing = "minimum" if schema.minimum is None else "maximum"
            return missing, 'an integer answer needs both "minimum" and "maximum"'
        if schema.minimum > schema.maximum:
            return "minimum", f"minimum {schema.minimum} is greater than maximum {schema.maximum}"
        for name in ("minimum", "maximum"):
            if abs(getattr(schema, name)) > INTEGER_LIMIT:
                return name, f"must lie within +/-{INTEGER_LIMIT}"
        return None

    def value_problem(self, schema: AnswerSchema, value: Value) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{value!r} is not an integer"
        if not schema.minimum <= value <= schema.maximum:
            return f"{value} is outside [{schema.minimum}, {schema.maximum}]"
        return None

    def domain_size(self, schema: AnswerSchema) -> int:
        return schema.maximum - schema.minimum + 1

    def space(self, schema, vocab, classes, field):
        return IntegerSpace(schema.minimum, schema.maximum, vocab, classes)


KIND = IntegerKind()
