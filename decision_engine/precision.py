"""The number format the engine's forward passes compute in: float32, or bfloat16 where a CPU has it natively.

Weights stay float32; bfloat16 runs matrix products and attention under `torch.autocast`, which
halves the base encoder's time on CPUs with native bfloat16 (AVX-512 BF16, AMX) and changes
sentence vectors by a cosine of about 5e-5. "auto" takes it for the bundled model on such CPUs only;
elsewhere, and for other model families, "auto" is float32.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from .options import PRECISIONS


def cpu_has_native_bfloat16() -> bool:
    """Whether oneDNN runs bfloat16 natively on this CPU (emulated bfloat16 is slower than float32)."""
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def compute_dtype(precision: str, device: str, bundled_family: bool) -> torch.dtype:
    """The dtype `precision` stands for on `device`; "auto" picks bfloat16 only for the bundled model
    family on a CPU with native bfloat16."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "bfloat16":
        return torch.bfloat16
    if precision == "auto" and bundled_family and torch.device(device).type == "cpu" and cpu_has_native_bfloat16():
        return torch.bfloat16
    return torch.float32


@contextlib.contextmanager
def computing_in(dtype: torch.dtype, device: torch.device) -> Iterator[None]:
    """Forward passes inside compute in `dtype` (autocast); float32 leaves them untouched."""
    if dtype == torch.float32:
        yield
        return
    with torch.autocast(device_type=device.type, dtype=dtype):
        yield
