"""msgspec's "- at `$...`" paths become the field a RequestError names, wherever a body is decoded."""

from __future__ import annotations

import msgspec
import pytest

from decision_engine.field_errors import field_error
from decision_engine.requests_file import request_item
from decision_engine.service.wire import DecisionSubmission, LabelsUpdate
from decision_engine.types import DecisionRequest

QUESTION = b'{"id": "a", "text": "Is it so?", "schema": {"type": "boolean"}}'


def decode_error(raw: bytes, kind: type) -> msgspec.ValidationError:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.json.decode(raw, type=kind)
    return caught.value


@pytest.mark.parametrize(
    ("raw", "kind", "field", "problem"),
    [
        pytest.param(b'{"labels": []}', LabelsUpdate, "labels", "Expected `object`, got `array`", id="nested"),
        pytest.param(b"[]", LabelsUpdate, "request", "Expected `object`, got `array`", id="top-level"),
        pytest.param(b'{"labels": {}, "x": 1}', LabelsUpdate, "request", "unknown field `x`", id="unknown-key"),
        pytest.param(
            b'{"document": {"text": 1}, "questions": []}', DecisionRequest, "document.text", "got `int`", id="deep"
        ),
        pytest.param(
            b'{"document": {"text": "d"}, "questions": [' + QUESTION + b'], "rules": [{"if": {"a": [1.5]}}]}',
            DecisionRequest,
            "rules[0].if[...][0]",
            "got `float`",
            id="dict-value-in-list",
        ),
        pytest.param(
            b'{"document": {"text": "d"}, "questions": [' + QUESTION + b'], "dataset": ""}',
            DecisionSubmission,
            "dataset",
            "length >= 1",
            id="filing-tag",
        ),
    ],
)
def test_the_path_becomes_the_field(raw, kind, field, problem):
    error = field_error(decode_error(raw, kind))
    assert error.field == field
    assert problem in error.problem and " - at " not in error.problem


def test_a_message_without_a_path_names_the_default():
    error = field_error(msgspec.ValidationError("Expected `int`, got `str`"), default="labels")
    assert (error.field, error.problem) == ("labels", "Expected `int`, got `str`")


def test_a_bad_id_in_a_requests_file_names_the_id():
    item = request_item({"id": 1.5, "document": {"text": "d"}, "questions": []}, line=3)
    assert item.request is None and item.error.field == "id"
    assert "got `float`" in item.error.problem and " - at " not in item.error.problem
