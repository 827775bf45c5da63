"""The number format the engine's forward passes compute in: float32, or bfloat16 where a CPU has it natively.

bfloat16 runs matrix products and attention under `torch.autocast`, which halves the base encoder's
time on CPUs with native bfloat16 (AVX-512 BF16, AMX) and changes sentence vectors by a cosine of
about 5e-5. "auto" takes it for the bundled model on such CPUs only; elsewhere, and for other model
families, "auto" is float32. Weights stay float32, except in modules an engine owns and only ever runs
in bfloat16: their linear layers keep the bfloat16 copy autocast would make on every call
(`store_linear_weights_in`).
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


def store_linear_weights_in(module: torch.nn.Module, dtype: torch.dtype) -> None:
    """Store the weight and bias of every linear layer of `module` in `dtype`, once. Autocast rounds a
    float32 weight to the same `dtype` on every call, so a module run only inside `computing_in(dtype)`
    gives the same numbers without copying its weights per call; float32 leaves `module` untouched."""
    if dtype == torch.float32:
        return
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            layer.to(dtype)
