"""`decision-engine decide samples/<file> --json` gives schema-valid answers in every mode."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from decision_engine import models
from decision_engine.cli import main
from decision_engine.requests_file import read_requests
from decision_engine.rules import RuleSet
from decision_engine.types import DecisionResponse
from decision_engine.values import value_problem

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "samples").glob("*.jsonl"))


@pytest.fixture(scope="module")
def default_model():
    return models.open_model()


def test_there_are_realistic_samples_with_labels():
    assert len(SAMPLES) >= 3
    items = [item for path in SAMPLES for item in read_requests(path)]
    assert all(item.error is None for item in items), [str(i.error) for i in items if i.error]
    assert all(item.labels and set(item.labels) == {q.id for q in item.request.questions} for item in items)
    kinds = {q.schema.type + (q.schema.format or "") for item in items for q in item.request.questions}
    assert {"string", "boolean", "integer", "stringdate"} <= kinds


@pytest.mark.parametrize(
    "mode, model_name",
    [("joint", "default"), ("joint", "tiny"), ("independent", "tiny"), ("sequential", "tiny")],
)
def test_decide_samples_in_every_mode(mode, model_name, request, monkeypatch, capsys):
    """The bundled model once; the modes through a tiny model to keep the suite fast."""
    model = request.getfixturevalue("default_model" if model_name == "default" else "tiny_backend")
    monkeypatch.setattr(models, "open_model", lambda *a, **k: model)
    for path in SAMPLES:
        assert main(["decide", str(path), "--json", "--mode", mode]) == 0
        lines = capsys.readouterr().out.splitlines()
        items = list(read_requests(path))
        assert len(lines) == len(items)
        for item, line in zip(items, lines):
            response = msgspec.json.decode(line, type=DecisionResponse)
            assert msgspec.json.decode(line)["request_id"] == item.id
            assert response.mode == mode
            assert [a.id for a in response.answers] == [q.id for q in item.request.questions]
            for q, a in zip(item.request.questions, response.answers):
                assert value_problem(q.schema, a.value) is None
            schemas = [q.schema for q in item.request.questions]
            rules = RuleSet.compile(schemas, [q.id for q in item.request.questions], item.request.rules)
            assert rules.violations([a.value for a in response.answers]) == []


def test_table_output_shows_every_question(tiny_backend, monkeypatch, capsys):
    monkeypatch.setattr(models, "open_model", lambda *a, **k: tiny_backend)
    assert main(["decide", str(SAMPLES[0])]) == 0
    out = capsys.readouterr().out
    for item in read_requests(SAMPLES[0]):
        assert f"== {item.id}" in out
        assert all(f"{q.id}:" in out for q in item.request.questions)


def test_model_bundled_names_the_bundled_weights_as_the_training_commands_do(capsys):
    def answers() -> list:
        return [msgspec.json.decode(line)["answers"] for line in capsys.readouterr().out.splitlines()]

    assert main(["decide", str(SAMPLES[0]), "--json", "--model", "bundled"]) == 0
    named = answers()
    assert main(["decide", str(SAMPLES[0]), "--json"]) == 0
    assert named == answers() and named
