"""Latency of one 8-question group over a ~10,000-character contract, retrieval included.

Span embeddings are cleared before every call, so each decision embeds its document afresh.
Run: python -m decision_engine.latency --path CONTRACTNLI.json [--model PATH] [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from .factory import build_engine
from .options import RETRIEVALS, EngineOptions
from .retrieval.builder import RetrievalContext
from .validation import request_from_object


def contract_groups(path: Path, target_chars: int = 10_000, count: int = 10) -> list[dict]:
    """8-hypothesis groups over the ContractNLI documents closest to `target_chars` characters."""
    from .datasets.contractnli import load_contractnli, to_requests

    docs, hypotheses = load_contractnli(path)
    docs = sorted(docs, key=lambda d: abs(len(d.text) - target_chars))[:count]
    return [to_requests(doc, hypotheses, group_size=8)[0] for doc in docs]


def measure(engine, lines: list[dict], repeats: int, mode: str = "joint") -> dict[str, float]:
    requests = [request_from_object(line) for line in lines]
    engine.decide(requests[0], mode)  # warm-up: model weights, tokenizer, first allocation
    embedder = engine.context.retriever.embedder if isinstance(engine.context, RetrievalContext) else None
    times = []
    for i in range(repeats):
        if embedder is not None:
            embedder.clear_cache()
        started = time.perf_counter()
        engine.decide(requests[i % len(requests)], mode)
        times.append(time.perf_counter() - started)
    times.sort()
    return {
        "median_s": statistics.median(times),
        "p90_s": times[int(0.9 * (len(times) - 1))],
        "mean_chars": sum(len(line["document"]["text"]) for line in lines) / len(lines),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="ContractNLI JSON")
    parser.add_argument("--model", help="checkpoint folder (default: the bundled model)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--retrieval", nargs="+", choices=RETRIEVALS, default=["hybrid", "lexical"])
    args = parser.parse_args(argv)
    lines = contract_groups(Path(args.path))
    for retrieval in args.retrieval:
        engine = build_engine(EngineOptions(model=args.model, retrieval=retrieval))
        figures = measure(engine, lines, args.repeats)
        print(
            f"{retrieval:8s} median {figures['median_s']:.3f} s  p90 {figures['p90_s']:.3f} s  "
            f"over {figures['mean_chars']:.0f}-char contracts, 8 questions, joint, uncached spans"
        )


if __name__ == "__main__":
    main()
