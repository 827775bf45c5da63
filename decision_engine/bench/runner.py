"""Running the benchmark: every mode over growing batch sizes (the modes taking turns batch by batch),
the prefix cache on and off, and on CUDA the Triton kernels against the PyTorch path, all on the same
requests with one engine.

Latency is per group: the wall time of the `decide_many` call that decided it (a group waits for
its whole batch), retrieval and layout included.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends.native import NativeBackend
from ..engine import DecisionEngine
from ..errors import EngineFailure
from ..kernels.dispatch import ENV, triton_available
from ..options import MODES
from ..types import DecisionRequest, DecisionResponse
from .time_split import TimeSplit, timing_model
from .uncached import UncachedBackend


@dataclass
class BenchConfig:
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)  # tried in order while groups/s keeps improving
    groups_per_size: int | None = None  # groups decided at each batch size (at least one batch); None: all
    cache_groups: int = 8  # groups decided with the prefix cache on and off
    latency_groups: int = 8  # groups decided alone, cold and warm
    cache_batch_size: int = 1  # batch size of the cache comparison
    kernels: bool = True  # on CUDA: the Triton/PyTorch comparison and the kernel micro-benchmarks

    @classmethod
    def quick(cls) -> BenchConfig:
        return cls(batch_sizes=(1, 8), groups_per_size=4, cache_groups=1, latency_groups=4)


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile of a non-empty sample."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass
class _Tally:
    """What one mode's calls added up to at one batch size."""

    latencies: list[float] = field(default_factory=list)
    values: list[list[Any]] = field(default_factory=list)
    steps: int = 0
    passes: int = 0
    seconds: float = 0.0
    split: TimeSplit = field(default_factory=TimeSplit)

    def add(self, engine: DecisionEngine, chunk: Sequence[DecisionRequest], mode: str) -> None:
        with timing_model(engine.model) as split:
            call = time.perf_counter()
            responses = decided(engine.decide_many(chunk, mode))
            seconds = time.perf_counter() - call
        self.seconds += seconds
        self.latencies.extend([seconds] * len(chunk))
        self.values.extend([a.value for a in r.answers] for r in responses)
        self.steps += sum(r.steps for r in responses)
        self.passes += sum(r.passes for r in responses)
        self.split.prefix_s += split.prefix_s
        self.split.block_s += split.block_s
        self.split.block_calls += split.block_calls

    def figures(self, requests: Sequence[DecisionRequest], batch_size: int) -> dict:
        per_group = 1e3 / len(requests)
        questions = sum(len(r.questions) for r in requests)
        split, seconds = self.split, self.seconds
        return {
            "batch_size": batch_size,
            "groups": len(requests),
            "questions": questions,
            "seconds": seconds,
            "groups_per_s": len(requests) / seconds,
            "questions_per_s": questions / seconds,
            "latency_p50_ms": percentile(self.latencies, 0.50) * 1e3,
            "latency_p95_ms": percentile(self.latencies, 0.95) * 1e3,
            "steps_per_group": self.steps / len(requests),  # denoising steps, summed over a group's blocks
            "passes_per_group": self.passes / len(requests),  # of those, the steps that needed a forward pass
            # where a group's time goes: encoding prefixes, answer-block passes (shared by the batch), the rest
            "prefix_ms_per_group": split.prefix_s * per_group,
            "block_ms_per_group": split.block_s * per_group,
            "other_ms_per_group": (seconds - split.prefix_s - split.block_s) * per_group,
            "ms_per_block_pass": split.block_s * 1e3 / split.block_calls if split.block_calls else 0.0,
        }


def clear_document_cache(engine: DecisionEngine) -> None:
    """Forget every document the engine has read, so the next decision about one reads it afresh."""
    documents = getattr(engine.model, "documents", None)  # only reading backends keep one
    if documents is not None:
        documents.clear()
    _context_call(engine, "clear_cache")  # a span pointer's spans, their vectors and where it pointed
    grounder = getattr(engine, "grounder", None)  # a value chooser's mentions and candidates
    if grounder is not None and hasattr(grounder, "clear_cache"):
        grounder.clear_cache()


def forget_questions(engine: DecisionEngine) -> None:
    """Forget what the engine keeps of each question, keeping its documents: a new group of questions
    about a document it has read."""
    _context_call(engine, "forget_questions")


def _context_call(engine: DecisionEngine, name: str) -> None:
    """Call the context's `name` method, or else its sentence encoder's, where either has one."""
    for owner in (engine.context, getattr(engine.context, "embedder", None)):
        method = getattr(owner, name, None)
        if method is not None:
            method()
            return


def decided(outcomes: Sequence) -> list[DecisionResponse]:
    """The responses of a workload that must decide whole; a refusal or failure stops the benchmark."""
    for outcome in outcomes:
        if isinstance(outcome, EngineFailure):
            raise RuntimeError(f"the benchmark workload did not decide: {outcome.reason}")
        if not isinstance(outcome, DecisionResponse):
            raise RuntimeError(f"the benchmark workload did not decide: {outcome}")
    return list(outcomes)


def measure_modes(
    engine: DecisionEngine, requests: Sequence[DecisionRequest], modes: Sequence[str], batch_size: int
) -> dict[str, tuple[dict, list]]:
    """Decide every request in batches of `batch_size` in each mode; per mode, the figures and the decided
    values per group. The modes take turns batch by batch (in a rotating order), so a slow spell of a
    shared machine slows them alike and their ratios stay fair, and each reads the documents afresh."""
    tallies = {mode: _Tally() for mode in modes}
    for turn, first in enumerate(range(0, len(requests), batch_size)):
        chunk = requests[first : first + batch_size]
        for i in range(len(modes)):
            mode = modes[(turn + i) % len(modes)]
            clear_document_cache(engine)  # each mode reads the batch's documents afresh, as for new documents
            tallies[mode].add(engine, chunk, mode)
    return {mode: (tally.figures(requests, batch_size), tally.values) for mode, tally in tallies.items()}


def measure(engine: DecisionEngine, requests: Sequence[DecisionRequest], mode: str, batch_size: int) -> tuple[dict, list]:
    """Decide every request in batches of `batch_size`; the figures and the decided values per group."""
    return measure_modes(engine, requests, [mode], batch_size)[mode]


def measure_cache_on_off(
    cached: DecisionEngine, uncached: DecisionEngine, requests: Sequence[DecisionRequest], batch_size: int
) -> tuple[dict, list, dict, list]:
    """The same joint batches decided with the prefix cache on and off, the two taking turns batch by
    batch; the figures and decided values of each."""
    on, off = _Tally(), _Tally()
    for turn, first in enumerate(range(0, len(requests), batch_size)):
        chunk = requests[first : first + batch_size]
        pair = ((cached, on), (uncached, off)) if turn % 2 == 0 else ((uncached, off), (cached, on))
        for engine, tally in pair:
            tally.add(engine, chunk, "joint")
    return on.figures(requests, batch_size), on.values, off.figures(requests, batch_size), off.values


def sweep(
    engine: DecisionEngine,
    requests: Sequence[DecisionRequest],
    modes: Sequence[str],
    sizes: Sequence[int],
    log: Callable[[str], None],
    groups_per_size: int | None = None,
) -> dict[str, list[dict]]:
    """Per mode, figures at each batch size in turn, the modes measured side by side at each size. A mode
    stops after the first size that is no faster than its best so far; no size is larger than the
    workload (but the first). Each size decides the first `groups_per_size` groups (at least one batch),
    or all of them."""
    rows: dict[str, list[dict]] = {mode: [] for mode in modes}
    live = list(modes)
    for size in sizes:
        if not live or (size > len(requests) and size != sizes[0]):
            break
        subset = requests if groups_per_size is None else requests[: max(size, groups_per_size)]
        measured = measure_modes(engine, subset, live, size)
        for mode in list(live):
            figures = measured[mode][0]
            log(f"{mode:11s} batch {size:3d}: {figures['groups_per_s']:.3f} groups/s")
            if rows[mode] and figures["groups_per_s"] <= max(r["groups_per_s"] for r in rows[mode]):
                live.remove(mode)
            rows[mode].append(figures)
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
    device = engine.model.device
    cuda = device.type == "cuda"
    decided(engine.decide_many(requests[:1], "joint"))  # warm-up: first allocations, tokenizer and retrieval caches
    result: dict[str, Any] = {"modes": {}, "prefix_cache": None, "triton_vs_torch": None, "kernels": None}
    result["modes"] = sweep(engine, requests, MODES, config.batch_sizes, log, config.groups_per_size)
    from .latency_split import cold_and_warm

    result["latency"] = cold_and_warm(engine, requests[: config.latency_groups])
    log(f"one group alone: cold p50 {result['latency']['cold_p50_ms']:.0f} ms, warm p50 {result['latency']['warm_p50_ms']:.0f} ms")

    if isinstance(engine.model, NativeBackend):
        subset = requests[: config.cache_groups]
        uncached = DecisionEngine(
            UncachedBackend(engine.model), engine.limits, engine.context, engine.grounder, engine.dtype, engine.precision
        )
        decided(engine.decide_many(subset, "joint"))  # documents read once, so neither side pays for reading them
        on, on_values, off, off_values = measure_cache_on_off(engine, uncached, subset, config.cache_batch_size)
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
