"""Thin handlers: read the body, call the batcher or the store (both injected), return a Struct."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from litestar import Request, Response, get, post, put
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, FromQuery

from ..errors import RequestError
from ..store.recording import DecisionNotFound
from ..store.records import AccuracyReport, ReportFilters, StoredDecision
from ..types import DecisionResponse
from .auth import require
from .bodies import json_bytes, read_labels, read_submission
from .errors import error_response
from .openapi import json_body
from .resources import BatcherDep, ModelVersionDep, SettingsDep, StoreDep
from .wire import DecisionCreated, DecisionSubmission, ErrorBody, Health, LabelsUpdate

_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,200}")
_DECISION_ID = re.compile(r"[0-9a-f]{32}")


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
async def create_decision(
    request: Request, settings: SettingsDep, store: StoreDep, batcher: BatcherDep, model_version: ModelVersionDep
) -> Response[DecisionCreated]:
    decision_request, filing = read_submission(await json_bytes(request), settings.limits)
    key_id = request.state.api_key_id
    idempotency = request.headers.get("idempotency-key")
    if idempotency is not None:
        if not _IDEMPOTENCY_KEY.fullmatch(idempotency):
            raise RequestError("Idempotency-Key", "must be 1 to 200 visible ASCII characters")
        earlier = await store.find_idempotent(idempotency, key_id, decision_request)  # 409 if another request
        if earlier is not None:
            return _replayed(await store.load(earlier))
    response = await batcher.decide(decision_request)
    decision_id, created = await store.record(
        decision_request,
        response,
        run=filing.run or settings.run,
        dataset=filing.dataset,
        external_id=filing.external_id,
        model_version=model_version,
        idempotency_key=idempotency,
        api_key_id=key_id,
    )
    if not created:
        return _replayed(await store.load(decision_id))
    return Response(_created(decision_id, response), status_code=201, headers={"Location": f"/v1/decisions/{decision_id}"})


def _known_id(decision_id: str) -> str:
    if not _DECISION_ID.fullmatch(decision_id):
        raise DecisionNotFound(f"no decision with id {decision_id!r}")
    return decision_id


@get("/v1/decisions/{decision_id:str}", operation_id="getDecision", guards=[require("read")], summary="A stored decision")
async def get_decision(decision_id: FromPath[str], store: StoreDep) -> StoredDecision:
    return await store.load(_known_id(decision_id))


@put(
    "/v1/decisions/{decision_id:str}/labels",
    operation_id="putLabels",
    guards=[require("label")],
    summary="Set ground truth for some or all questions",
    description="Each value is checked against its question's schema; repeatable, last write wins, history kept.",
    operation_class=json_body(LabelsUpdate),
)
async def put_labels(decision_id: FromPath[str], request: Request, store: StoreDep) -> StoredDecision:
    update = read_labels(await json_bytes(request))
    return await store.label(_known_id(decision_id), update.labels, request.state.api_key_id)


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
    store: StoreDep,
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
    return await store.report(filters)


@get("/healthz", operation_id="health", summary="The process is up")
async def healthz() -> Health:
    return Health(status="ok")


@get("/readyz", operation_id="ready", summary="The model is loaded and the store reachable")
async def readyz(store: StoreDep, batcher: BatcherDep, model_version: ModelVersionDep) -> Response[Health]:
    engine = batcher.engine
    if engine is None:
        return Response(Health(status="starting", problem="the model is not loaded yet"), status_code=503)
    try:
        await store.ping()
    except Exception:
        return error_response(503, "store", "the decision store cannot be reached", {"Retry-After": "5"})
    return Response(
        Health(status="ready", model=engine.model.name, model_version=model_version, store="ok"),
        status_code=200,
    )


ROUTES = [create_decision, get_decision, put_labels, accuracy_report, healthz, readyz]
