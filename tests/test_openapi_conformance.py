"""Schemathesis over every operation of the service's OpenAPI: each response's status, content type, headers
and body are ones the document declares for that operation, and none is a server error."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service_helpers import bearer, build_app, migrated_keys, sample_request

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
OPERATIONS = {
    "POST /v1/decisions", "GET /v1/decisions", "GET /v1/decisions/{decision_id}", "DELETE /v1/decisions/{decision_id}",
    "PUT /v1/decisions/{decision_id}/labels", "GET /v1/runs", "GET /v1/reports/accuracy", "GET /healthz", "GET /readyz",
}
EXAMPLES = 10  # per operation and generation mode: enough to reach every documented status, well under a minute


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_backend):
    """The OpenAPI of a service over a tiny model and a SQLite store, an admin key, and a stored decision."""
    from litestar.testing import TestClient

    url = f"sqlite:///{tmp_path_factory.mktemp('conformance') / 'store.sqlite3'}"
    keys = migrated_keys(url)
    app = build_app(url, tiny_backend)
    body, _ = sample_request()
    with TestClient(app) as client:  # one decision to read, label and delete by a real id
        stored = client.post(
            "/v1/decisions", content=json.dumps(body), headers={"content-type": "application/json", **bearer(keys["admin"])}
        )
        assert stored.status_code == 201, stored.text
    return schemathesis.openapi.from_asgi("/schema/openapi.json", app), keys["admin"], stored.json()["id"]


def _run(operation, mode: GenerationMode, headers: dict[str, str], **fixed) -> Counter:
    """Send EXAMPLES generated requests to one operation and check each response; the statuses seen."""
    sent: Counter = Counter()

    @given(case=operation.as_strategy(generation_mode=mode, **fixed))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def check(case):
        response = case.call(headers={**(case.headers or {}), **headers})
        case.validate_response(response, checks=CHECKS)
        sent[response.status_code] += 1

    check()
    return sent


def test_every_response_is_one_the_openapi_declares(served):
    schema, admin, decision_id = served
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.label for op in operations} == OPERATIONS
    body, labels = sample_request()
    seen: dict[str, Counter] = {}
    for operation in sorted(operations, key=lambda op: op.method == "delete"):  # the stored decision goes last
        statuses = seen.setdefault(operation.label, Counter())
        has_inputs = bool(list(operation.iter_parameters()) or operation.body)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE) if has_inputs else (GenerationMode.POSITIVE,):
            statuses += _run(operation, mode, bearer(admin))
        real = {"path_parameters": {"decision_id": decision_id}} if "{decision_id}" in operation.path else {}
        if real:  # the same operation on a decision that exists
            statuses += _run(operation, GenerationMode.POSITIVE, bearer(admin), **real)
        if operation.method in ("post", "put"):  # a body the service takes, with generated headers and ids
            valid = {"labels": labels} if operation.method == "put" else body
            statuses += _run(operation, GenerationMode.POSITIVE, bearer(admin), body=valid, **real)
    # the generated requests reached the operations' successes, not only their refusals
    for label, status in [
        ("POST /v1/decisions", 201), ("GET /v1/decisions", 200), ("GET /v1/decisions/{decision_id}", 200),
        ("PUT /v1/decisions/{decision_id}/labels", 200), ("DELETE /v1/decisions/{decision_id}", 200),
        ("GET /v1/runs", 200), ("GET /v1/reports/accuracy", 200),
    ]:
        assert seen[label][status], (label, dict(seen[label]))
    assert sum(seen["GET /v1/decisions/{decision_id}"].values()) >= 2 * EXAMPLES
