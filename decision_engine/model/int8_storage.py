"""Matrices stored in int8, one fp16 scale per row, for weights that need less than fp16's precision.

A matrix `NAME` is stored as `NAME.int8` (its rows divided by their scale, rounded) and `NAME.int8_scale`
(the largest magnitude of each row over 127); `restored` turns such a pair back into `NAME`, in float32.
The round trip changes each weight by about half a step of its row's scale at most (the scale itself is
kept in fp16).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

CODES = ".int8"
SCALES = ".int8_scale"


def quantised(state: dict[str, torch.Tensor], chosen: Callable[[str], bool]) -> dict[str, torch.Tensor]:
    """`state` with each matrix whose name `chosen` accepts as int8 rows and their scales; the rest as given."""
    out = {}
    for name, tensor in state.items():
        if not chosen(name) or tensor.dim() < 2:
            out[name] = tensor
            continue
        rows = tensor.float().reshape(tensor.shape[0], -1) if tensor.dim() == 2 else tensor.float().flatten(0, -2)
        scale = rows.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 127
        out[name + CODES] = (rows / scale).round().clamp(-127, 127).to(torch.int8).reshape(tensor.shape).contiguous()
        out[name + SCALES] = scale.half().reshape(*tensor.shape[:-1], 1).contiguous()
    return out


def restored(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`state` with every int8 pair (see `quantised`) turned back into its float32 matrix."""
    out = {}
    for name, tensor in state.items():
        if name.endswith(SCALES):
            continue
        if name.endswith(CODES):
            base = name.removesuffix(CODES)
            out[base] = tensor.float() * state[base + SCALES].float()
        else:
            out[name] = tensor
    return out


def round_in_int8(module: torch.nn.Module, parts: Sequence[str]) -> None:
    """Round the matrices of `module`'s named `parts` as their int8 storage would, in place: the model
    answers as it will once saved and loaded again."""
    prefixes = tuple(f"{part}." for part in parts)
    if not prefixes:
        return
    state = {k: v for k, v in module.state_dict().items() if k.startswith(prefixes)}
    rounded = restored(quantised({k: v.float() for k, v in state.items()}, lambda name: True))
    module.load_state_dict({k: rounded[k].to(v.dtype) for k, v in state.items()}, strict=False)
