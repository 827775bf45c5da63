"""Concurrent requests share model calls; one bad request fails alone; overload is shed with 429."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from decision_engine.engine import DecisionEngine
from decision_engine.errors import RequestError
from decision_engine.service.admission import InFlightLimit
from decision_engine.service.batcher import DecisionBatcher
from decision_engine.types import DecisionRequest
from service_helpers import sample_request


def requests(n: int) -> list[DecisionRequest]:
    out = []
    for i in range(n):
        body, _ = sample_request(i % 2)
        out.append(msgspec.convert(body, DecisionRequest))
    return out


def test_concurrent_requests_share_model_calls(tiny_backend):
    engine = DecisionEngine(tiny_backend)

    async def scenario():
        batcher = DecisionBatcher(engine, max_batch=8, max_wait_ms=50)
        await batcher.start()
        try:
            responses = await asyncio.gather(*(batcher.decide(r) for r in requests(6)))
        finally:
            await batcher.stop()
        return batcher, responses

    batcher, responses = asyncio.run(scenario())
    assert batcher.largest_batch > 1 and batcher.batches < 6
    for request, response in zip(requests(6), responses):
        assert [a.id for a in response.answers] == [q.id for q in request.questions]
        assert response.timings_ms["batch_size"] > 1


def test_one_refused_request_does_not_fail_the_batch(tiny_backend, monkeypatch):
    engine = DecisionEngine(tiny_backend)
    real_prepare = engine.prepare

    def prepare(request, mode):
        if request.document.text.startswith("REFUSE"):
            raise RequestError("document.text", "refused for the test")
        return real_prepare(request, mode)

    monkeypatch.setattr(engine, "prepare", prepare)
    good, bad = requests(2)
    bad.document.text = "REFUSE " + bad.document.text

    async def scenario():
        batcher = DecisionBatcher(engine, max_batch=8, max_wait_ms=50)
        await batcher.start()
        try:
            return await asyncio.gather(batcher.decide(good), batcher.decide(bad), return_exceptions=True)
        finally:
            await batcher.stop()

    decided, refused = asyncio.run(scenario())
    assert isinstance(refused, RequestError) and refused.field == "document.text"
    assert len(decided.answers) == len(good.questions)


def test_an_engine_failure_fails_only_its_own_request(tiny_backend, monkeypatch):
    """A request that breaks the shared run gets the engine's error (the service's 500); the others decide."""
    engine = DecisionEngine(tiny_backend)
    real_encode = tiny_backend.encode_prefix
    broken = tiny_backend.vocab.encode("zanzibar")[0]

    def encode_prefix(prefixes):
        if any(broken in p.token_ids for p in prefixes):
            raise MemoryError("out of memory for the test")
        return real_encode(prefixes)

    monkeypatch.setattr(tiny_backend, "encode_prefix", encode_prefix)
    good, bad = requests(2)
    bad.document.text = "zanzibar " + bad.document.text

    async def scenario():
        batcher = DecisionBatcher(engine, max_batch=8, max_wait_ms=50)
        await batcher.start()
        try:
            return await asyncio.gather(batcher.decide(good), batcher.decide(bad), return_exceptions=True)
        finally:
            await batcher.stop()

    decided, failed = asyncio.run(scenario())
    assert isinstance(failed, MemoryError) and "out of memory" in str(failed)
    assert len(decided.answers) == len(good.questions)


def test_requests_past_the_in_flight_limit_get_429():
    release = asyncio.Event()

    async def slow_app(scope, receive, send):
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    limited = InFlightLimit(slow_app, limit=1)
    sent: list[list[dict]] = [[], []]

    async def call(i):
        async def send(message):
            sent[i].append(message)

        await limited({"type": "http", "path": "/v1/decisions"}, None, send)

    async def scenario():
        first = asyncio.create_task(call(0))
        await asyncio.sleep(0.01)
        await call(1)
        release.set()
        await first

    asyncio.run(scenario())
    assert sent[0][0]["status"] == 200
    assert sent[1][0]["status"] == 429
    assert (b"retry-after", b"1") in sent[1][0]["headers"]
    assert limited.in_flight == 0


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_is_never_shed(path):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})

    limited = InFlightLimit(app, limit=0)
    statuses = []

    async def send(message):
        statuses.append(message["status"])

    asyncio.run(limited({"type": "http", "path": path}, None, send))
    assert statuses == [200]


def test_decisions_past_the_queue_cap_are_turned_away_at_once_and_the_admitted_still_decide(tiny_backend):
    from decision_engine.service.batcher import QueueFull

    engine = DecisionEngine(tiny_backend)

    async def scenario():
        batcher = DecisionBatcher(engine, max_batch=8, max_wait_ms=50, max_waiting=3)
        await batcher.start()
        try:
            outcomes = await asyncio.gather(*(batcher.decide(r) for r in requests(5)), return_exceptions=True)
            after = await batcher.decide(requests(1)[0])  # room again once the first ones are answered
        finally:
            await batcher.stop()
        return batcher, outcomes, after

    batcher, outcomes, after = asyncio.run(scenario())
    refused = [o for o in outcomes if isinstance(o, QueueFull)]
    assert len(refused) == 2 and all(o.retry_after >= 1 for o in refused)
    assert all(not isinstance(o, Exception) for o in outcomes[:3])
    assert after.answers and batcher.waiting == 0
