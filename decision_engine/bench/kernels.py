"""Kernel micro-benchmarks (CUDA only): each Triton kernel's achieved memory bandwidth (bytes read and
written over time) next to a plain device copy, and the PyTorch paths it replaces on the same inputs."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

from ..kernels.block_attention import block_attention_fused, block_attention_triton, pack_prefix
from ..kernels.constrained_confidence import (
    allowed_bits,
    allowed_mask,
    constrained_confidence,
    constrained_confidence_eager,
)

COPY_BYTES = 1 << 30  # large enough to leave every cache far behind


def cuda_time_ms(fn: Callable[[], object], repeats: int = 30, warmup: int = 3) -> float:
    """Median time of `fn` in milliseconds, by CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _bandwidth(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9  # GB/s


def copy_bandwidth(device: torch.device) -> dict:
    """`torch.empty_like(x).copy_(x)` of a 1 GiB tensor: the bandwidth a memory-bound kernel can hope for."""
    x = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device=device)
    ms = cuda_time_ms(lambda: torch.empty_like(x).copy_(x))
    return {"bytes": 2 * x.nbytes, "ms": ms, "gb_per_s": _bandwidth(2 * x.nbytes, ms)}


def confidence_benchmark(device: torch.device, copy_gb_per_s: float, rows: int, vocab: int, dtype: torch.dtype) -> dict:
    """The constrained-confidence kernel against masked_fill + softmax + max over (P, V)."""
    generator = torch.Generator(device=device).manual_seed(0)
    logits = torch.randn(rows, vocab, generator=generator, device=device).to(dtype)
    allowed = torch.randint(0, vocab, (rows, 300), generator=generator, device=device)  # a few hundred per position
    bits = allowed_bits(allowed, vocab)
    mask = allowed_mask(allowed, vocab)
    ms = cuda_time_ms(lambda: constrained_confidence(logits, bits))
    eager_ms = cuda_time_ms(lambda: constrained_confidence_eager(logits, mask))
    nbytes = logits.nbytes + bits.nbytes + rows * (4 + 8)  # logits and mask read; confidence and token written
    return {
        "rows": rows,
        "vocab": vocab,
        "dtype": str(dtype).removeprefix("torch."),
        "bytes": nbytes,
        "ms": ms,
        "gb_per_s": _bandwidth(nbytes, ms),
        "share_of_copy": _bandwidth(nbytes, ms) / copy_gb_per_s,
        "eager_ms": eager_ms,
        "speedup_over_eager": eager_ms / ms,
    }


def attention_benchmark(
    device: torch.device, copy_gb_per_s: float, batch: int, heads: int, prefix: int, block: int, dim: int
) -> dict:
    """The block-attention kernel on varlen prefixes (lengths spread over prefix/2 to prefix) against the
    fused PyTorch path on the same prefixes padded."""
    generator = torch.Generator(device=device).manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=generator, device=device)

    q, bk, bv = (rand(batch, block, heads, dim).transpose(1, 2) for _ in range(3))  # head-split views, as in the model
    pk, pv = rand(batch, heads, prefix, dim), rand(batch, heads, prefix, dim)
    lengths = torch.randint(prefix // 2, prefix + 1, (batch,), generator=generator, device=device)
    prefix_mask = torch.arange(prefix, device=device)[None, :] < lengths[:, None]
    block_mask = torch.ones(batch, block, dtype=torch.bool, device=device)
    keys, values, cu_seqlens = pack_prefix(pk, pv, prefix_mask)
    ms = cuda_time_ms(lambda: block_attention_triton(q, keys, values, cu_seqlens, bk, bv, block_mask))
    fused_ms = cuda_time_ms(lambda: block_attention_fused(q, pk, pv, prefix_mask, bk, bv, block_mask))
    nbytes = 4 * q.nbytes + keys.nbytes + values.nbytes + cu_seqlens.nbytes + block_mask.nbytes  # q, block k/v, out
    return {
        "batch": batch,
        "heads": heads,
        "prefix": prefix,
        "block": block,
        "dim": dim,
        "dtype": "float32",
        "bytes": nbytes,
        "ms": ms,
        "gb_per_s": _bandwidth(nbytes, ms),
        "share_of_copy": _bandwidth(nbytes, ms) / copy_gb_per_s,
        "fused_ms": fused_ms,
        "speedup_over_fused": fused_ms / ms,
    }


def kernel_benchmarks(device: torch.device) -> dict:
    copy = copy_bandwidth(device)
    return {
        "copy": copy,
        "constrained_confidence": [
            confidence_benchmark(device, copy["gb_per_s"], 2048, 30522, torch.float32),
            confidence_benchmark(device, copy["gb_per_s"], 2048, 30522, torch.bfloat16),
        ],
        "block_attention": [
            attention_benchmark(device, copy["gb_per_s"], 32, 12, 512, 48, 32),
            attention_benchmark(device, copy["gb_per_s"], 256, 12, 512, 48, 32),
        ],
    }
