"""The bundled samples decide exactly as recorded: refactoring the engine must not change a decision."""

from __future__ import annotations

import json

import pytest

from sample_decisions import FIXTURE, decide_samples


@pytest.fixture(scope="module")
def bundled_engine():
    from decision_engine.factory import build_engine

    return build_engine()


@pytest.fixture(scope="module")
def recorded():
    return json.loads(FIXTURE.read_text())


def test_bundled_samples_decide_as_recorded(recorded, bundled_engine):
    assert bundled_engine.model.version == recorded["model_version"], (
        "the bundled model changed: rerun `python tests/sample_decisions.py` and review the new decisions"
    )
    now = decide_samples(bundled_engine)["decisions"]
    assert now.keys() == recorded["decisions"].keys()
    for sample_id, modes in recorded["decisions"].items():
        for mode, answers in modes.items():
            got = now[sample_id][mode]
            assert [(a["id"], a["value"], a["step"], a["evidence"]) for a in got] == [
                (a["id"], a["value"], a["step"], a["evidence"]) for a in answers
            ], f"{sample_id} in {mode} mode"
            for a, b in zip(got, answers):
                assert a["confidence"] == pytest.approx(b["confidence"], abs=1e-4), f"{sample_id} {mode} {a['id']}"
