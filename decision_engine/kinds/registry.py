"""Which answer kinds exist and which one a schema asks for.

The built-in kinds claim disjoint schemas (by `type` and `format`). Kinds added with `register`
are asked first, newest first, so one can claim a narrower shape than a built-in does (say, a
boolean schema that also names its words); one whose shape the schema types cannot express
yet needs a field in `decision_engine.types` first.
"""

from __future__ import annotations

import re

from ..types import AnswerSchema
from . import boolean, date, enum, integer
from .base import AnswerKind

BUILT_IN: tuple[AnswerKind, ...] = (enum.KIND, boolean.KIND, integer.KIND, date.KIND)  # the store's CHECK lists these
_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")  # fits questions.kind, String(16)
_added: list[AnswerKind] = []


def all_kinds() -> tuple[AnswerKind, ...]:
    """Every known kind: the built-in ones, then the registered ones in registration order."""
    return (*BUILT_IN, *_added)


def built_in_names() -> tuple[str, ...]:
    """The names of the built-in kinds, the ones the store's migrations know."""
    return tuple(k.name for k in BUILT_IN)


def get(name: str) -> AnswerKind:
    """The kind called `name`; KeyError naming the known ones when there is none."""
    for kind in all_kinds():
        if kind.name == name:
            return kind
    raise KeyError(f"no answer kind {name!r}; known: {[k.name for k in all_kinds()]}")


def register(kind: AnswerKind) -> AnswerKind:
    """Add a kind; it is asked before every earlier one which schemas it claims. Returns `kind`."""
    if not isinstance(kind, AnswerKind):
        raise TypeError(f"{kind!r} is not an AnswerKind")
    if not _NAME.fullmatch(getattr(kind, "name", "") or ""):
        raise ValueError(f"answer kind name {getattr(kind, 'name', None)!r} must be 1 to 16 of a-z 0-9 _")
    if any(k.name == kind.name for k in all_kinds()):
        raise ValueError(f"an answer kind named {kind.name!r} is already registered")
    _added.append(kind)
    return kind


def unregister(name: str) -> None:
    """Remove a kind added with `register`; the built-in kinds stay."""
    for i, kind in enumerate(_added):
        if kind.name == name:
            del _added[i]
            return
    if name in built_in_names():
        raise ValueError(f"the built-in answer kind {name!r} cannot be unregistered")
    raise KeyError(f"no registered answer kind {name!r}")


def find_kind(schema: AnswerSchema) -> AnswerKind | None:
    """The kind that claims `schema`: registered kinds first, newest first, then the built-in ones."""
    for kind in (*reversed(_added), *BUILT_IN):
        if kind.claims(schema):
            return kind
    return None


def kind_of(schema: AnswerSchema) -> AnswerKind:
    """The kind that claims `schema`; LookupError when none does (see `schema_problem`)."""
    kind = find_kind(schema)
    if kind is None:
        raise LookupError(f"no answer kind reads a schema of type {schema.type!r}")
    return kind
