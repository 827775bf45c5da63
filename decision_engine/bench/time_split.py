"""Where decoding time goes: prefix encoding, answer-block passes, and the rest (retrieval, layout,
constraint bookkeeping), measured by timing the model's two entry points during a run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass
class TimeSplit:
    prefix_s: float = 0.0  # inside encode_prefix
    block_s: float = 0.0  # inside block_logits
    block_calls: int = 0  # forward passes over answer blocks (a batched pass counts once)


def _synchronised(device: object) -> None:
    if isinstance(device, torch.device) and device.type == "cuda" or device == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def timing_model(model: object) -> Iterator[TimeSplit]:
    """Within the block, calls to `model.encode_prefix` and `model.block_logits` add their wall time
    to the yielded split (on CUDA after synchronising, so the time is the device's)."""
    split = TimeSplit()
    encode_prefix, block_logits = model.encode_prefix, model.block_logits
    device = getattr(model, "device", "cpu")

    def timed_prefix(*args, **kwargs):
        started = time.perf_counter()
        out = encode_prefix(*args, **kwargs)
        _synchronised(device)
        split.prefix_s += time.perf_counter() - started
        return out

    def timed_block(*args, **kwargs):
        started = time.perf_counter()
        out = block_logits(*args, **kwargs)
        _synchronised(device)
        split.block_s += time.perf_counter() - started
        split.block_calls += 1
        return out

    model.encode_prefix, model.block_logits = timed_prefix, timed_block
    try:
        yield split
    finally:
        del model.encode_prefix, model.block_logits
