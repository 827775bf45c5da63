"""Bodies the service reads and writes beyond the core request and response."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ..types import DecisionRequest, DecisionResponse, Value

Tag = Annotated[str, Meta(min_length=1, max_length=200)]


class DecisionSubmission(DecisionRequest, kw_only=True, omit_defaults=True):
    """A decision request plus how to file it: the run, a client dataset tag and the client's own id."""

    run: Tag | None = None
    dataset: Tag | None = None
    external_id: Tag | None = None


class DecisionCreated(DecisionResponse, kw_only=True, omit_defaults=True):
    """The core response plus the stored decision's id."""

    id: str


# Read as any JSON value so that the store, which knows each question's schema, names a wrong one by its
# question id (`labels.<id>`); documented as the answer values it must be.
LabelValue = Annotated[Any, Meta(extra_json_schema=msgspec.json.schema(Value))]


class LabelsUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """Ground truth, or a reviewer's verdict, for some or all questions of a decision."""

    labels: dict[str, LabelValue]


class ErrorBody(msgspec.Struct):
    """Every 4xx and 5xx body: the status, the field at fault and what is wrong with it."""

    status: int
    field: str
    problem: str


class Health(msgspec.Struct, omit_defaults=True):
    """Liveness or readiness, with the reason when not ready."""

    status: str
    model: str | None = None
    model_version: str | None = None
    store: str | None = None
    problem: str | None = None
