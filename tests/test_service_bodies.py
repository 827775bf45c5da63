"""Each wire body is one Struct: the handler decodes with it and the OpenAPI document is generated from it."""

from __future__ import annotations

import inspect
import json

import pytest
from litestar.testing import TestClient

from decision_engine.service.bodies import read_labels, read_submission
from decision_engine.service.openapi import inline_schema
from decision_engine.service.wire import DecisionSubmission, LabelsUpdate
from decision_engine.validation import Limits
from service_helpers import bearer, build_app, migrated_keys, sample_request


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'decisions.sqlite3'}"


@pytest.fixture
def keys(url) -> dict[str, str]:
    return migrated_keys(url)


@pytest.fixture
def app(url, keys, tiny_backend):
    return build_app(url, tiny_backend)


def request_body(spec: dict, path: str, method: str) -> dict:
    return spec["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


def as_served(node):
    """A schema as the OpenAPI document serves it: JSON, with keys whose value is null left out."""
    if isinstance(node, dict):
        return {key: as_served(value) for key, value in node.items() if value is not None}
    if isinstance(node, list):
        return [as_served(item) for item in node]
    return node


def test_the_documented_bodies_are_the_decoded_structs(app):
    body, labels = sample_request()
    _, submission = read_submission(json.dumps(body | {"dataset": "leases"}).encode(), Limits())
    assert type(submission) is DecisionSubmission and submission.dataset == "leases"
    assert type(read_labels(json.dumps({"labels": labels}).encode())) is LabelsUpdate
    with TestClient(app) as client:
        spec = client.get("/schema/openapi.json").json()
    assert request_body(spec, "/v1/decisions", "post") == as_served(inline_schema(DecisionSubmission))
    assert request_body(spec, "/v1/decisions/{decision_id}/labels", "put") == as_served(inline_schema(LabelsUpdate))


def test_label_values_are_documented_as_answers_but_read_as_any_json():
    schema = inline_schema(LabelsUpdate)["properties"]["labels"]["additionalProperties"]
    assert schema == {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"}]}
    assert read_labels(b'{"labels": {"a": 1.5, "b": null}}').labels == {"a": 1.5, "b": None}  # the store names them


def test_a_documented_limit_is_the_one_enforced(app, keys):
    with TestClient(app) as client:
        spec = client.get("/schema/openapi.json").json()
        dataset = request_body(spec, "/v1/decisions", "post")["properties"]["dataset"]
        longest = next(option["maxLength"] for option in dataset["anyOf"] if "maxLength" in option)
        body, _ = sample_request()

        def post(tag: str):
            headers = {"content-type": "application/json", **bearer(keys["decide"])}
            return client.post("/v1/decisions", content=json.dumps(body | {"dataset": tag}), headers=headers)

        assert post("d" * longest).status_code == 201
        refused = post("d" * (longest + 1))
        assert refused.status_code == 400 and refused.json()["field"] == "dataset"


def test_handlers_are_given_their_parts_not_the_app_state(app):
    assert {"settings", "store", "batcher", "model_version", "dashboard_sessions"} <= set(app.dependencies)
    handlers = [handler for route in app.routes for handler in route.route_handlers]
    assert len(handlers) > 10
    for handler in handlers:
        parameters = inspect.signature(handler.fn).parameters
        assert "state" not in parameters, handler.handler_name
