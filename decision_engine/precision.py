"""The number format the engine's forward passes compute in: float32, bfloat16 where a CPU has it
natively, or int8 linear layers where it multiplies int8 natively instead (`int8.py`).

bfloat16 runs matrix products and attention under `torch.autocast`, which halves the base encoder's
time on CPUs with native bfloat16 (AVX-512 BF16, AMX) and changes sentence vectors by a cosine of
about 5e-5. "auto" takes it for the bundled model on such CPUs, int8 on CPUs with VNNI or AMX but no
native bfloat16; elsewhere, and for other model families, "auto" is float32. Weights stay float32; an
engine computing in bfloat16 gives the linear layers of its transformers a bfloat16 copy of their
weights, the one autocast would make on every call (`keep_weight_copies`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from . import int8
from .options import PRECISIONS


def cpu_has_native_bfloat16() -> bool:
    """Whether this CPU has bfloat16 instructions (AVX-512 BF16 or AMX) that oneDNN runs. oneDNN also
    reports bfloat16 "supported" on plain AVX-512, where it is emulated and about 5 times slower than
    float32, so its word alone does not decide."""
    try:
        instructions = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
        return bool(
            instructions and torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
        )
    except (AttributeError, RuntimeError):
        return False


def resolved_precision(precision: str, device: str, bundled_family: bool, may_quantize: bool = True) -> str:
    """What `precision` stands for on `device`: "float32", "bfloat16" or "int8". "auto" is, for the
    bundled model family on a CPU, bfloat16 where the CPU has it natively, else int8 where it multiplies
    int8 natively and `may_quantize` (the engine opened the model itself, so rewriting its layers
    touches no one else's), else float32. Raises ValueError for int8 off a CPU or for another model family."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    on_cpu = torch.device(device).type == "cpu"
    if precision == "int8" and not (on_cpu and bundled_family):
        raise ValueError("precision int8 is for the bundled model family on a CPU; use float32 or bfloat16")
    if precision == "int8" and not int8.int8_available():
        raise ValueError("precision int8 needs torch._int_mm, which this torch lacks; use float32")
    if precision != "auto":
        return precision
    if not (bundled_family and on_cpu):
        return "float32"
    if cpu_has_native_bfloat16():
        return "bfloat16"
    return "int8" if int8.cpu_has_fast_int8() and may_quantize else "float32"


def autocast_dtype(resolved: str) -> torch.dtype:
    """The dtype forward passes autocast to in a resolved precision: bfloat16, or float32 (int8 layers
    take float32 in and give float32 out)."""
    return torch.bfloat16 if resolved == "bfloat16" else torch.float32


@contextlib.contextmanager
def computing_in(dtype: torch.dtype, device: torch.device) -> Iterator[None]:
    """Forward passes inside compute in `dtype` (autocast); float32 leaves them untouched."""
    if dtype == torch.float32:
        yield
        return
    with torch.autocast(device_type=device.type, dtype=dtype):
        yield


def keep_weight_copies(module: torch.nn.Module, dtype: torch.dtype) -> None:
    """Give every linear layer of `module` a copy of its weight and bias in `dtype`, used whenever the
    layer runs under autocast to `dtype` without gradients (`LinearWithCopy`). Autocast rounds the
    float32 weights to the same values on every call, so the numbers do not change, only the per-call
    copies go. float32 leaves `module` untouched."""
    if dtype == torch.float32:
        return
    for layer in module.modules():
        if type(layer) in (torch.nn.Linear, LinearWithCopy):
            layer.__class__ = LinearWithCopy
            layer.copy_dtype = dtype


class LinearWithCopy(torch.nn.Linear):
    """A linear layer that keeps a `copy_dtype` copy of its float32 weights for passes under autocast to
    that dtype; float32 passes and training use the float32 weights, and a copy is made again once its
    weight changes. Same parameters and state dict as `torch.nn.Linear`."""

    copy_dtype: torch.dtype = torch.bfloat16
    _copy: tuple | None = None  # (stamp of the weights copied, weight, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias, dtype = self.weight, self.bias, self.copy_dtype
        device = weight.device.type
        if not torch.is_autocast_enabled(device) or torch.get_autocast_dtype(device) != dtype or (
            torch.is_grad_enabled() and weight.requires_grad
        ):
            return F.linear(x, weight, bias)
        stamp = (weight.data_ptr(), weight._version, None if bias is None else (bias.data_ptr(), bias._version))
        kept = self._copy
        if kept is None or kept[0] != stamp:
            with torch.no_grad():
                kept = (stamp, weight.to(dtype), None if bias is None else bias.to(dtype))
            self.__dict__["_copy"] = kept  # a plain attribute: not a buffer, not in the state dict
        return F.linear(x, kept[1], kept[2])
