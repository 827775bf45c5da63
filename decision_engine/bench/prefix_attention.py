"""The prefix pass with segment-by-segment attention against the same pass under the full (T, T) mask.

`python -m decision_engine.bench.prefix_attention [--groups 4] [--repeats 3]` lays out bench-workload
groups (8 questions over a 10,000-character document) for the bundled model, and times its prefix pass
both ways on the same prefixes, taking turns, so a slow spell of a shared machine slows both alike.
It also reports the largest difference between the two passes' keys and values.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import contextmanager

import torch

from ..factory import build_engine
from ..model import segments
from ..model.transformer import segment_mask
from ..options import EngineOptions
from ..validation import request_from_object
from .workload import build_workload


@contextmanager
def _full_mask():
    """The prefix pass attends through the (T, T) segment mask instead of `SegmentLayout`."""
    layout_of = segments.SegmentLayout.of
    segments.SegmentLayout.of = staticmethod(segment_mask)
    try:
        yield
    finally:
        segments.SegmentLayout.of = layout_of


def measure(groups: int = 4, repeats: int = 3) -> dict:
    engine = build_engine(EngineOptions(precision="float32"))  # int8 rounding would magnify float noise
    prefixes = [engine.prepare(request_from_object(g), "joint").blocks[0].prefix for g in build_workload(groups, seed=0)]
    times: dict[str, list[float]] = {"segmented": [], "masked": []}
    for rep in range(repeats):
        for name in ("segmented", "masked") if rep % 2 == 0 else ("masked", "segmented"):
            for prefix in prefixes:
                began = time.perf_counter()
                if name == "masked":
                    with _full_mask():
                        engine.model.encode_prefix([prefix])
                else:
                    engine.model.encode_prefix([prefix])
                times[name].append((time.perf_counter() - began) * 1e3)
    fresh = engine.model.encode_prefix(prefixes)
    with _full_mask():
        masked = engine.model.encode_prefix(prefixes)
    real = masked.mask[:, None, :, None]
    difference = max(
        float(((a - b) * real).abs().max()) for a, b in zip(fresh.keys + fresh.values, masked.keys + masked.values)
    )
    segmented_ms, masked_ms = statistics.median(times["segmented"]), statistics.median(times["masked"])
    return {
        "model": engine.model.name,
        "prefix_tokens": [len(p.token_ids) for p in prefixes],
        "segmented_p50_ms": round(segmented_ms, 1),
        "masked_p50_ms": round(masked_ms, 1),
        "masked_over_segmented": round(masked_ms / segmented_ms, 2),
        "max_abs_difference": difference,
        "timings_each": len(times["segmented"]),
        "threads": torch.get_num_threads(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.groups, args.repeats), indent=1))


if __name__ == "__main__":
    main()
