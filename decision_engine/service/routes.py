"""Thin handlers: read the body, call the batcher or the store (both injected), return a Struct."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timezone

from typing import Annotated

from litestar import Request, Response, delete, get, post, put
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, FromQuery, QueryParameter

from ..errors import RequestError
from ..store.listing import DEFAULT_PAGE, MAX_PAGE
from ..store.recording import DecisionNotFound, Filing
from ..store.records import AccuracyReport, DecisionFilters, DecisionPage, Removed, ReportFilters, RunList, StoredDecision
from ..types import DecisionResponse, Mode
from .auth import protected
from .bodies import json_bytes, read_labels, read_submission
from .budget import time_budget
from .errors import error_response
from .openapi import IDEMPOTENCY_KEY, LOCATION, REPLAYED, documented, errors
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
        passes=getattr(decided, "passes", None),  # a decision read back from the store has none
        model=decided.model,
        timings_ms=decided.timings_ms,
    )


def _location(decision_id: str) -> str:
    return f"/v1/decisions/{decision_id}"


def _replayed(stored: StoredDecision) -> Response:
    headers = {"Location": _location(stored.id), "Idempotent-Replayed": "true"}
    return Response(_created(stored.id, stored), status_code=200, headers=headers)


@post(
    "/v1/decisions",
    operation_id="createDecision",
    **protected("decide"),
    summary="Decide a request and store it",
    description="Responds once the decision is stored: a 2xx means stored. "
    "An Idempotency-Key header makes a retried POST return the first result; the same key with a body "
    "that differs in any field, `run`, `dataset` and `external_id` included, is a 409.",
    operation_class=documented(
        DecisionSubmission,
        headers=[IDEMPOTENCY_KEY],
        response_headers={201: {"Location": LOCATION}, 200: {"Location": LOCATION, "Idempotent-Replayed": REPLAYED}},
    ),
    responses={
        200: ResponseSpec(DecisionCreated, description="An idempotent replay: the first result for this key"),
        **errors(400, 401, 403, 409, 413, 415, 429, 503),
    },
)
async def create_decision(
    request: Request, settings: SettingsDep, store: StoreDep, batcher: BatcherDep, model_version: ModelVersionDep
) -> Response[DecisionCreated]:
    raw = await json_bytes(request)
    key_id = request.state.api_key_id
    idempotency = request.headers.get("idempotency-key")
    async with time_budget(settings.request_timeout_s):  # past it a 503, and the batcher drops the request
        # Decoding the body and checking its rules is CPU work: off the event loop, as the model is.
        decision_request, filing = await asyncio.to_thread(read_submission, raw, settings.limits)
        if idempotency is not None:
            if not _IDEMPOTENCY_KEY.fullmatch(idempotency):
                raise RequestError("Idempotency-Key", "must be 1 to 200 visible ASCII characters")
            filing_of = Filing(run=filing.run or settings.run, dataset=filing.dataset, external_id=filing.external_id)
            earlier = await store.find_idempotent(idempotency, key_id, decision_request, filing_of)  # 409 if it differs
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
    return Response(_created(decision_id, response), status_code=201, headers={"Location": _location(decision_id)})


def _known_id(decision_id: str) -> str:
    if not _DECISION_ID.fullmatch(decision_id):
        raise DecisionNotFound(f"no decision with id {decision_id!r}")
    return decision_id


@get(
    "/v1/decisions/{decision_id:str}",
    operation_id="getDecision",
    **protected("read"),
    summary="A stored decision",
    operation_class=documented(),
    responses=errors(400, 401, 403, 404, 429, 503),
)
async def get_decision(decision_id: FromPath[str], store: StoreDep) -> StoredDecision:
    return await store.load(_known_id(decision_id))


@delete(
    "/v1/decisions/{decision_id:str}",
    operation_id="deleteDecision",
    **protected("admin"),
    status_code=200,
    summary="Remove a stored decision",
    description="Removes the decision with its answers, labels and label history, and its document when no "
    "other decision refers to it; reports and the dashboard no longer count it. Answers what went.",
    operation_class=documented(),
    responses=errors(400, 401, 403, 404, 429, 503),
)
async def delete_decision(decision_id: FromPath[str], store: StoreDep) -> Removed:
    return await store.delete(_known_id(decision_id))


@get(
    "/v1/decisions",
    operation_id="listDecisions",
    **protected("read"),
    summary="Find stored decisions",
    description="Newest first, filtered by any of the parameters; `next_cursor` of one page, passed as "
    "`cursor`, gives the next (null: no more). Items leave out document text and question texts: "
    "get a decision by its id for those.",
    operation_class=documented(),
    responses=errors(400, 401, 403, 429, 503),
)
async def list_decisions(
    store: StoreDep,
    run: FromQuery[str | None] = None,
    dataset: FromQuery[str | None] = None,
    external_id: FromQuery[str | None] = None,
    document_id: Annotated[str | None, QueryParameter(description="the request's own document.id")] = None,
    model: FromQuery[str | None] = None,
    mode: FromQuery[Mode | None] = None,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
    cursor: FromQuery[str | None] = None,
) -> DecisionPage:
    filters = DecisionFilters(
        run=run or None,
        dataset=dataset or None,
        external_id=external_id or None,
        document_id=document_id or None,
        model=model or None,
        mode=mode or None,
        since=_when("since", since),
        until=_when("until", until),
    )
    return await store.decisions(filters, limit, cursor or None)


@get(
    "/v1/runs",
    operation_id="listRuns",
    **protected("read"),
    summary="Every run, with how many decisions, questions and labelled questions it holds",
    operation_class=documented(),
    responses=errors(401, 403, 429, 503),
)
async def list_runs(store: StoreDep) -> RunList:
    return await store.runs()


@put(
    "/v1/decisions/{decision_id:str}/labels",
    operation_id="putLabels",
    **protected("label"),
    summary="Set ground truth for some or all questions",
    description="Each value is checked against its question's schema; repeatable, last write wins, history kept.",
    operation_class=documented(LabelsUpdate),
    responses=errors(400, 401, 403, 404, 413, 415, 429, 503),
)
async def put_labels(decision_id: FromPath[str], request: Request, store: StoreDep) -> StoredDecision:
    update = await asyncio.to_thread(read_labels, await json_bytes(request))  # decoding: off the event loop
    return await store.label(_known_id(decision_id), update.labels, request.state.api_key_id)


def _when(name: str, value: str | None) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise RequestError(name, f"{value!r} is not an ISO date or date-time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@get(
    "/v1/reports/accuracy",
    operation_id="accuracyReport",
    **protected("read"),
    summary="Accuracy over stored decisions",
    operation_class=documented(),
    responses=errors(400, 401, 403, 429, 503),
)
async def accuracy_report(
    store: StoreDep,
    run: FromQuery[str | None] = None,
    dataset: FromQuery[str | None] = None,
    model: FromQuery[str | None] = None,
    mode: FromQuery[Mode | None] = None,
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


@get(
    "/readyz",
    operation_id="ready",
    summary="The model is loaded and the store reachable",
    operation_class=documented(),
    responses={
        503: ResponseSpec(
            Health | ErrorBody, description="Starting (Health), or the store is out of reach", generate_examples=False
        )
    },
)
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


ROUTES = [
    create_decision, list_decisions, get_decision, delete_decision, put_labels, list_runs, accuracy_report, healthz, readyz
]
