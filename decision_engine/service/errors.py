"""Every failure becomes a JSON body naming the field and the problem; never a stack trace."""

from __future__ import annotations

import logging

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException

from ..errors import RequestError
from ..store.database import StoreUnavailable
from ..store.recording import DecisionNotFound, IdempotencyConflict
from .batcher import QueueFull
from .budget import OverBudget
from .wire import ErrorBody

log = logging.getLogger("decision_engine.service")

_FIELD_BY_STATUS = {
    401: "Authorization",
    403: "Authorization",
    404: "path",
    405: "method",
    413: "body",
    415: "Content-Type",
    429: "request",
}


def error_response(status: int, field: str, problem: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        ErrorBody(status=status, field=field, problem=problem),
        status_code=status,
        media_type=MediaType.JSON,
        headers=headers,
    )


def _request_error(_: Request, error: RequestError) -> Response:
    return error_response(400, error.field or "request", error.problem)


def _not_found(_: Request, error: DecisionNotFound) -> Response:
    return error_response(404, "id", str(error) or "no decision with this id")


def _conflict(_: Request, error: IdempotencyConflict) -> Response:
    return error_response(409, "Idempotency-Key", str(error) or "this key was used for a different request")


def _unavailable(_: Request, error: StoreUnavailable) -> Response:
    log.warning("store unavailable: %s", error)
    return error_response(503, "store", "the decision store cannot be reached; retry later", {"Retry-After": "5"})


def _queue_full(_: Request, error: QueueFull) -> Response:
    return error_response(429, "request", str(error), {"Retry-After": str(error.retry_after)})


def _over_budget(request: Request, error: OverBudget) -> Response:
    log.warning("%s %s: %s", request.method, request.url.path, error)
    problem = f"{error}; retry later, or send a smaller request (fewer rule values, a shorter document)"
    return error_response(503, "request", problem, {"Retry-After": "5"})


def _http(_: Request, error: HTTPException) -> Response:
    field = _FIELD_BY_STATUS.get(error.status_code, "request")
    problem = str(error.detail)
    if isinstance(error, ValidationException) and isinstance(error.extra, list) and error.extra:
        first = error.extra[0]
        if isinstance(first, dict):
            field = str(first.get("key") or field)
            problem = str(first.get("message") or problem)
    return error_response(error.status_code, field, problem, error.headers)


def _internal(request: Request, error: Exception) -> Response:
    log.exception("internal error on %s %s", request.method, request.url.path)
    return error_response(500, "server", "internal error; it has been logged")


EXCEPTION_HANDLERS = {
    RequestError: _request_error,
    DecisionNotFound: _not_found,
    IdempotencyConflict: _conflict,
    StoreUnavailable: _unavailable,
    OverBudget: _over_budget,
    QueueFull: _queue_full,
    HTTPException: _http,
    Exception: _internal,
}
