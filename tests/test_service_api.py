"""The REST API over a tiny model and a real SQLite store: decide, store, label, report, and every bad input."""

from __future__ import annotations

import json
import logging

import pytest
from litestar.testing import TestClient

from service_helpers import bearer, build_app, migrated_keys, sample_request
from test_request_errors import BAD_REQUESTS, DEFAULT_LIMITS, encode


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'decisions.sqlite3'}"


@pytest.fixture
def keys(sqlite_url) -> dict[str, str]:
    return migrated_keys(sqlite_url)


@pytest.fixture
def client(sqlite_url, keys, tiny_backend):
    with TestClient(build_app(sqlite_url, tiny_backend)) as test_client:
        yield test_client


@pytest.fixture
def store_keys(store_url) -> dict[str, str]:
    return migrated_keys(store_url)


@pytest.fixture
def store_client(store_url, store_keys, tiny_backend):
    """A client over SQLite and, in a second run, over PostgreSQL."""
    with TestClient(build_app(store_url, tiny_backend)) as test_client:
        yield test_client


def post_decision(client, body, key, **headers):
    return client.post(
        "/v1/decisions",
        content=json.dumps(body) if not isinstance(body, (bytes, str)) else body,
        headers={"content-type": "application/json", **bearer(key), **headers},
    )


def test_decide_store_label_report(store_client, store_keys):
    body, labels = sample_request()
    created = post_decision(store_client, body | {"dataset": "leases", "external_id": "case-1"}, store_keys["decide"])
    assert created.status_code == 201, created.text
    decision = created.json()
    assert created.headers["location"] == f"/v1/decisions/{decision['id']}"
    assert [a["id"] for a in decision["answers"]] == [q["id"] for q in body["questions"]]

    stored = store_client.get(f"/v1/decisions/{decision['id']}", headers=bearer(store_keys["read"])).json()
    assert stored["answers"] == decision["answers"]
    assert stored["dataset"] == "leases" and stored["external_id"] == "case-1"
    assert stored["document"]["text"] == body["document"]["text"]
    assert stored["labels"] == {}

    labelled = store_client.put(
        f"/v1/decisions/{decision['id']}/labels",
        content=json.dumps({"labels": labels}),
        headers={"content-type": "application/json", **bearer(store_keys["label"])},
    )
    assert labelled.status_code == 200, labelled.text
    assert labelled.json()["labels"] == labels

    report = store_client.get("/v1/reports/accuracy", params={"dataset": "leases"}, headers=bearer(store_keys["read"])).json()
    right = [a["value"] == labels[a["id"]] for a in decision["answers"]]
    assert report["groups"] == 1 and report["groups_labelled"] == 1
    assert report["per_question_accuracy"] == pytest.approx(sum(right) / len(right))
    assert report["group_accuracy"] == (1.0 if all(right) else 0.0)
    assert set(report["questions"]) == set(labels)
    empty = store_client.get("/v1/reports/accuracy", params={"dataset": "other"}, headers=bearer(store_keys["read"])).json()
    assert empty["groups"] == 0


def test_labels_last_write_wins(store_client, store_keys):
    body, labels = sample_request()
    decision = post_decision(store_client, body, store_keys["decide"]).json()
    question = next(q for q in body["questions"] if q["schema"]["type"] == "boolean")
    qid = question["id"]
    first = labels[qid]
    other = not first
    headers = {"content-type": "application/json", **bearer(store_keys["admin"])}
    for value in (first, other):
        reply = store_client.put(f"/v1/decisions/{decision['id']}/labels", content=json.dumps({"labels": {qid: value}}), headers=headers)
        assert reply.status_code == 200, reply.text
    assert store_client.get(f"/v1/decisions/{decision['id']}", headers=bearer(store_keys["admin"])).json()["labels"] == {qid: other}


def test_idempotency_key_returns_the_first_result(store_client, store_keys):
    body, _ = sample_request()
    first = post_decision(store_client, body, store_keys["decide"], **{"Idempotency-Key": "retry-1"})
    again = post_decision(store_client, body, store_keys["decide"], **{"Idempotency-Key": "retry-1"})
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["answers"] == first.json()["answers"]
    other, _ = sample_request(1)
    conflict = post_decision(store_client, other, store_keys["decide"], **{"Idempotency-Key": "retry-1"})
    assert conflict.status_code == 409 and conflict.json()["field"] == "Idempotency-Key"
    changed_options = body | {"options": {"threshold": 0.5}}  # same document and questions, another request
    conflict = post_decision(store_client, changed_options, store_keys["decide"], **{"Idempotency-Key": "retry-1"})
    assert conflict.status_code == 409
    report = store_client.get("/v1/reports/accuracy", headers=bearer(store_keys["read"])).json()
    assert report["groups"] == 1


def test_document_text_can_be_left_out_of_the_store(sqlite_url, keys, tiny_backend):
    body, _ = sample_request()
    with TestClient(build_app(sqlite_url, tiny_backend, store_document_text=False)) as client:
        decision = post_decision(client, body, keys["decide"]).json()
        document = client.get(f"/v1/decisions/{decision['id']}", headers=bearer(keys["read"])).json()["document"]
    assert "text" not in document
    assert len(document["sha256"]) == 64 and document["chars"] == len(body["document"]["text"])


@pytest.mark.parametrize(
    ("data", "field", "phrase", "limits"),
    [p for p in BAD_REQUESTS if p.values[3] == DEFAULT_LIMITS and not p.marks],
)
def test_bad_requests_get_400_naming_the_field(client, keys, data, field, phrase, limits):
    reply = post_decision(client, encode(data), keys["decide"])
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert body["field"] == field and phrase in body["problem"]


def test_oversized_document_and_body(sqlite_url, keys, tiny_backend):
    from decision_engine.options import EngineOptions
    from decision_engine.validation import Limits

    body, _ = sample_request()
    app = build_app(
        sqlite_url, tiny_backend, engine=EngineOptions(limits=Limits(max_document_chars=100)), max_body_bytes=20_000
    )
    with TestClient(app) as client:
        reply = post_decision(client, body, keys["decide"])
        assert reply.status_code == 400 and reply.json()["field"] == "document.text"
        huge = body | {"document": {"text": "x" * 30_000}}
        reply = post_decision(client, huge, keys["decide"])
        assert reply.status_code == 413 and reply.json()["field"] == "body"


def test_envelope_errors(client, keys):
    body, _ = sample_request()
    form = client.post("/v1/decisions", content=json.dumps(body), headers={"content-type": "text/plain", **bearer(keys["decide"])})
    assert form.status_code == 415 and form.json()["field"] == "Content-Type"
    bad_tag = post_decision(client, body | {"dataset": 7}, keys["decide"])
    assert bad_tag.status_code == 400 and bad_tag.json()["field"] == "dataset"
    bad_key = post_decision(client, body, keys["decide"], **{"Idempotency-Key": "has space"})
    assert bad_key.status_code == 400 and bad_key.json()["field"] == "Idempotency-Key"
    for path in ("/v1/decisions/0123456789abcdef0123456789abcdef", "/v1/decisions/not-an-id", "/v1/nothing"):
        missing = client.get(path, headers=bearer(keys["read"]))
        assert missing.status_code == 404, path
        assert missing.json()["problem"]
    since = client.get("/v1/reports/accuracy", params={"since": "yesterday"}, headers=bearer(keys["read"]))
    assert since.status_code == 400 and since.json()["field"] == "since"


def _label(client, key, decision_id, payload):
    return client.put(
        f"/v1/decisions/{decision_id}/labels",
        content=payload if isinstance(payload, str) else json.dumps(payload),
        headers={"content-type": "application/json", **bearer(key)},
    )


def test_bad_labels_are_refused_and_nothing_is_written(client, keys):
    body, labels = sample_request()
    decision_id = post_decision(client, body, keys["decide"]).json()["id"]
    questions = {q["id"]: q["schema"] for q in body["questions"]}
    boolean = next(q for q, s in questions.items() if s["type"] == "boolean")
    cases = [
        ({"labels": {"nope": True}}, "labels.nope"),
        ({"labels": {boolean: "yes"}}, f"labels.{boolean}"),
        ({"labels": {boolean: 1.5}}, f"labels.{boolean}"),
        ({"labels": {boolean: None}}, f"labels.{boolean}"),
        ({"labels": labels | {boolean: 3}}, f"labels.{boolean}"),
        ({"labels": {}}, "labels"),
        ({"label": {}}, "request"),
        ("[1, 2", "request"),
    ]
    for payload, field in cases:
        reply = _label(client, keys["label"], decision_id, payload)
        assert reply.status_code == 400, (payload, reply.text)
        assert reply.json()["field"].startswith(field), (payload, reply.json())
    assert client.get(f"/v1/decisions/{decision_id}", headers=bearer(keys["read"])).json()["labels"] == {}
    assert _label(client, keys["label"], "0" * 32, {"labels": labels}).status_code == 404


def test_keys_and_scopes(store_client, store_keys):
    body, labels = sample_request()
    assert post_decision(store_client, body, store_keys["decide"]).status_code == 201
    no_key = store_client.post("/v1/decisions", content=json.dumps(body), headers={"content-type": "application/json"})
    assert no_key.status_code == 401 and no_key.json()["field"] == "Authorization"
    assert post_decision(store_client, body, "dek_wrong").status_code == 401
    for scope in ("read", "label"):
        refused = post_decision(store_client, body, store_keys[scope])
        assert refused.status_code == 403 and "decide" in refused.json()["problem"]
    decision_id = post_decision(store_client, body, store_keys["admin"]).json()["id"]
    assert store_client.get(f"/v1/decisions/{decision_id}", headers=bearer(store_keys["decide"])).status_code == 403
    assert store_client.get(f"/v1/decisions/{decision_id}", headers=bearer(store_keys["admin"])).status_code == 200
    assert _label(store_client, store_keys["read"], decision_id, {"labels": labels}).status_code == 403
    assert store_client.get("/v1/reports/accuracy", headers=bearer(store_keys["label"])).status_code == 403


def test_no_auth_opens_the_api(sqlite_url, keys, tiny_backend):
    body, _ = sample_request()
    with TestClient(build_app(sqlite_url, tiny_backend, auth=False)) as client:
        reply = client.post("/v1/decisions", content=json.dumps(body), headers={"content-type": "application/json"})
        assert reply.status_code == 201
        assert client.get(f"/v1/decisions/{reply.json()['id']}").status_code == 200


def test_health_ready_and_openapi(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["model"] == "tiny-random"
    spec = client.get("/schema/openapi.json").json()
    assert {"/v1/decisions", "/v1/decisions/{decision_id}", "/v1/reports/accuracy"} <= set(spec["paths"])
    create = spec["paths"]["/v1/decisions"]["post"]
    assert create["operationId"] == "createDecision"
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert {"document", "questions", "rules", "mode", "dataset", "external_id"} <= set(body["properties"])
    assert body["properties"]["questions"]["items"]["properties"]["schema"]["properties"]["type"]["enum"]
    assert "StoredDecision" in spec["components"]["schemas"]


def test_unreachable_store_gives_503_quickly(tiny_backend):
    import time

    app = build_app("postgresql://nobody@127.0.0.1:9/none", tiny_backend, migrate=False)
    body, _ = sample_request()
    with TestClient(app) as client:
        started = time.perf_counter()
        reply = post_decision(client, body, "dek_any")
        assert reply.status_code == 503 and reply.headers["retry-after"]
        assert reply.json()["field"] == "store"
        assert client.get("/readyz").status_code == 503
        assert time.perf_counter() - started < 10


def test_no_document_text_in_logs(client, keys, caplog):
    body, _ = sample_request()
    body["document"]["text"] = "SECRET-CLAUSE-TEXT " + body["document"]["text"]
    with caplog.at_level(logging.DEBUG):
        assert post_decision(client, body, keys["decide"]).status_code == 201
        post_decision(client, body | {"mode": "bogus"}, keys["decide"])
    assert "SECRET-CLAUSE-TEXT" not in caplog.text
