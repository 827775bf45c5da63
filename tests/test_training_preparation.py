"""Training data laid out by worker processes, and the bf16 autocast option."""

from __future__ import annotations

import json
import random

import torch

from decision_engine.cli import main
from decision_engine.datasets.linked_groups import generate_groups
from decision_engine.model.loader import load_checkpoint
from decision_engine.training.config import PRESETS, TrainConfig
from decision_engine.training.preparation import ExamplePreparer, LayoutSpec, plan_epoch

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


def test_workers_lay_out_per_question_evidence_with_the_trained_pointer_they_are_given():
    from dataclasses import replace

    from decision_engine.reader.span_pointer import SpanPointer

    pointer = SpanPointer()
    with torch.no_grad():
        pointer.question.weight.mul_(-1.0)  # not the untrained pointer: the workers must use this one
    spec = replace(SPEC, pointer=pointer.state_dict())
    planned = plan_epoch(generate_groups("train", 6, seed=4), independent_share=0.0, rng=random.Random(0))
    with ExamplePreparer(spec, workers=0) as here:
        expected = here.finish(here.start(planned))
    with ExamplePreparer(spec, workers=1) as pool:
        got = pool.finish(pool.start(planned))
    with ExamplePreparer(replace(SPEC, pointer=SpanPointer().state_dict()), workers=0) as untrained:
        other = untrained.finish(untrained.start(planned))
    assert all(e.prefix.positions is not None for e in expected)
    assert got == expected and other != expected


def test_workers_lay_out_the_same_examples_from_span_vectors_embedded_here():
    """The embedder a GPU run hands the preparer: each chunk's spans embedded in this process, in one
    batch, and the workers lay the groups out from those vectors as they would from their own."""
    from dataclasses import replace

    from decision_engine.reader.span_pointer import SpanPointer
    from decision_engine.retrieval.embedder import SpanEmbedder

    spec = replace(SPEC, pointer=SpanPointer().state_dict())
    planned = plan_epoch(generate_groups("train", 6, seed=5), independent_share=0.0, rng=random.Random(0))
    with ExamplePreparer(spec, workers=0) as here:
        expected = here.finish(here.start(planned))
    embedder = SpanEmbedder(cache_size=0, batch_size=64)
    with ExamplePreparer(spec, workers=1, embedder=embedder) as pool:
        vectors = pool._span_vectors(planned)
        got = pool.finish(pool.start(planned))
    assert len(vectors) == len({p.line["document"]["text"] for p in planned})
    assert all(len(spans) == len(v) > 0 for _, spans, v in vectors)
    assert got == expected

    class Reversed(SpanEmbedder):  # each document's vectors in the wrong order: the workers must read them
        def span_vectors(self, documents):
            return [(text, spans, v.flip(0)) for text, spans, v in super().span_vectors(documents)]

    with ExamplePreparer(spec, workers=1, embedder=Reversed(cache_size=0)) as pool:
        assert pool.finish(pool.start(planned)) != expected


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
