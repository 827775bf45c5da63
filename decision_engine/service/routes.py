"""Thin handlers: parse, call the engine or the store, return a Struct."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import msgspec
from litestar import Request, Response, get, post, put
from litestar.datastructures import State
from litestar.exceptions import HTTPException
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, FromQuery

from ..errors import RequestError
from ..store.recording import DecisionNotFound
from ..store.records import AccuracyReport, ReportFilters, StoredDecision
from ..types import DecisionResponse
from ..validation import parse_request
from .auth import require
from .errors import error_response
from .openapi import json_body
from .wire import AnyLabels, DecisionCreated, DecisionSubmission, ErrorBody, Health, LabelsUpdate, StoredTags

_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,200}")
_DECISION_ID = re.compile(r"[0-9a-f]{32}")


def _json_body_of(request: Request) -> None:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise HTTPException(status_code=415, detail=f"send the body as application/json, not {media or 'nothing'!r}")


def _decode(raw: bytes, kind: type):
    """Decode a body, naming the offending field as the core does (`labels`, `dataset`, ...)."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as error:
        message, _, path = str(error).partition(" - at `$")
        raise RequestError(path.rstrip("`").lstrip(".") or "request", message) from None
    except msgspec.DecodeError as error:
        raise RequestError("request", f"not valid JSON: {error}") from None


def _created(decision_id: str, decided: DecisionResponse | StoredDecision) -> DecisionCreated:
    """The POST body: the core response (fresh, or read back from the store) plus the stored id."""
    return DecisionCreated(
        id=decision_id,
        answers=decided.answers,
        mode=decided.mode,
        steps=decided.steps,
        model=decided.model,
        timings_ms=decided.timings_ms,
    )


def _replayed(stored: StoredDecision) -> Response:
    return Response(_created(stored.id, stored), status_code=200, headers={"Idempotent-Replayed": "true"})


@post(
    "/v1/decisions",
    operation_id="createDecision",
    guards=[require("decide")],
    summary="Decide a request and store it",
    description="Responds once the decision is stored: a 2xx means stored. "
    "An Idempotency-Key header makes a retried POST return the first result.",
    operation_class=json_body(DecisionSubmission),
    responses={
        200: ResponseSpec(DecisionCreated, description="An idempotent replay: the first result for this key"),
        400: ResponseSpec(ErrorBody, description="A bad request, naming the field"),
        409: ResponseSpec(ErrorBody, description="The Idempotency-Key was used for a different request"),
        429: ResponseSpec(ErrorBody, description="Too many requests in flight; see Retry-After"),
        503: ResponseSpec(ErrorBody, description="The store cannot be reached; see Retry-After"),
    },
)
async def create_decision(request: Request, state: State) -> Response[DecisionCreated]:
    _json_body_of(request)
    raw = await request.body()
    settings = state.settings
    decision_request = parse_request(raw, settings.limits)
    tags = _decode(raw, StoredTags)
    key_id = request.state.api_key_id
    idempotency = request.headers.get("idempotency-key")
    if idempotency is not None:
        if not _IDEMPOTENCY_KEY.fullmatch(idempotency):
            raise RequestError("Idempotency-Key", "must be 1 to 200 visible ASCII characters")
        earlier = await state.store.find_idempotent(idempotency, key_id, decision_request)  # 409 if another request
        if earlier is not None:
            return _replayed(await state.store.load(earlier))
    response = await state.batcher.decide(decision_request)
    decision_id, created = await state.store.record(
        decision_request,
        response,
        run=tags.run or settings.run,
        dataset=tags.dataset,
        external_id=tags.external_id,
        model_version=state.model_version,
        idempotency_key=idempotency,
        api_key_id=key_id,
    )
    if not created:
        return _replayed(await state.store.load(decision_id))
    return Response(_created(decision_id, response), status_code=201, headers={"Location": f"/v1/decisions/{decision_id}"})


def _known_id(decision_id: str) -> str:
    if not _DECISION_ID.fullmatch(decision_id):
        raise DecisionNotFound(f"no decision with id {decision_id!r}")
    return decision_id


@get("/v1/decisions/{decision_id:str}", operation_id="getDecision", guards=[require("read")], summary="A stored decision")
async def get_decision(decision_id: FromPath[str], state: State) -> StoredDecision:
    return await state.store.load(_known_id(decision_id))


@put(
    "/v1/decisions/{decision_id:str}/labels",
    operation_id="putLabels",
    guards=[require("label")],
    summary="Set ground truth for some or all questions",
    description="Each value is checked against its question's schema; repeatable, last write wins, history kept.",
    operation_class=json_body(LabelsUpdate),
)
async def put_labels(decision_id: FromPath[str], request: Request, state: State) -> StoredDecision:
    _json_body_of(request)
    raw = await request.body()
    update = _decode(raw, AnyLabels)  # each value is checked against its question's schema by the store
    return await state.store.label(_known_id(decision_id), update.labels, request.state.api_key_id)


def _when(name: str, value: str | None) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise RequestError(name, f"{value!r} is not an ISO date or date-time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@get("/v1/reports/accuracy", operation_id="accuracyReport", guards=[require("read")], summary="Accuracy over stored decisions")
async def accuracy_report(
    state: State,
    run: FromQuery[str | None] = None,
    dataset: FromQuery[str | None] = None,
    model: FromQuery[str | None] = None,
    mode: FromQuery[str | None] = None,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
) -> AccuracyReport:
    filters = ReportFilters(
        run=run or None,
        dataset=dataset or None,
        model=model or None,
        mode=mode or None,
        since=_when("since", since),
        until=_when("until", until),
    )
    return await state.store.report(filters)


@get("/healthz", operation_id="health", summary="The process is up")
async def healthz() -> Health:
    return Health(status="ok")


@get("/readyz", operation_id="ready", summary="The model is loaded and the store reachable")
async def readyz(state: State) -> Response[Health]:
    batcher = getattr(state, "batcher", None)
    engine = batcher.engine if batcher is not None else None
    if engine is None:
        return Response(Health(status="starting", problem="the model is not loaded yet"), status_code=503)
    try:
        await state.store.ping()
    except Exception:
        return error_response(503, "store", "the decision store cannot be reached", {"Retry-After": "5"})
    return Response(
        Health(status="ready", model=engine.model.name, model_version=state.model_version, store="ok"),
        status_code=200,
    )


ROUTES = [create_decision, get_decision, put_labels, accuracy_report, healthz, readyz]
