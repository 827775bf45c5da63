"""The benchmark machinery on the tiny random model: report contract, ratios, cache off, workload."""

from __future__ import annotations

import json

import pytest

from decision_engine.bench import runner
from decision_engine.bench.commands import benchmark
from decision_engine.bench.runner import BenchConfig, sweep
from decision_engine.bench.uncached import UncachedBackend
from decision_engine.bench.workload import TARGET_CHARS, build_workload
from decision_engine.engine import DecisionEngine
from decision_engine.validation import request_from_object


def _row(report: dict, mode: str, size: int) -> dict:
    return next(row for row in report["modes"][mode] if row["batch_size"] == size)


def test_report_has_the_contract_fields_and_ratios_of_its_figures(tiny_backend):
    report = json.loads(json.dumps(benchmark(
        DecisionEngine(tiny_backend), 2, BenchConfig(batch_sizes=(1, 2), cache_groups=1, latency_groups=2), device="cpu", quick=True
    )))  # fmt: skip
    for key in ("device", "precision", "commit", "date", "model", "modes", "prefix_cache", "ratios", "best", "workload"):
        assert key in report
    assert report["device"] == "cpu" and report["model"] == "tiny-random"
    assert report["commit"] is None or len(report["commit"]) == 40
    for mode in ("joint", "independent", "sequential"):
        assert report["modes"][mode][0]["batch_size"] == 1
        for row in report["modes"][mode]:
            assert row["groups"] == 2 and row["questions"] == 16
            assert row["groups_per_s"] == pytest.approx(row["groups"] / row["seconds"])
            assert 0 < row["latency_p50_ms"] <= row["latency_p95_ms"] and row["steps_per_group"] > 0
            split = row["prefix_ms_per_group"] + row["block_ms_per_group"] + row["other_ms_per_group"]
            assert split == pytest.approx(row["seconds"] * 1e3 / row["groups"])
            assert row["prefix_ms_per_group"] > 0 and row["block_ms_per_group"] > 0 and row["other_ms_per_group"] > 0
            assert row["ms_per_block_pass"] > 0

    ratios = report["ratios"]
    size = ratios["batch_size"]
    joint = _row(report, "joint", size)["groups_per_s"]
    assert ratios["joint_over_independent"] == pytest.approx(joint / _row(report, "independent", size)["groups_per_s"])
    assert ratios["joint_over_sequential"] == pytest.approx(joint / _row(report, "sequential", size)["groups_per_s"])
    cache = report["prefix_cache"]
    assert ratios["cache_on_over_off"] == pytest.approx(cache["on"]["groups_per_s"] / cache["off"]["groups_per_s"])
    assert ratios["cache_batch_size"] == cache["on"]["batch_size"] == 1
    assert cache["same_decisions"] is True
    latency = report["latency"]
    assert report["latency_cold_p50_ms"] == latency["cold_p50_ms"] > 0
    assert report["latency_warm_p50_ms"] == latency["warm_p50_ms"] > 0
    assert latency["cold_p50_ms"] <= latency["cold_p90_ms"] and latency["groups"] == 2
    for mode in ("joint", "independent", "sequential"):
        best = report["best"][mode]
        assert report["passes_per_group"][mode] == best["passes_per_group"] > 0
        assert report["steps_per_group"][mode] == best["steps_per_group"] >= best["passes_per_group"]
    assert ratios["triton_over_torch"] is None and report["kernels"] is None  # CUDA only
    for key, pair in ratios["by_batch_size"].items():
        assert pair["joint_over_independent"] == pytest.approx(
            _row(report, "joint", int(key))["groups_per_s"] / _row(report, "independent", int(key))["groups_per_s"]
        )


def test_prefix_cache_off_decides_the_same(tiny_backend):
    requests = [request_from_object(line) for line in build_workload(3, seed=5, target_chars=3000)]
    cached = DecisionEngine(tiny_backend).decide_batch(requests, "joint")
    uncached = DecisionEngine(UncachedBackend(tiny_backend)).decide_batch(requests, "joint")
    assert [[a.value for a in r.answers] for r in uncached] == [[a.value for a in r.answers] for r in cached]
    assert [r.steps for r in uncached] == [r.steps for r in cached]
    assert sum(r.steps for r in cached) > 0


def test_sweep_stops_each_mode_once_its_groups_per_second_stop_improving(monkeypatch):
    speeds = {"joint": {1: 1.0, 2: 2.0, 4: 1.5, 8: 3.0}, "sequential": {1: 1.0, 2: 0.5, 4: 9.0, 8: 9.0}}
    asked = []

    def fake_measure_modes(engine, requests, modes, size):
        asked.append((size, list(modes)))
        return {mode: ({"batch_size": size, "groups_per_s": speeds[mode][size]}, []) for mode in modes}

    monkeypatch.setattr(runner, "measure_modes", fake_measure_modes)
    rows = sweep(None, list(range(8)), ("joint", "sequential"), (1, 2, 4, 8), log=lambda line: None)
    assert [r["batch_size"] for r in rows["joint"]] == [1, 2, 4]
    assert [r["batch_size"] for r in rows["sequential"]] == [1, 2]
    assert asked == [(1, ["joint", "sequential"]), (2, ["joint", "sequential"]), (4, ["joint"])]
    rows = sweep(None, list(range(3)), ("joint",), (1, 2, 4, 8), log=lambda line: None)
    assert [r["batch_size"] for r in rows["joint"]] == [1, 2]  # no batch larger than the workload


def test_modes_take_turns_batch_by_batch(tiny_backend, monkeypatch):
    requests = [request_from_object(line) for line in build_workload(4, seed=5, target_chars=2000)]
    engine = DecisionEngine(tiny_backend)
    order = []
    decide_many = engine.decide_many
    monkeypatch.setattr(engine, "decide_many", lambda chunk, mode: order.append(mode) or decide_many(chunk, mode))
    measured = runner.measure_modes(engine, requests, ["joint", "independent", "sequential"], 2)
    assert order == ["joint", "independent", "sequential", "independent", "sequential", "joint"]
    for mode, (figures, values) in measured.items():
        assert figures["groups"] == 4 and len(values) == 4
        assert values == runner.measure(engine, requests, mode, 2)[1]  # the same decisions as a mode alone


def test_each_mode_reads_the_documents_afresh(tiny_backend, monkeypatch):
    requests = [request_from_object(line) for line in build_workload(2, seed=5, target_chars=2000)]
    engine = DecisionEngine(tiny_backend)
    events = []
    monkeypatch.setattr(runner, "clear_document_cache", lambda e: events.append("clear"))
    decide_many = engine.decide_many
    monkeypatch.setattr(engine, "decide_many", lambda chunk, mode: events.append(mode) or decide_many(chunk, mode))
    runner.measure_modes(engine, requests, ["joint", "independent"], 2)
    assert events == ["clear", "joint", "clear", "independent"]  # no mode finds what another one read


def test_cache_comparison_takes_turns_in_the_engines_precision(tiny_backend, monkeypatch):
    import torch

    requests = [request_from_object(line) for line in build_workload(3, seed=5, target_chars=2000)]
    engine = DecisionEngine(tiny_backend, dtype=torch.bfloat16)
    uncached = DecisionEngine(UncachedBackend(tiny_backend), dtype=torch.bfloat16)
    order = []
    for name, e in (("on", engine), ("off", uncached)):
        decide_many = e.decide_many
        monkeypatch.setattr(e, "decide_many", lambda chunk, mode, d=decide_many, n=name: order.append(n) or d(chunk, mode))
    on, on_values, off, off_values = runner.measure_cache_on_off(engine, uncached, requests, 1)
    assert order == ["on", "off", "off", "on", "on", "off"]
    assert on["groups"] == off["groups"] == 3 and on_values == off_values
    monkeypatch.undo()
    seen = []

    def fake_cache_on_off(cached, uncached, requests, batch_size):
        seen.append(uncached.dtype)
        return {"groups_per_s": 1.0}, [], {"groups_per_s": 1.0}, []

    monkeypatch.setattr(runner, "measure_cache_on_off", fake_cache_on_off)
    rows = {m: [{"batch_size": 1, "groups_per_s": 1.0}] for m in ("joint", "independent", "sequential")}
    monkeypatch.setattr(runner, "sweep", lambda *args, **kwargs: rows)
    monkeypatch.setattr(
        "decision_engine.bench.latency_split.cold_and_warm", lambda e, r: {"cold_p50_ms": 1.0, "warm_p50_ms": 1.0}
    )
    runner.run_bench(engine, requests, BenchConfig.quick(), log=lambda line: None)
    assert seen == [torch.bfloat16]  # the uncached side computes as the cached one does


def test_workload_has_eight_questions_over_contract_size_documents():
    lines = build_workload(4)
    assert lines == build_workload(4)
    assert len(lines) == 4 and all(len(line["questions"]) == 8 for line in lines)
    assert all(TARGET_CHARS <= len(line["document"]["text"]) < TARGET_CHARS + 1000 for line in lines)
    assert len({line["document"]["text"] for line in lines}) == 4


def test_time_split_counts_the_passes_of_a_request_and_leaves_the_model_as_it_was(tiny_backend):
    from decision_engine.bench.time_split import timing_model

    request = request_from_object(build_workload(1, seed=3, target_chars=3000)[0])
    engine = DecisionEngine(tiny_backend)
    with timing_model(tiny_backend) as split:
        response = engine.decide(request, "joint")
    assert split.block_calls == response.steps > 0
    assert split.prefix_s > 0 and split.block_s > 0
    assert "encode_prefix" not in vars(tiny_backend) and "block_logits" not in vars(tiny_backend)


def test_a_reading_model_benches_with_and_without_its_caches(vocab):
    """Cold decisions encode the document, warm ones reuse it; the uncached backend decides the same."""
    from dataclasses import replace

    from decision_engine.backends.native import NativeBackend
    from decision_engine.model.loader import random_model
    from decision_engine.model.transformer import BlockDiffusionConfig

    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True, reads_documents=True)
    reader = NativeBackend(random_model(cfg, seed=1), vocab, "tiny-reader")
    report = benchmark(
        DecisionEngine(reader), 2, BenchConfig(batch_sizes=(1,), cache_groups=1, latency_groups=2), device="cpu", quick=True
    )
    assert report["prefix_cache"]["same_decisions"] is True
    assert report["latency_cold_p50_ms"] > 0 and report["latency_warm_p50_ms"] > 0
    assert reader.documents.hits > 0


def test_a_cpu_report_names_the_cpu_and_its_vector_instructions(monkeypatch):
    import torch

    from decision_engine.bench import commands

    monkeypatch.setattr(commands, "cpu_model", lambda: "Example CPU 9000")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    assert commands._device_name("cpu").startswith("Example CPU 9000, AVX2, ")


def test_the_cpu_model_falls_back_to_platform_without_cpuinfo(monkeypatch):
    import builtins

    from decision_engine.bench import commands

    def no_file(*args, **kwargs):
        raise OSError("no such file")

    monkeypatch.setattr(builtins, "open", no_file)
    monkeypatch.setattr(commands.platform, "processor", lambda: "")
    monkeypatch.setattr(commands.platform, "machine", lambda: "riscv64")
    assert commands.cpu_model() == "riscv64"
