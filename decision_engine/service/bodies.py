"""Reading the JSON bodies the handlers take, each into its one wire Struct, naming the field at fault."""

from __future__ import annotations

from typing import TypeVar

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException

from ..errors import RequestError
from ..field_errors import field_error
from ..json_input import decode_json
from ..storable import check_text
from ..types import DecisionRequest
from ..validation import Limits, parse_request
from .wire import DecisionSubmission, LabelsUpdate

T = TypeVar("T")


async def json_bytes(request: Request) -> bytes:
    """The raw body of a request sent as JSON; 415 for any other media type."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise HTTPException(status_code=415, detail=f"send the body as application/json, not {media or 'nothing'!r}")
    return await request.body()


def decode_body(raw: bytes, kind: type[T]) -> T:
    """`raw` as a `kind`; RequestError naming the field (`labels`, `dataset`, ...) when it does not fit."""
    try:
        return decode_json(raw, kind)
    except msgspec.ValidationError as error:
        raise field_error(error) from None
    except msgspec.DecodeError as error:
        raise RequestError("request", f"not valid JSON: {error}") from None


def read_submission(raw: bytes, limits: Limits) -> tuple[DecisionRequest, DecisionSubmission]:
    """The body of a new decision: its core request, and the whole submission for its filing fields.

    The core request is read by the core, so a fault in it is named exactly as everywhere else (a rule's
    value by question id, say) and before a fault in the filing fields.
    """
    request = parse_request(raw, limits)
    submission = decode_body(raw, DecisionSubmission)
    for name in ("run", "dataset", "external_id"):
        check_text(name, getattr(submission, name))
    return request, submission


def read_labels(raw: bytes) -> LabelsUpdate:
    """The body of a labels update; each value is checked against its question's schema by the store."""
    update = decode_body(raw, LabelsUpdate)
    for question_id in update.labels:
        check_text("labels", question_id)  # a question id a store could not even look up
    return update
