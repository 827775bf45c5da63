"""Boolean answers: `{"type": "boolean"}`, written in a slot as the model's tokens for yes or no."""

from __future__ import annotations

from typing import Any

from ..decoding.slot_space import ChoiceSpace
from ..types import AnswerSchema, Value
from .base import AnswerKind


def json_schema() -> dict[str, Any]:
    """The schema a client writes for a boolean answer."""
    return {"type": "boolean"}


class BooleanKind(AnswerKind):
    """true or false; the key is the JSON literal, so `true` never equals `1` and `false` never `0`."""

    name = "boolean"
    confusion_table = True

    def claims(self, schema: AnswerSchema) -> bool:
        return schema.type == "boolean"

    def value_problem(self, schema: AnswerSchema, value: Value) -> str | None:
        return None if isinstance(value, bool) else f"{value!r} is not a boolean"

    def domain_size(self, schema: AnswerSchema) -> int:
        return 2

    def enumerated_values(self, schema: AnswerSchema) -> list[Value]:
        return [True, False]

    def space(self, schema, vocab, classes, field):
        return ChoiceSpace([True, False], [vocab.yes_ids, vocab.no_ids], vocab.pad_id, classes)


KIND = BooleanKind()
