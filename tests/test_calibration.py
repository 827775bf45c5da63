"""Confidence calibration: the Platt fit, its record in a checkpoint, and the engine applying it."""

from __future__ import annotations

import json
import random

import pytest

from decision_engine.backends.native import NativeBackend
from decision_engine.calibration import Calibration, fit_calibration, fit_platt
from decision_engine.cli import main
from decision_engine.engine import DecisionEngine
from decision_engine.model.loader import random_model
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.validation import request_from_object


def _overconfident(n: int, seed: int = 0) -> list[tuple[float, bool]]:
    """Answers claimed at 0.9 that are right 60% of the time, and at 0.6 right 40%."""
    rng = random.Random(seed)
    return [(0.9, rng.random() < 0.6) for _ in range(n)] + [(0.6, rng.random() < 0.4) for _ in range(n)]


def test_a_platt_fit_brings_an_overconfident_model_to_its_accuracy():
    a, b = fit_platt(_overconfident(2000))
    calibration = Calibration({"joint:enum": (a, b)})
    assert calibration.apply("enum", 0.9) == pytest.approx(0.6, abs=0.03)
    assert calibration.apply("enum", 0.6) == pytest.approx(0.4, abs=0.03)
    assert calibration.apply("enum", 0.95) > calibration.apply("enum", 0.9)  # monotone: the choice never changes
    assert calibration.apply("enum", 0.9, "sequential") == calibration.apply("enum", 0.9)  # sequential reads as joint
    assert calibration.apply("enum", 0.9, "independent") == 0.9  # no map for that mode: raw
    assert calibration.apply("boolean", 0.9) == 0.9


def test_kinds_with_too_few_answers_keep_their_raw_confidence():
    answers = [("joint:enum", c, ok) for c, ok in _overconfident(100)] + [("joint:date", 0.9, True)] * 10
    fitted = fit_calibration(answers, min_answers=50)
    assert set(fitted.maps) == {"joint:enum"}
    assert Calibration.from_dict(fitted.to_dict()) == fitted
    assert Calibration.from_dict(None) is None


def test_the_engine_calibrates_only_the_answers_the_model_chose(vocab):
    backend = NativeBackend(random_model(BlockDiffusionConfig.from_name("tiny"), seed=4), vocab, "tiny-calibrated")
    request = request_from_object({
        "document": {"text": "The supplier signed on 2024-03-01."},
        "questions": [
            {"id": "signed", "text": "Did the supplier sign?", "schema": {"type": "boolean"}},
            {"id": "kind", "text": "Which kind?", "schema": {"type": "string", "enum": ["a", "b"]}},
        ],
        "rules": [{"if": {"signed": [True, False]}, "then": {"kind": ["b"]}}],
    })
    raw = DecisionEngine(backend).decide(request, "joint")
    backend.calibration = Calibration({"joint:boolean": (0.0, 0.0)})  # every chosen boolean: 0.5
    calibrated = DecisionEngine(backend).decide(request, "joint")
    assert [a.value for a in calibrated.answers] == [a.value for a in raw.answers]
    signed, kind = calibrated.answers
    assert signed.fixed_by == "model" and signed.confidence == pytest.approx(0.5)
    assert kind.fixed_by == "rule" and kind.confidence <= signed.confidence  # bounded by what fixed it


def test_calibrate_writes_a_checkpoint_that_records_its_fit(tmp_path, capsys):
    checkpoint = tmp_path / "smoke"
    assert main(["train", "--config", "smoke", "--out", str(checkpoint), "--retrieval", "leading"]) == 0
    out = tmp_path / "calibrated"
    assert main(["calibrate", "--model", str(checkpoint), "--out", str(out), "--groups", "3"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    meta = json.loads((out / "config.json").read_text())
    assert meta["training"]["calibration"]["generated_groups"] == 3
    assert sum(printed["answers"].values()) > 0
    assert (out / "model.safetensors").read_bytes() == (checkpoint / "model.safetensors").read_bytes()
    reworded = tmp_path / "reworded"
    assert main(["calibrate", "--model", str(checkpoint), "--out", str(reworded), "--groups", "2", "--reword"]) == 0
    assert json.loads((reworded / "config.json").read_text())["training"]["calibration"]["reworded"] is True
    assert "reworded" not in meta["training"]["calibration"]

    # --kinds fits only those kinds again; the checkpoint's other maps stay as they were
    planted = {"joint:enum": {"a": 0.25, "b": -1.0}, "joint:boolean": {"a": 9.0, "b": 9.0}}
    meta["calibration"] = planted
    (out / "config.json").write_text(json.dumps(meta))
    again = tmp_path / "booleans-again"
    assert main(["calibrate", "--model", str(out), "--out", str(again), "--groups", "3", "--kinds", "boolean"]) == 0
    refitted = json.loads((again / "config.json").read_text())
    assert refitted["calibration"]["joint:enum"] == planted["joint:enum"]
    record = refitted["training"]["calibration"]
    assert record["generated_groups"] == 3 and "kinds" not in record  # the first fit's record stays
    assert record["refitted"][0]["kinds"] == ["boolean"]
    assert set(record["refitted"][0]["answers"]) <= {"joint:boolean", "independent:boolean"}
    # three groups give too few booleans for a map: the one there stays, and the record says so
    assert sum(record["refitted"][0]["answers"].values()) < 2 * 50
    assert refitted["calibration"]["joint:boolean"] == planted["joint:boolean"]
    assert record["refitted"][0]["kept_for_too_few_answers"] == ["joint:boolean"]


def test_calibrate_needs_material(tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "x"), "--groups", "0"]) == 2
    assert "--contractnli" in capsys.readouterr().err


def test_calibrate_names_an_unknown_kind(tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "x"), "--groups", "1", "--kinds", "compared,money"]) == 2
    assert "'money'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_reworded_group_keeps_its_values_negations_and_labels():
    from decision_engine.datasets.linked_groups import generate_groups
    from decision_engine.grounding.mentions import find_mentions
    from decision_engine.training.calibration_fit import reworded_line

    for line in generate_groups("train", 8, seed=3):
        reworded = reworded_line(line, random.Random(0))
        before, after = line["document"]["text"], reworded["document"]["text"]
        assert len(after) < len(before)  # words were left out
        assert [before[m.start : m.end] for m in find_mentions(before)] == [after[m.start : m.end] for m in find_mentions(after)]
        for old, new in zip(line["questions"], reworded["questions"]):
            kept = new["text"].split()
            assert all(w in kept for w in old["text"].split() if any(c.isdigit() for c in w) or w.lower() in ("not", "no"))
            assert (new["id"], new["schema"]) == (old["id"], old["schema"])
        assert reworded["labels"] == line["labels"] and reworded["rules"] == line["rules"]
        assert line["document"]["text"] == before  # the line itself is left as it was
