"""Running the benchmark: every mode over growing batch sizes, the prefix cache on and off, and on CUDA
the Triton kernels against the PyTorch path, all on the same requests with one engine.

Latency is per group: the wall time of the `decide_batch` call that decided it (a group waits for
its whole batch), retrieval and layout included.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..backends.native import NativeBackend
from ..engine import DecisionEngine
from ..kernels.dispatch import ENV, triton_available
from ..types import DecisionRequest
from .time_split import timing_model
from .uncached import UncachedBackend

MODES = ("joint", "independent", "sequential")


@dataclass
class BenchConfig:
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)  # tried in order while groups/s keeps improving
    groups_per_size: int | None = None  # groups decided at each batch size (at least one batch); None: all
    cache_groups: int = 8  # groups decided with the prefix cache on and off
    cache_batch_size: int = 1  # batch size of the cache comparison
    kernels: bool = True  # on CUDA: the Triton/PyTorch comparison and the kernel micro-benchmarks

    @classmethod
    def quick(cls) -> BenchConfig:
        return cls(batch_sizes=(1, 8), groups_per_size=4, cache_groups=1)


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile of a non-empty sample."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def measure(engine: DecisionEngine, requests: Sequence[DecisionRequest], mode: str, batch_size: int) -> tuple[dict, list]:
    """Decide every request in batches of `batch_size`; the figures and the decided values per group."""
    latencies: list[float] = []
    values: list[list[Any]] = []
    steps = 0
    with timing_model(engine.model) as split:
        started = time.perf_counter()
        for first in range(0, len(requests), batch_size):
            chunk = requests[first : first + batch_size]
            call = time.perf_counter()
            responses = engine.decide_batch(chunk, mode)
            latencies.extend([time.perf_counter() - call] * len(chunk))
            values.extend([a.value for a in r.answers] for r in responses)
            steps += sum(r.steps for r in responses)
        seconds = time.perf_counter() - started
    per_group = 1e3 / len(requests)
    questions = sum(len(r.questions) for r in requests)
    figures = {
        "batch_size": batch_size,
        "groups": len(requests),
        "questions": questions,
        "seconds": seconds,
        "groups_per_s": len(requests) / seconds,
        "questions_per_s": questions / seconds,
        "latency_p50_ms": percentile(latencies, 0.50) * 1e3,
        "latency_p95_ms": percentile(latencies, 0.95) * 1e3,
        "steps_per_group": steps / len(requests),  # forward passes over answer blocks, summed over a group's blocks
        # where a group's time goes: encoding prefixes, answer-block passes (shared by the batch), the rest
        "prefix_ms_per_group": split.prefix_s * per_group,
        "block_ms_per_group": split.block_s * per_group,
        "other_ms_per_group": (seconds - split.prefix_s - split.block_s) * per_group,
        "ms_per_block_pass": split.block_s * 1e3 / split.block_calls if split.block_calls else 0.0,
    }
    return figures, values


def sweep(
    engine: DecisionEngine,
    requests: Sequence[DecisionRequest],
    mode: str,
    sizes: Sequence[int],
    log: Callable[[str], None],
    groups_per_size: int | None = None,
) -> list[dict]:
    """Figures at each batch size in turn, stopping after the first size that is no faster than the best so far
    (and before sizes larger than the workload). Each size decides the first `groups_per_size` groups
    (at least one batch), or all of them."""
    rows: list[dict] = []
    for size in sizes:
        if size > len(requests) and rows:
            break
        subset = requests if groups_per_size is None else requests[: max(size, groups_per_size)]
        figures, _ = measure(engine, subset, mode, size)
        log(f"{mode:11s} batch {size:3d}: {figures['groups_per_s']:.3f} groups/s")
        faster = not rows or figures["groups_per_s"] > max(r["groups_per_s"] for r in rows)
        rows.append(figures)
        if not faster:
            break
    return rows


@contextlib.contextmanager
def kernels_switched(to: str) -> Iterator[None]:
    """Run the block with `DECISION_ENGINE_KERNELS` set to `to` ("torch" or "triton")."""
    before = os.environ.get(ENV)
    os.environ[ENV] = to
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def best(rows: Sequence[dict]) -> dict:
    return max(rows, key=lambda r: r["groups_per_s"])


def run_bench(
    engine: DecisionEngine,
    requests: Sequence[DecisionRequest],
    config: BenchConfig = BenchConfig(),
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Raw figures of one benchmark run (see `report.finish` for the ratios and the run's metadata)."""
    device = getattr(engine.model, "device", None)
    cuda = device is not None and device.type == "cuda"
    engine.decide_batch(requests[:1], "joint")  # warm-up: first allocations, tokenizer and retrieval caches
    result: dict[str, Any] = {"modes": {}, "prefix_cache": None, "triton_vs_torch": None, "kernels": None}
    for mode in MODES:
        result["modes"][mode] = sweep(engine, requests, mode, config.batch_sizes, log, config.groups_per_size)

    if isinstance(engine.model, NativeBackend):
        subset = requests[: config.cache_groups]
        uncached = DecisionEngine(UncachedBackend(engine.model), engine.limits, engine.context)
        on, on_values = measure(engine, subset, "joint", config.cache_batch_size)
        off, off_values = measure(uncached, subset, "joint", config.cache_batch_size)
        log(f"prefix cache on {on['groups_per_s']:.3f} groups/s, off {off['groups_per_s']:.3f} groups/s")
        result["prefix_cache"] = {"mode": "joint", "on": on, "off": off, "same_decisions": on_values == off_values}

    if cuda and config.kernels and triton_available():
        from .kernels import kernel_benchmarks

        size = best(result["modes"]["joint"])["batch_size"]
        with kernels_switched("triton"):
            triton_figures, triton_values = measure(engine, requests, "joint", size)
        with kernels_switched("torch"):
            torch_figures, torch_values = measure(engine, requests, "joint", size)
        log(
            f"joint batch {size}: Triton {triton_figures['groups_per_s']:.1f}, "
            f"PyTorch {torch_figures['groups_per_s']:.1f} groups/s"
        )
        result["triton_vs_torch"] = {
            "mode": "joint",
            "triton": triton_figures,
            "torch": torch_figures,
            "same_decisions": triton_values == torch_values,
        }
        result["kernels"] = kernel_benchmarks(device)
    return result
