"""The API's list, delete and runs endpoints, idempotency that cannot mislead, answers saying what settled
them, keys refused from their next request once revoked or expired, and Retry-After from the drain rate."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from litestar import Litestar
from sqlalchemy import update

from decision_engine.dashboard import queries
from decision_engine.store import schema as db
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.keys import create_key, revoke_key
from decision_engine.service.admission import InFlightLimit
from decision_engine.service.batcher import DecisionBatcher
from decision_engine.service.drain import MAX_RETRY_AFTER_S, DrainRate
from decision_engine.service.resources import ServiceResources
from decision_engine.service.settings import ServiceSettings
from service_helpers import bearer, sample_request
from test_service_api import client, keys, post_decision, sqlite_url, store_client, store_keys  # noqa: F401 - fixtures


def _body(dataset: str, document_id: str | None = None, index: int = 0) -> dict:
    body, _ = sample_request(index)
    if document_id is not None:
        body["document"]["id"] = document_id
    return body | {"dataset": dataset}


def test_list_filter_page_and_delete(store_client, store_keys, store_url):
    read, admin = bearer(store_keys["read"]), bearer(store_keys["admin"])
    made = [
        post_decision(store_client, _body(dataset, doc, i % 2), store_keys["decide"]).json()["id"]
        for i, (dataset, doc) in enumerate([("leases", "L-1"), ("leases", None), ("other", "L-1")])
    ]
    listed = store_client.get("/v1/decisions", headers=read)
    assert listed.status_code == 200, listed.text
    page = listed.json()
    assert [item["id"] for item in page["items"]] == made[::-1] and page["next_cursor"] is None
    assert all("text" not in item["document"] for item in page["items"])
    assert {a["fixed_by"] for item in page["items"] for a in item["answers"]} <= {"model", "rule", "schema"}

    by_doc = store_client.get("/v1/decisions", params={"document_id": "L-1"}, headers=read).json()
    assert {item["id"] for item in by_doc["items"]} == {made[0], made[2]}
    assert store_client.get(f"/v1/decisions/{made[0]}", headers=read).json()["document"]["id"] == "L-1"

    seen, cursor = [], None
    while True:
        params = {"dataset": "leases", "limit": 1} | ({"cursor": cursor} if cursor else {})
        reply = store_client.get("/v1/decisions", params=params, headers=read).json()
        seen += [item["id"] for item in reply["items"]]
        if not (cursor := reply["next_cursor"]):
            break
    assert seen == [made[1], made[0]]

    for params, field in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"cursor": "garbage"}, "cursor")):
        bad = store_client.get("/v1/decisions", params=params, headers=read)
        assert bad.status_code == 400 and bad.json()["field"] == field, bad.text
    assert store_client.get("/v1/decisions", headers=bearer(store_keys["decide"])).status_code == 403

    runs = store_client.get("/v1/runs", headers=read).json()["items"]
    assert {(r["dataset"], r["decisions"]) for r in runs} == {("leases", 2), ("other", 1)}
    assert store_client.get("/v1/reports/accuracy", headers=read).json()["groups"] == 3

    assert store_client.delete(f"/v1/decisions/{made[0]}", headers=read).status_code == 403
    removed = store_client.delete(f"/v1/decisions/{made[0]}", headers=admin)
    assert removed.status_code == 200, removed.text
    assert removed.json()["decisions"] == 1 and removed.json()["answers"] == len(_body("x")["questions"])
    assert store_client.get(f"/v1/decisions/{made[0]}", headers=read).status_code == 404
    assert store_client.delete(f"/v1/decisions/{made[0]}", headers=admin).status_code == 404
    assert store_client.delete("/v1/decisions/not-an-id", headers=admin).status_code == 404
    assert store_client.get("/v1/reports/accuracy", headers=read).json()["groups"] == 2
    runs = store_client.get("/v1/runs", headers=read).json()["items"]
    assert {(r["dataset"], r["decisions"]) for r in runs} == {("leases", 1), ("other", 1)}
    engine = create_db_engine(store_url)  # the dashboard's run pages count what is left
    with session_factory(engine)() as session:
        assert sorted(r.groups for r in queries.run_summaries(session)) == [1, 1]
    engine.dispose()


def test_a_replay_says_so_and_any_changed_field_is_a_conflict(store_client, store_keys):
    body, _ = sample_request()
    key = {"Idempotency-Key": "retry-7"}
    first = post_decision(store_client, body | {"run": "nightly", "dataset": "d"}, store_keys["decide"], **key)
    again = post_decision(store_client, body | {"run": "nightly", "dataset": "d"}, store_keys["decide"], **key)
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["location"] == first.headers["location"] == f"/v1/decisions/{first.json()['id']}"
    assert again.headers["idempotent-replayed"] == "true"
    for changed in (
        {"run": "other", "dataset": "d"},  # the tag alone
        {"run": "nightly", "dataset": "e"},
        {"run": "nightly"},  # a tag left out
        {"run": "nightly", "dataset": "d", "external_id": "x"},
        {"run": "nightly", "dataset": "d", "mode": "independent"},
    ):
        conflict = post_decision(store_client, body | changed, store_keys["decide"], **key)
        assert conflict.status_code == 409, (changed, conflict.text)
        assert conflict.json()["field"] == "Idempotency-Key"
    runs = store_client.get("/v1/runs", headers=bearer(store_keys["read"])).json()["items"]
    assert [(r["name"], r["decisions"]) for r in runs] == [("nightly", 1)]


def test_answers_say_what_settled_them(client, keys):
    body, _ = sample_request()
    reply = post_decision(client, body, keys["decide"]).json()
    assert all(a["fixed_by"] in ("model", "rule", "schema") for a in reply["answers"])
    stored = client.get(f"/v1/decisions/{reply['id']}", headers=bearer(keys["read"])).json()
    assert [a["fixed_by"] for a in stored["answers"]] == [a["fixed_by"] for a in reply["answers"]]


def test_a_revoked_or_expired_key_is_refused_from_its_next_request(client, keys, sqlite_url):
    engine = create_db_engine(sqlite_url)
    sessions = session_factory(engine)
    with sessions() as session:
        key_id, key = create_key(session, "read")
        soon_id, soon = create_key(session, "read", dt.timedelta(hours=1))
    assert client.get("/v1/runs", headers=bearer(key)).status_code == 200
    assert client.get("/v1/runs", headers=bearer(soon)).status_code == 200
    with sessions() as session:
        assert revoke_key(session, key_id)
        session.execute(update(db.ApiKey).where(db.ApiKey.id == soon_id).values(expires_at=db.utcnow()))
        session.commit()
    for refused in (key, soon):
        reply = client.get("/v1/runs", headers=bearer(refused))
        assert reply.status_code == 401 and reply.json()["field"] == "Authorization"
    engine.dispose()


def test_drain_rate_turns_queue_length_into_seconds():
    rate = DrainRate()
    assert rate.retry_after(50) == 1  # nothing measured yet
    rate.observe(4, 2.0)  # 0.5 s a request
    assert rate.retry_after(10) == 5 and rate.retry_after(0) == 1
    rate.observe(1, 1.5)  # the running mean moves towards 1.5 s a request
    assert 0.5 < rate.per_request_s < 1.5
    assert rate.retry_after(10**6) == MAX_RETRY_AFTER_S


def test_a_429_asks_for_the_measured_drain_time():
    resources = ServiceResources(ServiceSettings())
    resources.batcher = DecisionBatcher(lambda: None)
    resources.batcher.drain.observe(2, 5.0)  # 2.5 s a request
    app = Litestar(route_handlers=[], state=resources.state())
    release = asyncio.Event()

    async def slow_app(scope, receive, send):
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})

    limited = InFlightLimit(slow_app, limit=2)
    sent: list[dict] = []

    async def shed(message):
        sent.append(message)

    async def scenario():
        held = [asyncio.create_task(limited({"type": "http", "path": "/v1/decisions", "app": app}, None, shed))
                for _ in range(2)]
        await asyncio.sleep(0.01)
        await limited({"type": "http", "path": "/v1/decisions", "app": app}, None, shed)
        release.set()
        await asyncio.gather(*held)

    asyncio.run(scenario())
    refused = next(m for m in sent if m.get("status") == 429)
    assert (b"retry-after", b"5") in refused["headers"]  # two in flight at 2.5 s each


@pytest.mark.parametrize("path", ["/schema", "/schema/swagger"])
def test_the_docs_page_loads_nothing_from_elsewhere(client, path):
    page = client.get(path)
    assert page.status_code == 200
    assert "http://" not in page.text and "https://" not in page.text
    script = client.get("/schema/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content


def test_the_openapi_declares_scopes_headers_and_the_error_body_sent(client):
    spec = client.get("/schema/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": spec["components"]["securitySchemes"]["bearer"]["description"]
    }
    scopes = {
        (path, method): op.get("security") for path, ops in spec["paths"].items() for method, op in ops.items()
    }
    assert scopes[("/v1/decisions", "post")] == [{"bearer": ["decide"]}]
    assert scopes[("/v1/decisions/{decision_id}", "delete")] == [{"bearer": ["admin"]}]
    assert scopes[("/v1/decisions/{decision_id}/labels", "put")] == [{"bearer": ["label"]}]
    assert scopes[("/v1/runs", "get")] == [{"bearer": ["read"]}] and scopes[("/healthz", "get")] is None
    create = spec["paths"]["/v1/decisions"]["post"]
    assert [p["name"] for p in create["parameters"] if p["in"] == "header"] == ["Idempotency-Key"]
    assert create["responses"]["201"]["headers"]["Location"]["required"] is True
    assert set(create["responses"]["200"]["headers"]) == {"Location", "Idempotent-Replayed"}
    assert create["responses"]["429"]["headers"]["Retry-After"]["required"] is True
    error = {"$ref": "#/components/schemas/ErrorBody"}
    for status in ("400", "401", "403", "409", "413", "415", "429", "503"):
        assert create["responses"][status]["content"]["application/json"]["schema"] == error, status
    for status in ("401", "403", "404"):
        assert spec["paths"]["/v1/decisions/{decision_id}"]["get"]["responses"][status]["content"]["application/json"][
            "schema"
        ] == error
    body = client.post("/v1/decisions", content="{}", headers={"content-type": "application/json"}).json()
    assert set(body) == set(spec["components"]["schemas"]["ErrorBody"]["required"]) == {"status", "field", "problem"}
