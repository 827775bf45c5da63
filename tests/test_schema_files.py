"""The JSON Schema files in schemas/ are generated from the Structs and must not drift."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from decision_engine.cli import main
from decision_engine.schema_files import SCHEMA_FILES, render, stale

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


def test_schema_files_match_the_structs():
    assert stale(SCHEMAS) == [], "run: decision-engine schemas --out schemas"


def test_drift_is_detected(tmp_path):
    for name, struct in SCHEMA_FILES.items():
        (tmp_path / name).write_text(render(struct))
    assert stale(tmp_path) == []
    path = tmp_path / "decision_request.schema.json"
    schema = json.loads(path.read_text())
    schema["$defs"]["Question"]["properties"].pop("text")
    path.write_text(json.dumps(schema))
    assert stale(tmp_path) == ["decision_request.schema.json"]
    assert main(["schemas", "--check", "--out", str(tmp_path)]) == 1


def test_request_schema_states_the_limits():
    schema = json.loads((SCHEMAS / "decision_request.schema.json").read_text())
    questions = schema["$defs"]["DecisionRequest"]["properties"]["questions"]
    assert questions["maxItems"] == 8 and questions["minItems"] == 1
    assert msgspec.json.decode((SCHEMAS / "decision_response.schema.json").read_bytes())["$ref"].endswith("DecisionResponse")
