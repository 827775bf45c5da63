"""Training data laid out by worker processes, and the bf16 autocast option."""

from __future__ import annotations

import json
import random

import pytest
import torch

from decision_engine.backends.native import base_tokenizer
from decision_engine.cli import main
from decision_engine.datasets.linked_groups import generate_groups
from decision_engine.model.loader import load_checkpoint
from decision_engine.training.config import PRESETS, TrainConfig
from decision_engine.training.preparation import ExamplePreparer, LayoutSpec, PlannedLine, plan_epoch

SPEC = LayoutSpec(max_positions=512, context_tokens=128, split_digits=False, retrieval="lexical")


def test_workers_lay_out_the_same_examples_as_the_training_process():
    lines = generate_groups("train", 40, seed=3)
    planned = plan_epoch(lines, independent_share=0.5, rng=random.Random(0))
    assert any(p.single is not None for p in planned) and any(p.single is None for p in planned)
    with ExamplePreparer(SPEC, workers=0) as here:
        expected = here.finish(here.start(planned))
    with ExamplePreparer(SPEC, workers=1) as pool:
        started = pool.start(planned)
        got = pool.finish(started)
    assert len(expected) > len(lines)  # joint blocks plus some single-question ones
    assert got == expected


def test_plan_draws_single_questions_at_the_configured_share():
    lines = [{"id": str(i)} for i in range(2000)]
    none = plan_epoch(lines, 0.0, random.Random(1))
    every = plan_epoch(lines, 1.0, random.Random(1))
    quarter = plan_epoch(lines, 0.25, random.Random(1))
    assert all(p.single is None for p in none)
    assert all(0 <= p.single < 1 for p in every)
    assert 0.2 < sum(p.single is not None for p in quarter) / len(lines) < 0.3


def test_bf16_autocast_trains_and_saves_fp32_weights(tmp_path):
    config = tmp_path / "bf16.json"
    config.write_text(json.dumps(TrainConfig.load("smoke").to_dict() | {"bf16": True, "max_steps": 2}))
    out = tmp_path / "run"
    assert main(["train", "--config", str(config), "--out", str(out), "--retrieval", "leading"]) == 0
    model, meta = load_checkpoint(out)
    assert meta["training"]["steps"] == 2
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())


def test_the_gpu_preset_fits_one_device_call():
    """The GPU stage stops on its own well inside a 10-minute device command, and lays out data in workers."""
    gpu = TrainConfig(**PRESETS["gpu"])
    assert gpu.max_minutes is not None and gpu.max_minutes <= 7
    assert gpu.data_workers > 0 and gpu.bf16


def test_learning_rate_decays_over_the_time_limit_when_it_comes_first():
    from decision_engine.training.loop import learning_rate

    cfg = TrainConfig(learning_rate=1e-3, warmup_steps=10, max_minutes=2.0)
    assert learning_rate(cfg, 0, 1000, 0.0) == 1e-3 / 10  # warming up
    assert abs(learning_rate(cfg, 100, 1000, 0.0) - 0.9e-3) < 1e-12  # by steps
    assert abs(learning_rate(cfg, 100, 1000, 60.0) - 0.5e-3) < 1e-12  # half the time gone
    assert learning_rate(cfg, 100, 1000, 500.0) == 0.05e-3  # past the limit: the floor
    untimed = TrainConfig(learning_rate=1e-3, warmup_steps=10, max_minutes=None)
    assert abs(learning_rate(untimed, 100, 1000, 1e6) - 0.9e-3) < 1e-12



def _nda_line(evidence_first: bool = False) -> dict:
    """A long contract whose one evidence sentence shares few words with the question asked of it."""
    filler = [
        f"Clause {i}. The Recipient shall hold Confidential Information of the Discloser in confidence and "
        f"shall not share it with employees except as clause {i} permits." for i in range(1, 41)
    ]
    evidence = "The receiving side can pass zanzibar material along to its staff upon request."
    sentences = [evidence, *filler] if evidence_first else [*filler[:30], evidence, *filler[30:]]
    text = " ".join(sentences)
    start = text.index(evidence)
    question = "Recipient may share Confidential Information with employees."
    return {
        "id": "nda-1",
        "document": {"text": text},
        "questions": [{"id": "nda-1", "text": question, "schema": {"type": "string", "enum": ["yes", "no"]}}],
        "labels": {"nda-1": "yes"},
        "evidence": {"nda-1": [[start, start + len(evidence)]]},
    }


def _shows_zanzibar(example) -> bool:
    word = base_tokenizer()("zanzibar", add_special_tokens=False)["input_ids"]
    ids = list(example.prefix.token_ids)
    return any(ids[i : i + len(word)] == word for i in range(len(ids)))


def test_gold_first_lines_show_the_evidence_plain_retrieval_leaves_out():
    line = _nda_line()
    with ExamplePreparer(SPEC, workers=0, gold_first=True) as preparer:
        plain, gold = preparer.finish([PlannedLine(line, None, False), PlannedLine(line, None, True)])
    assert not _shows_zanzibar(plain)
    assert _shows_zanzibar(gold)
    assert plain.gold == gold.gold  # the same answer, only the context differs


def test_gold_first_workers_lay_out_the_same_examples():
    planned = [PlannedLine(_nda_line(), 0.0, True), PlannedLine(_nda_line(True), None, False)]
    with ExamplePreparer(SPEC, workers=0, gold_first=True) as here:
        expected = here.finish(here.start(planned))
    with ExamplePreparer(SPEC, workers=1, gold_first=True) as pool:
        assert pool.finish(pool.start(planned)) == expected


def test_plan_draws_gold_first_only_for_lines_with_evidence():
    lines = [{"id": str(i), **({"evidence": {}} if i % 2 else {})} for i in range(2000)]
    half = plan_epoch(lines, 0.25, random.Random(1), gold_evidence_share=0.5)
    assert not any(p.gold_first for p in half if "evidence" not in p.line)
    assert 0.4 < sum(p.gold_first for p in half) / 1000 < 0.6
    # A share of 0 draws nothing more, so earlier presets plan exactly as before.
    assert [p.single for p in plan_epoch(lines, 0.25, random.Random(1))] == [
        p.single for p in plan_epoch(lines, 0.25, random.Random(1), gold_evidence_share=0.0)
    ]
    assert not any(p.gold_first for p in plan_epoch(lines, 0.25, random.Random(1)))


def test_gold_first_needs_ranked_retrieval_and_a_share_in_range():
    leading = LayoutSpec(max_positions=512, context_tokens=128, split_digits=False, retrieval="leading")
    with pytest.raises(ValueError, match="lexical or hybrid"):
        ExamplePreparer(leading, workers=0, gold_first=True)
    with pytest.raises(ValueError, match="gold_evidence_share"):
        TrainConfig(gold_evidence_share=1.5)
