"""Where decoding time goes: prefix encoding, answer-block passes, and the rest (retrieval, layout,
constraint bookkeeping), measured by timing the model's two entry points during a run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..backends.protocol import DenoisingModel


@dataclass
class TimeSplit:
    prefix_s: float = 0.0  # inside encode_prefix
    block_s: float = 0.0  # inside block_logits
    block_calls: int = 0  # forward passes over answer blocks (a batched pass counts once)


@contextlib.contextmanager
def timing_model(model: DenoisingModel) -> Iterator[TimeSplit]:
    """Within the block, calls to `model.encode_prefix` and `model.block_logits` add their wall time
    to the yielded split (on CUDA after synchronising, so the time is the device's)."""
    split = TimeSplit()
    on_cuda = torch.device(model.device).type == "cuda"

    def timed(call, add):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            out = call(*args, **kwargs)
            if on_cuda:
                torch.cuda.synchronize()
            add(time.perf_counter() - started)
            return out

        return wrapper

    def add_prefix(seconds: float) -> None:
        split.prefix_s += seconds

    def add_block(seconds: float) -> None:
        split.block_s += seconds
        split.block_calls += 1

    model.encode_prefix = timed(model.encode_prefix, add_prefix)
    model.block_logits = timed(model.block_logits, add_block)
    try:
        yield split
    finally:
        del model.encode_prefix, model.block_logits
