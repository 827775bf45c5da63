"""`decision-engine bench`: added to the main CLI's parser by `add_bench_commands`."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence

from ..options import EngineOptions, add_engine_arguments, positive_int

EXIT_INVALID = 2
DEFAULT_GROUPS = {"cpu": 32, "cuda": 256}
DEFAULT_SIZES = {"cpu": (1, 2, 4, 8, 16, 32), "cuda": (1, 2, 4, 8, 16, 32, 64, 128, 256)}


def add_bench_commands(sub) -> None:
    bench = sub.add_parser("bench", help="throughput and latency of joint, independent and sequential decoding")
    bench.add_argument("--json", action="store_true", help="one JSON object with the raw figures and the ratios")
    bench.add_argument(
        "--quick", action="store_true", help="batch sizes 1 (4 groups) and 8 (8 groups), cache on/off on 1 group"
    )
    add_engine_arguments(bench, devices=("cpu", "cuda"))
    bench.add_argument("--groups", type=int, help="groups in the workload (default 32 on CPU, 256 on CUDA; --quick 8)")
    bench.add_argument("--batch-sizes", help="comma-separated, tried in order while groups/s improves")
    bench.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice, one per core)")
    bench.add_argument(
        "--steps", type=positive_int,
        help="a fixed step count: each block commits one position per forward pass, at most this many passes "
        "(the rest from the last logits); on DiffusionGemma, the model's own generate runs beside the engine "
        "at the same count",
    )
    bench.add_argument(
        "--random-weights", action="store_true",
        help="build the --model folder's model from its config.json, with seeded random bfloat16 weights on "
        "--device, reading no weights (diffusion-gemma and masked-dllm folders; see `python -m "
        "decision_engine.bench.real_size`)",
    )
    bench.set_defaults(func=_bench)


def benchmark(
    engine, groups: int, config, *, device: str, quick: bool, steps: int | None = None, random_weights: bool = False
) -> dict:
    """Build the workload, run every measurement on it with `engine`, and return the report. With `steps`,
    every block takes at most that many forward passes, committing one position per pass, and where the
    model has its own generate (DiffusionGemma) the report's `generate` compares the two at that count."""
    from ..validation import request_from_object
    from .own_generate import has_own_generate, side_by_side
    from .report import finish
    from .runner import best, run_bench
    from .workload import QUESTIONS, build_workload

    lines = build_workload(groups)
    if steps is not None:
        for line in lines:  # threshold 1.0: one position per pass, so a block takes its `steps` passes
            line["options"] = {**line.get("options", {}), "max_steps": steps, "threshold": 1.0}
    requests = [request_from_object(line) for line in lines]
    workload = {
        "groups": len(lines),
        "questions_per_group": QUESTIONS,
        "mean_document_chars": sum(len(line["document"]["text"]) for line in lines) / len(lines),
        "source": "generated linked groups (validation split) with eight questions, documents extended "
        "with generated general terms",
    }
    result = run_bench(engine, requests, config)
    if steps is not None:
        result["steps"] = steps
        if has_own_generate(engine.model):
            result["generate"] = side_by_side(engine, requests, steps, best(result["modes"]["joint"])["batch_size"])
    report = finish(
        result, device=device, device_name=_device_name(device), model=engine.model.name, workload=workload, quick=quick,
        precision=engine.precision,
    )
    if random_weights:  # the weights themselves are bfloat16, whatever the engine's autocast
        report.update(precision="bfloat16", weights="random (seeded), built from config.json")
    return report


def _device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return torch.cuda.get_device_name()
    return (
        f"{cpu_model()}, {torch.backends.cpu.get_cpu_capability()}, {os.cpu_count()} cores, "
        f"{torch.get_num_threads()} torch threads"
    )


def cpu_model() -> str:
    """The CPU's model name where the system says it (Linux), else what `platform` knows: CPU timings
    differ several-fold between machines, so a report names the one it ran on."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _sizes(text: str | None, default: Sequence[int]) -> tuple[int, ...] | None:
    if text is None:
        return tuple(default)
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        return None
    return sizes if sizes and all(s >= 1 for s in sizes) else None


def _bench(args: argparse.Namespace) -> int:
    import torch

    from ..factory import build_engine
    from ..model.loader import ModelLoadError
    from .report import to_text
    from .runner import BenchConfig

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: CUDA is not available on this machine", file=sys.stderr)
        return EXIT_INVALID
    config = BenchConfig.quick() if args.quick else BenchConfig()
    groups = args.groups or (8 if args.quick else DEFAULT_GROUPS[args.device])
    sizes = _sizes(args.batch_sizes, config.batch_sizes if args.quick else DEFAULT_SIZES[args.device])
    if sizes is None or groups < 1 or (args.threads is not None and args.threads < 1):
        print(
            "error: --batch-sizes takes positive integers separated by commas; --groups and --threads at least 1",
            file=sys.stderr,
        )
        return EXIT_INVALID
    config.batch_sizes = sizes
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.random_weights and args.model is None:
        print("error: --random-weights needs --model: a folder with the config.json to build", file=sys.stderr)
        return EXIT_INVALID
    options = EngineOptions.from_args(args)
    try:
        model = None
        if args.random_weights:
            from ..factory import dllm_options
            from ..models import open_model

            model = open_model(
                options.model, options.device, options.trust_remote_code, dllm_options(options), random_weights=True
            )
        engine = build_engine(options, model)
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = benchmark(
        engine, groups, config, device=args.device, quick=args.quick, steps=args.steps, random_weights=args.random_weights
    )
    print(json.dumps(report) if args.json else to_text(report))
    return 0
