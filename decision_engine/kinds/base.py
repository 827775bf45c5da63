"""What every answer kind provides: schema and value checks, a slot space, a text form and a comparison key."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

import msgspec

from ..types import AnswerSchema, Value

if TYPE_CHECKING:
    from ..backends.vocabulary import Vocabulary
    from ..decoding.slot_space import SlotSpace
    from ..rules import SlotClasses

# The schema keywords a kind may accept; `type` picks the kind and `description` is free text.
KEYWORDS = tuple(name for name in AnswerSchema.__struct_fields__ if name not in ("type", "description"))


def canonical_json(value: object) -> str:
    """The value's JSON text as msgspec writes it: one spelling per JSON type and value."""
    return msgspec.json.encode(value).decode()


def plain_text(value: object) -> str:
    """A value as the pages and the terminal show it: true, false, 42, Entailment."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class AnswerKind(ABC):
    """One type of answer (enum, boolean, integer, date, ...), registered in `decision_engine.kinds`.

    Two answers to a question are the same answer when their `answer_key`s are equal; the
    store's report, the dashboard, evaluation and the rule solver all compare that way.
    """

    name: ClassVar[str]  # stored in questions.kind (at most 16 characters)
    keywords: ClassVar[frozenset[str]] = frozenset()  # the optional schema keywords this kind accepts
    confusion_table: ClassVar[bool] = False  # few enough values to tabulate labels against answers

    @abstractmethod
    def claims(self, schema: AnswerSchema) -> bool:
        """Whether `schema` asks for an answer of this kind (before any check of its keywords)."""

    def schema_problem(self, schema: AnswerSchema) -> tuple[str, str] | None:
        """(keyword, problem) for a schema of this kind the engine cannot decode, else None."""
        return self.keyword_problem(schema)

    def keyword_problem(self, schema: AnswerSchema) -> tuple[str, str] | None:
        """The first keyword present that this kind does not accept, as (keyword, problem)."""
        present = {name for name in KEYWORDS if getattr(schema, name) is not None}
        extra = sorted(present - self.keywords)
        if extra:
            return extra[0], f'keyword "{extra[0]}" does not apply to a {self.name} answer'
        return None

    @abstractmethod
    def value_problem(self, schema: AnswerSchema, value: Value) -> str | None:
        """Why `value` is not a valid answer for the (valid) `schema`, or None when it is."""

    @abstractmethod
    def domain_size(self, schema: AnswerSchema) -> int:
        """How many distinct values the schema admits."""

    def enumerated_values(self, schema: AnswerSchema) -> list[Value] | None:
        """Every value the schema admits, in declared order; None for open ranges."""
        return None

    @abstractmethod
    def space(self, schema: AnswerSchema, vocab: Vocabulary, classes: SlotClasses, field: str) -> SlotSpace:
        """The slot space of a valid schema; `field` names the schema in errors."""

    def text(self, value: Value) -> str:
        """The value as the pages, the report's tables and the terminal show it."""
        return plain_text(value)

    def answer_key(self, value: object) -> str:
        """The text answers are compared by: equal keys, same answer. A value of the wrong JSON type
        keeps its JSON text, which never equals a valid value's key (`true` is not `1`, `"1"` is not `1`)."""
        return canonical_json(value)

    def __repr__(self) -> str:
        return f"<answer kind {self.name}>"
