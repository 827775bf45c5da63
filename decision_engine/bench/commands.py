"""`decision-engine bench`: added to the main CLI's parser by `add_bench_commands`."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence

from ..options import EngineOptions, add_engine_arguments

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
    bench.set_defaults(func=_bench)


def benchmark(engine, groups: int, config, *, device: str, quick: bool) -> dict:
    """Build the workload, run every measurement on it with `engine`, and return the report."""
    from ..validation import request_from_object
    from .report import finish
    from .runner import run_bench
    from .workload import QUESTIONS, build_workload

    lines = build_workload(groups)
    requests = [request_from_object(line) for line in lines]
    workload = {
        "groups": len(lines),
        "questions_per_group": QUESTIONS,
        "mean_document_chars": sum(len(line["document"]["text"]) for line in lines) / len(lines),
        "source": "generated linked groups (validation split) with eight questions, documents extended "
        "with generated general terms",
    }
    result = run_bench(engine, requests, config)
    return finish(
        result, device=device, device_name=_device_name(device), model=engine.model.name, workload=workload, quick=quick,
        precision=str(engine.dtype).removeprefix("torch."),
    )


def _device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


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
    try:
        engine = build_engine(EngineOptions.from_args(args))
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = benchmark(engine, groups, config, device=args.device, quick=args.quick)
    print(json.dumps(report) if args.json else to_text(report))
    return 0
