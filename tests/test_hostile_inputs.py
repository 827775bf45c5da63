"""A catalogue of hostile inputs, sent to the service over SQLite and over PostgreSQL.

Each is answered 4xx with an ErrorBody naming the field, the same on both stores; nothing is stored
and the model is never called. Then the date filters at the ends of time, and the dashboard's parameters.
"""

from __future__ import annotations

import copy
import json
import secrets
from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa
from litestar.testing import TestClient

from conftest import FakeModel, random_logits
from decision_engine.json_input import MAX_DEPTH
from decision_engine.store.database import create_db_engine
from service_helpers import bearer, build_app, migrated_keys

UNKNOWN_ID = "0" * 32  # well formed, never stored
MAX_BODY = 2_000_000  # the catalogue's app takes bodies up to this many bytes

BASE = {
    "document": {"text": "The tenant gives 30 days of notice. The deposit is returned.", "title": "Lease"},
    "questions": [
        {"id": "kind", "text": "What kind of notice?", "schema": {"type": "string", "enum": ["written", "oral"]}},
        {"id": "returned", "text": "Is the deposit returned?", "schema": {"type": "boolean"}},
        {"id": "days", "text": "How many days of notice?", "schema": {"type": "integer", "minimum": 0, "maximum": 365}},
    ],
    "rules": [{"if": {"kind": ["oral"]}, "then": {"returned": [False]}}],
}


def body(**changes) -> dict:
    """BASE with top-level keys replaced (None removes one)."""
    out = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def with_question(index: int, **schema_or_fields) -> dict:
    out = copy.deepcopy(BASE)
    question = out["questions"][index]
    for key, value in schema_or_fields.items():
        if key in ("id", "text"):
            question[key] = value
        else:
            question["schema"][key] = value
    return out


def rules(count: int, values: int, then_values: int = 1) -> list[dict]:
    """`count` rules, each naming `values` integers for `days` and `then_values` for itself again."""
    return [
        {"if": {"days": list(range(values))}, "then": {"days": list(range(then_values))}} for _ in range(count)
    ]


@dataclass
class Hostile:
    """One hostile request and the answer it must get."""

    id: str
    status: int
    field: str
    content: bytes | str | dict | list | None = None
    method: str = "POST"
    path: str = "/v1/decisions"
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    key: str = "admin"
    params: dict[str, str] | None = None

    def raw(self) -> bytes | None:
        if self.content is None or isinstance(self.content, bytes):
            return self.content
        if isinstance(self.content, str):
            return self.content.encode("utf-8", "surrogatepass")
        return json.dumps(self.content).encode()


DEEP = b"[" * 200_000 + b"]" * 200_000
NUL = "\x00"
LABELS = f"/v1/decisions/{UNKNOWN_ID}/labels"
REPORT = "/v1/reports/accuracy"

CATALOGUE = [
    # nesting
    Hostile("deep-array-body", 400, "request", DEEP),
    Hostile("deep-unclosed-body", 400, "request", b"[" * 200_000),
    Hostile("deep-in-an-ignored-key", 400, "request", json.dumps(BASE)[:-1].encode() + b', "x": ' + DEEP + b"}"),
    Hostile("deep-just-past-the-limit", 400, "request", body(extra=json.loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)))),
    Hostile("deep-labels", 400, "request", b'{"labels": {"kind": ' + DEEP + b"}}", method="PUT", path=LABELS),
    # characters no store can hold, in every stored text
    Hostile("nul-document-text", 400, "document.text", body(document={"text": f"The tenant{NUL} gives notice."})),
    Hostile("nul-document-title", 400, "document.title", body(document={"text": "Lease.", "title": f"a{NUL}"})),
    Hostile("nul-document-id", 400, "document.id", body(document={"text": "Lease.", "id": f"doc{NUL}1"})),
    Hostile("nul-question-text", 400, "questions[1].text", with_question(1, text=f"Is it{NUL} returned?")),
    Hostile("nul-enum-choice", 400, "questions[0].schema.enum[1]", with_question(0, enum=["written", f"or{NUL}al"])),
    Hostile("nul-description", 400, "questions[2].schema.description", with_question(2, description=f"d{NUL}")),
    Hostile("nul-run", 400, "run", body(run=f"run{NUL}")),
    Hostile("nul-dataset", 400, "dataset", body(dataset=f"{NUL}")),
    Hostile("nul-external-id", 400, "external_id", body(external_id=f"case-{NUL}")),
    Hostile("nul-label-key", 400, "labels", {"labels": {f"kind{NUL}": "oral"}}, method="PUT", path=LABELS),
    Hostile("lone-surrogate-text", 400, "request", json.dumps(body()).replace("The tenant", "\\ud800 tenant")),
    Hostile("not-utf8", 400, "request", json.dumps(body()).encode().replace(b"tenant", b"ten\xffant")),
    # rules past their limits
    Hostile("too-many-rules", 400, "rules", body(rules=rules(65, 1))),
    Hostile("rule-with-too-many-values", 400, "rules[1]", body(rules=[*rules(1, 10), *rules(1, 1001)])),
    Hostile("rules-64x1000", 400, "rules", body(rules=rules(64, 999))),
    Hostile("rules-too-many-values-in-all", 400, "rules", body(rules=rules(20, 600))),
    Hostile("rule-unknown-question", 400, "rules[0].if.nope", body(rules=[{"if": {"nope": [1]}, "then": {"days": [1]}}])),
    Hostile("rule-value-of-wrong-type", 400, "rules[0].if.days[0]", body(rules=[{"if": {"days": ["x"]}, "then": {"days": [1]}}])),
    Hostile("rule-value-out-of-range", 400, "rules[0].if.days[0]", body(rules=[{"if": {"days": [366]}, "then": {"days": [1]}}])),
    Hostile("rules-unsatisfiable", 400, "rules", body(rules=[
        {"if": {"returned": [True]}, "then": {"returned": [False]}},
        {"if": {"returned": [False]}, "then": {"returned": [True]}}])),
    # the envelope
    Hostile("text-plain", 415, "Content-Type", body(), headers={"content-type": "text/plain"}),
    Hostile("no-content-type", 415, "Content-Type", body(), headers={}),
    Hostile("form-labels", 415, "Content-Type", b"labels=1", method="PUT", path=LABELS,
            headers={"content-type": "application/x-www-form-urlencoded"}),
    Hostile("empty-body", 400, "request", b""),
    Hostile("json-array", 400, "request", []),
    Hostile("json-null", 400, "request", b"null"),
    Hostile("truncated-json", 400, "request", json.dumps(body())[:-3]),
    Hostile("body-too-large", 413, "body", body(document={"text": "x" * (MAX_BODY + 10)})),
    Hostile("idempotency-key-with-space", 400, "Idempotency-Key", body(),
            headers={"content-type": "application/json", "Idempotency-Key": "a key"}),
    # numbers and enums
    Hostile("huge-integer-bound", 400, "questions[2].schema.maximum", with_question(2, maximum=10**40)),
    Hostile("float-bound", 400, "questions[2].schema.maximum", with_question(2, maximum=1.5)),
    Hostile("number-past-float-range", 400, "options.threshold", json.dumps(body(options={"threshold": 0.5})).replace("0.5", "1e999")),
    Hostile("threshold-zero", 400, "options.threshold", body(options={"threshold": 0})),
    Hostile("max-steps-zero", 400, "options.max_steps", body(options={"max_steps": 0})),
    Hostile("bad-mode", 400, "mode", body(mode="telepathic")),
    Hostile("bad-schema-type", 400, "questions[0].schema.type", with_question(0, type="float")),
    Hostile("minimum-above-maximum", 400, "questions[2].schema.minimum", with_question(2, minimum=10, maximum=1)),
    Hostile("bad-date-bound", 400, "questions[2].schema.formatMinimum", with_question(2, type="string", format="date",
            minimum=None, maximum=None, formatMinimum="2024-13-01")),
    # questions
    Hostile("duplicate-question-ids", 400, "questions[1].id", with_question(1, id="kind")),
    Hostile("nine-questions", 400, "questions", body(questions=[
        {"id": f"q{i}", "text": "Is it?", "schema": {"type": "boolean"}} for i in range(9)], rules=[])),
    Hostile("no-questions", 400, "questions", body(questions=[], rules=[])),
    Hostile("unicode-question-id", 400, "questions[0].id", with_question(0, id="kïnd")),
    Hostile("choices-alike-to-the-tokenizer", 400, "questions[0].schema.enum[1]",
            with_question(0, enum=["Yes", "yes"]) | {"rules": []}),
    Hostile("unknown-document-field", 400, "document", body(document={"text": "Lease.", "pages": 3})),
    Hostile("whitespace-only-document", 400, "document.text", body(document={"text": "\u2003\u00a0\u3000\n"})),
    Hostile("run-too-long", 400, "run", body(run="r" * 201)),
    Hostile("document-id-too-long", 400, "document.id", body(document={"text": "Lease.", "id": "d" * 201})),
    # labels of a decision that is not stored: the body is refused first
    Hostile("labels-not-an-object", 400, "labels", {"labels": ["oral"]}, method="PUT", path=LABELS),
    Hostile("labels-missing", 400, "request", {}, method="PUT", path=LABELS),
    Hostile("labels-unknown-decision", 404, "id", {"labels": {"kind": "oral"}}, method="PUT", path=LABELS),
    # paths and query parameters
    Hostile("decision-id-nul", 404, "path", method="GET", path="/v1/decisions/%00", headers={}),
    Hostile("decision-id-not-hex", 404, "id", method="GET", path="/v1/decisions/²³", headers={}),
    Hostile("decision-id-too-long", 404, "id", method="GET", path="/v1/decisions/" + "a" * 5000, headers={}),
    Hostile("report-run-nul", 400, "run", method="GET", path=REPORT, headers={}, params={"run": f"a{NUL}b"}),
    Hostile("report-dataset-nul", 400, "dataset", method="GET", path=REPORT, headers={}, params={"dataset": NUL}),
    Hostile("report-bad-mode", 400, "mode", method="GET", path=REPORT, headers={}, params={"mode": "telepathic"}),
    Hostile("report-since-not-a-date", 400, "since", method="GET", path=REPORT, headers={}, params={"since": "yesterday"}),
    Hostile("report-until-nul", 400, "until", method="GET", path=REPORT, headers={}, params={"until": f"2025{NUL}"}),
]


def test_the_catalogue_is_large_and_distinct():
    assert len(CATALOGUE) >= 40
    assert len({item.id for item in CATALOGUE}) == len(CATALOGUE)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hostile_store(request, tmp_path_factory):
    """A migrated store (SQLite file, or a PostgreSQL schema) with keys, shared by the module's tests."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'store.sqlite3'}"
        yield url, migrated_keys(url)
        return
    database = request.getfixturevalue("postgres_database")
    schema = f"h_{secrets.token_hex(6)}"
    with database.connect() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = database.url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    try:
        yield url, migrated_keys(url)
    finally:
        with database.connect() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture(scope="module")
def hostile_app(hostile_store, vocab):
    """(client, keys, counting model, store url) for an app that takes bodies up to MAX_BODY bytes."""
    url, keys = hostile_store
    model = FakeModel(vocab, random_logits(0))
    with TestClient(build_app(url, model, max_body_bytes=MAX_BODY)) as client:
        yield client, keys, model, url


def stored_rows(url: str) -> dict[str, int]:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            tables = ("decision_groups", "documents", "questions", "answers", "labels", "label_history")
            return {t: connection.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}
    finally:
        engine.dispose()


def send(client, keys, item: Hostile):
    headers = {**item.headers, **bearer(keys[item.key])}
    return client.request(item.method, item.path, content=item.raw(), headers=headers, params=item.params)


@pytest.mark.parametrize("item", CATALOGUE, ids=[item.id for item in CATALOGUE])
def test_hostile_input_is_refused_by_name(hostile_app, item):
    client, keys, model, url = hostile_app
    reply = send(client, keys, item)
    assert reply.status_code == item.status, reply.text[:500]
    assert reply.headers["content-type"].startswith("application/json")
    error = reply.json()
    assert set(error) == {"status", "field", "problem"} and error["status"] == item.status
    assert error["field"] == item.field, error
    assert error["problem"] and "Traceback" not in error["problem"]
    assert model.calls == 0 and model.prefixes == [], "the model ran for a refused request"
    assert set(stored_rows(url).values()) == {0}, "a refused request left rows in the store"


def test_the_service_still_decides_after_the_catalogue(hostile_app):
    """The same app, after every hostile input, decides a good request (and only now runs the model)."""
    client, keys, model, url = hostile_app
    reply = client.post("/v1/decisions", content=json.dumps(BASE), headers={"content-type": "application/json", **bearer(keys["decide"])})
    assert reply.status_code == 201, reply.text
    assert model.calls > 0 and stored_rows(url)["decision_groups"] == 1


DASHBOARD = [
    ("/dashboard/compare?a=²&b=1", 200),  # int() reads "²" as 2: such an id is no run's
    ("/dashboard/compare?a=99999999999999999999999", 200),
    ("/dashboard/runs/99999999999999999999999", 404),  # past SQLite's 64-bit integers
    ("/dashboard/runs/4294967296/calibration", 404),  # past PostgreSQL's 32-bit integers
    ("/dashboard/runs/0", 404),
    ("/dashboard/runs/1/questions/%00", 404),
    ("/dashboard/runs/99999999999999999999999/questions/days", 404),
    ("/dashboard/decisions/%00", 404),
    ("/dashboard/decisions/" + "f" * 5000, 404),
    ("/dashboard/runs/1?x=%00", 400),
]


@pytest.mark.parametrize(("page", "status"), DASHBOARD, ids=[page for page, _ in DASHBOARD])
def test_dashboard_parameters_never_reach_a_server_error(hostile_app, page, status):
    client, keys, model, url = hostile_app
    signed_in = client.post("/dashboard/login", data={"key": keys["read"], "next": "/dashboard"}, follow_redirects=False)
    assert signed_in.status_code == 303
    reply = client.get(page, follow_redirects=False)
    assert reply.status_code == status, reply.text[:300]


@pytest.fixture
def decided(store_url, vocab):
    """A client over a store (both kinds) holding one decision, and the read key."""
    keys = migrated_keys(store_url)
    with TestClient(build_app(store_url, FakeModel(vocab, random_logits(1)))) as client:
        reply = client.post("/v1/decisions", content=json.dumps(BASE), headers={"content-type": "application/json", **bearer(keys["decide"])})
        assert reply.status_code == 201, reply.text
        yield client, keys["read"]


@pytest.mark.parametrize(
    ("params", "groups"),
    [
        ({"since": "0001-01-01T00:00:00+05:00"}, 1),  # before year 1 in UTC: no lower bound
        ({"until": "9999-12-31T23:59:59-05:00"}, 1),  # after year 9999 in UTC: no upper bound
        ({"since": "9999-12-31T23:59:59-05:00"}, 0),
        ({"until": "0001-01-01T00:00:00+05:00"}, 0),
        ({"since": "0001-01-01", "until": "9999-12-31T23:59:59.999999"}, 1),
    ],
    ids=["since-year-0", "until-year-10000", "since-year-10000", "until-year-0", "both-ends"],
)
def test_date_filters_at_the_ends_of_time_are_clamped(decided, params, groups):
    client, read_key = decided
    reply = client.get(REPORT, params=params, headers=bearer(read_key))
    assert reply.status_code == 200, reply.text
    assert reply.json()["groups"] == groups
