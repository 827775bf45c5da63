"""Which implementation of a decoding hot spot runs: the Triton kernel on CUDA, PyTorch elsewhere.

`DECISION_ENGINE_KERNELS=torch` forces the PyTorch path on CUDA too (the benchmark compares the two).
The environment is read on every call so a running process can switch; triton is imported only
when a CUDA tensor asks for it.
"""

from __future__ import annotations

import functools
import os

import torch

ENV = "DECISION_ENGINE_KERNELS"  # "torch": never use the Triton kernels


@functools.cache
def triton_available() -> bool:
    """True when triton can be imported (it is not installed on every platform)."""
    try:
        import triton  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


def use_triton(tensor: torch.Tensor) -> bool:
    """Run the Triton kernel for an op on `tensor`: it lives on CUDA, triton is there, and not switched off."""
    return tensor.is_cuda and os.environ.get(ENV, "").lower() != "torch" and triton_available()


def interpreting() -> bool:
    """True under `TRITON_INTERPRET=1`, where the kernels run on CPU tensors (slowly; for tests)."""
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def check_device(*tensors: torch.Tensor) -> None:
    """Kernels need CUDA tensors on one device, or CPU tensors under the interpreter."""
    devices = {t.device for t in tensors}
    if len(devices) != 1:
        raise ValueError(f"tensors must share one device, got {sorted(map(str, devices))}")
    device = devices.pop()
    if device.type != "cuda" and not interpreting():
        raise ValueError(f"the Triton kernels need CUDA tensors (or TRITON_INTERPRET=1 on CPU), got {device}")
