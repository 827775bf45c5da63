"""Request and response types: the single source of truth for the wire format.

The JSON Schema files in `schemas/` and the service's OpenAPI are generated from
these Structs (see `decision_engine.schema_files`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

MAX_QUESTIONS = 8  # answer slots per request; the model's slot-index embedding has 8 entries

QuestionId = Annotated[
    str,
    Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="1 to 64 of A-Z a-z 0-9 _ . -"),
]
# JSON true/false decode to bool, integers to int, everything else to str.
Value = bool | int | str
Mode = Literal["joint", "independent", "sequential"]
# What settled an answer: the model chose it, a declared rule forced it, or its schema admits one value only.
FixedBy = Literal["model", "rule", "schema"]


class Document(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The document every question of the request is asked about."""

    text: str
    title: str | None = None
    id: Annotated[str, Meta(min_length=1, max_length=200)] | None = None  # the client's own id, stored and filterable


class AnswerSchema(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A JSON Schema subset declaring what an answer may be.

    One of: `{"type": "string", "enum": [...]}`, `{"type": "boolean"}`,
    `{"type": "integer", "minimum": m, "maximum": n}`, `{"type": "string", "format": "date"}`
    (optionally bounded by `formatMinimum` / `formatMaximum`, ISO dates).
    """

    type: Literal["string", "boolean", "integer"]
    enum: list[str] | None = None
    minimum: int | None = None
    maximum: int | None = None
    format: Literal["date"] | None = None
    formatMinimum: str | None = None
    formatMaximum: str | None = None
    description: str | None = None


class Question(msgspec.Struct, forbid_unknown_fields=True):
    """One question; it owns one answer slot."""

    id: QuestionId
    text: str
    schema: AnswerSchema


class Rule(msgspec.Struct, forbid_unknown_fields=True):
    """If every `if` question's answer is one of its values, every `then` question's must be one of its."""

    if_: dict[str, list[Value]] = msgspec.field(name="if")
    then: dict[str, list[Value]] = msgspec.field(default_factory=dict)


class Options(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Decoding options."""

    threshold: Annotated[float, Meta(gt=0.0, le=1.0)] = 0.95
    max_steps: Annotated[int, Meta(ge=1, le=4096)] | None = None
    context_tokens: Annotated[int, Meta(ge=16, le=8192)] | None = None


class DecisionRequest(msgspec.Struct, omit_defaults=True):
    """One document and 1 to 8 questions, decided together. Unknown top-level keys are ignored."""

    document: Document
    questions: Annotated[list[Question], Meta(min_length=1, max_length=MAX_QUESTIONS)]
    rules: list[Rule] = msgspec.field(default_factory=list)
    mode: Mode = "joint"
    options: Options = msgspec.field(default_factory=Options)


class Evidence(msgspec.Struct, omit_defaults=True):
    """A span of the document that supports an answer, as character offsets."""

    start: int
    end: int
    text: str
    score: float | None = None


class Answer(msgspec.Struct, omit_defaults=True):
    """The decided value of one question.

    A rule-fixed answer's confidence is at most that of the answers whose values triggered the rule.
    """

    id: str
    value: Value
    confidence: float
    step: int  # denoising step (1-based) at which the slot was fixed; 0 if fixed before any forward pass
    fixed_by: FixedBy
    evidence: list[Evidence] | None = None


class DecisionResponse(msgspec.Struct, omit_defaults=True):
    """Answers in question order, with how they were decoded."""

    answers: list[Answer]
    mode: Mode
    steps: int  # denoising steps over answer blocks (summed over runs in independent mode)
    model: str
    timings_ms: dict[str, float]
    # Of those steps, the ones that needed a forward pass (choosing a grounded value needs none); absent
    # where unknown: the store does not keep it, so a replayed decision has none.
    passes: int | None = None
