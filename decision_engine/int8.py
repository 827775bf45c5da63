"""Linear layers in int8, for CPUs with fast int8 products (VNNI, AMX) that lack native bfloat16.

`Int8Linear` rounds its weights to int8 with one scale per output channel and each row of its input
(one token) with a scale of its own, and multiplies by `torch._int_mm`. One scale per row keeps a
row's result independent of the other rows of its batch (padding, other requests), so a request
decides alike alone or batched, and keeps the sentence encoder's mean-pooled vectors within a cosine
of about 3e-3 of float32's. torch.ao's dynamic quantisation takes one activation scale per batch: it
moved the encoder's vectors by about 3e-2 and 103 of 1,235 held-out answers with them, and made the
decision model's rows depend on what they were batched with.
"""

from __future__ import annotations

import torch

INT8_MAX = 127
SMALLEST_SCALE = 1e-8  # an all-zero row keeps a finite scale
INT_MM_MIN_ROWS = 17  # torch._int_mm takes at least this many rows


def int8_available() -> bool:
    """Whether this torch multiplies int8 matrices (`torch._int_mm`)."""
    return hasattr(torch, "_int_mm")


def cpu_has_fast_int8() -> bool:
    """Whether this CPU multiplies int8 natively (AVX-512 VNNI, AVX-VNNI or AMX) and torch can use it."""
    try:
        native = torch.cpu._is_vnni_supported() or torch.cpu._is_amx_tile_supported()
    except (AttributeError, RuntimeError):
        return False
    return bool(native) and int8_available()


class Int8Linear(torch.nn.Module):
    """A linear layer computed as int8 products: weights with one scale per output channel, each row of
    the input with its own scale. Float in, float out; no gradients (inference only)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        weight = weight.detach().float()  # (out, in)
        scale = (weight.abs().amax(dim=1) / INT8_MAX).clamp(min=SMALLEST_SCALE)  # (out,)
        rounded = torch.round(weight / scale[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
        self.register_buffer("weight_t", rounded.t().contiguous())  # (in, out), as torch._int_mm takes it
        self.register_buffer("weight_scale", scale)
        self.register_buffer("bias", None if bias is None else bias.detach().float().clone())
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]

    @classmethod
    def from_linear(cls, layer: torch.nn.Linear) -> Int8Linear:
        return cls(layer.weight, layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = x.reshape(-1, self.in_features).float()  # (N, in)
        scale = (rows.abs().amax(dim=1, keepdim=True) / INT8_MAX).clamp(min=SMALLEST_SCALE)  # (N, 1)
        rounded = (rows / scale).round_().to(torch.int8)  # within +-127: the scale is the row's largest; rounded in place
        n = rounded.shape[0]
        if n < INT_MM_MIN_ROWS:
            rounded = torch.nn.functional.pad(rounded, (0, 0, 0, INT_MM_MIN_ROWS - n))
        out = torch._int_mm(rounded, self.weight_t)[:n].float().mul_(scale)  # (N, out)
        out = torch.addcmul(self.bias, out, self.weight_scale) if self.bias is not None else out.mul_(self.weight_scale)
        return out.reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def per_token_int8(module: torch.nn.Module) -> int:
    """Replace every linear layer inside `module` by an `Int8Linear` of it; returns how many."""
    replaced = 0
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, Int8Linear.from_linear(child))
            replaced += 1
        else:
            replaced += per_token_int8(child)
    return replaced
