"""Answer-block attention over a cached prefix.

The block's queries attend to the prefix keys/values plus the block's own keys/values
(bidirectional within the block). The two score sets share one softmax, so the cached
prefix is read in place and never concatenated with the block.

`block_attention_reference` is the definition, `block_attention_fused` the fast path off CUDA,
and `block_attention_triton` the CUDA kernel over prefixes packed without padding (`pack_prefix`);
the kernel itself lives in `_block_attention_triton.py`, imported only when it is launched.
"""

from __future__ import annotations

import math

import torch

from .dispatch import check_device

LOG2_E = 1.4426950408889634  # the kernel exponentiates in base 2


def block_attention_reference(
    q: torch.Tensor,  # (B, H, L, D) block queries
    prefix_k: torch.Tensor,  # (B, H, T, D)
    prefix_v: torch.Tensor,  # (B, H, T, D)
    prefix_mask: torch.Tensor,  # (B, T) True on real prefix tokens
    block_k: torch.Tensor,  # (B, H, L, D)
    block_v: torch.Tensor,  # (B, H, L, D)
    block_mask: torch.Tensor,  # (B, L) True on real block positions
) -> torch.Tensor:
    """Attention output (B, H, L, D)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores_p = (q @ prefix_k.transpose(-1, -2)) * scale  # (B, H, L, T)
    scores_b = (q @ block_k.transpose(-1, -2)) * scale  # (B, H, L, L)
    scores_p = scores_p.masked_fill(~prefix_mask[:, None, None, :], float("-inf"))
    scores_b = scores_b.masked_fill(~block_mask[:, None, None, :], float("-inf"))
    top = torch.maximum(scores_p.amax(dim=-1, keepdim=True), scores_b.amax(dim=-1, keepdim=True))
    top = top.clamp(min=torch.finfo(q.dtype).min)  # rows with nothing to attend to stay finite
    weights_p, weights_b = (scores_p - top).exp(), (scores_b - top).exp()
    total = weights_p.sum(dim=-1, keepdim=True) + weights_b.sum(dim=-1, keepdim=True)
    out = weights_p @ prefix_v + weights_b @ block_v
    return out / total.clamp(min=1e-30)


def block_attention_fused(
    q: torch.Tensor,  # (B, H, L, D)
    prefix_k: torch.Tensor,  # (B, H, T, D)
    prefix_v: torch.Tensor,
    prefix_mask: torch.Tensor,  # (B, T)
    block_k: torch.Tensor,  # (B, H, L, D)
    block_v: torch.Tensor,
    block_mask: torch.Tensor,  # (B, L)
) -> torch.Tensor:
    """The same attention through PyTorch's fused `scaled_dot_product_attention` over prefix and block
    keys side by side: the fast path off CUDA (every row must see at least one real key)."""
    keys = torch.cat([prefix_k, block_k], dim=2)  # (B, H, T + L, D)
    values = torch.cat([prefix_v, block_v], dim=2)
    mask = torch.cat([prefix_mask, block_mask], dim=1)[:, None, None, :]  # (B, 1, 1, T + L)
    return torch.nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask)


def pack_prefix(
    prefix_k: torch.Tensor,  # (B, H, T, D) padded
    prefix_v: torch.Tensor,  # (B, H, T, D)
    prefix_mask: torch.Tensor,  # (B, T) True on real prefix tokens
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The varlen layout of `block_attention_triton`: keys and values (total_T, H, D) of every real
    prefix token, request after request, and `cu_seqlens` (B + 1,) int32 offsets into them."""
    if prefix_k.shape != prefix_v.shape or prefix_k.dim() != 4 or prefix_mask.shape != (prefix_k.shape[0], prefix_k.shape[2]):
        raise ValueError(
            f"expected prefix keys/values (B, H, T, D) and mask (B, T), got {tuple(prefix_k.shape)}, "
            f"{tuple(prefix_v.shape)} and {tuple(prefix_mask.shape)}"
        )
    mask = prefix_mask.bool()
    keys = prefix_k.transpose(1, 2)[mask]  # (total_T, H, D), contiguous
    values = prefix_v.transpose(1, 2)[mask]
    cu_seqlens = torch.zeros(mask.shape[0] + 1, dtype=torch.int32, device=mask.device)
    cu_seqlens[1:] = mask.sum(dim=1).cumsum(dim=0)
    return keys, values, cu_seqlens


def block_attention_triton(
    q: torch.Tensor,  # (B, H, L, D) block queries; last dimension contiguous
    prefix_k_packed: torch.Tensor,  # (total_T, H, D) contiguous, see `pack_prefix`
    prefix_v_packed: torch.Tensor,  # (total_T, H, D) contiguous
    cu_seqlens: torch.Tensor,  # (B + 1,) int32, nondecreasing, cu[0] = 0, cu[B] = total_T
    block_k: torch.Tensor,  # (B, H, L, D); last dimension contiguous
    block_v: torch.Tensor,  # (B, H, L, D)
    block_mask: torch.Tensor,  # (B, L) bool, True on real block positions
) -> torch.Tensor:
    """Triton, flash style: output (B, H, L, D) with the strides of `q`, equal to `block_attention_reference`.

    Each request reads only its own prefix rows (no padding), one key tile at a time with an online
    softmax; no (L x T) scores are stored. q, block_k and block_v may be head-split views of
    (B, L, H, D) projections, as the model makes them, without a copy.
    """
    if q.dim() != 4:
        raise ValueError(f"q must be (B, H, L, D), got {tuple(q.shape)}")
    batch, heads, length, dim = q.shape
    if block_k.shape != q.shape or block_v.shape != q.shape:
        raise ValueError(
            f"block keys/values must match q {tuple(q.shape)}, got {tuple(block_k.shape)} and {tuple(block_v.shape)}"
        )
    total = prefix_k_packed.shape[0]
    if prefix_k_packed.shape != (total, heads, dim) or prefix_v_packed.shape != (total, heads, dim):
        raise ValueError(
            f"packed prefix keys/values must be (total_T, {heads}, {dim}), got "
            f"{tuple(prefix_k_packed.shape)} and {tuple(prefix_v_packed.shape)}"
        )
    if cu_seqlens.shape != (batch + 1,) or cu_seqlens.dtype != torch.int32:
        raise ValueError(f"cu_seqlens must be int32 ({batch + 1},), got {cu_seqlens.dtype} {tuple(cu_seqlens.shape)}")
    if block_mask.shape != (batch, length) or block_mask.dtype != torch.bool:
        raise ValueError(f"block_mask must be bool ({batch}, {length}), got {block_mask.dtype} {tuple(block_mask.shape)}")
    if q.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"q must be float32, float16 or bfloat16, got {q.dtype}")
    if any(t.dtype != q.dtype for t in (prefix_k_packed, prefix_v_packed, block_k, block_v)):
        raise ValueError("q, keys and values must share one dtype")
    if any(t.stride(-1) != 1 for t in (q, block_k, block_v)) or not (
        prefix_k_packed.is_contiguous() and prefix_v_packed.is_contiguous() and cu_seqlens.is_contiguous()
    ):
        raise ValueError(
            "q and block keys/values need a contiguous last dimension; packed prefix and cu_seqlens must be contiguous"
        )
    if length > 1 and block_mask.stride(1) != 1:
        raise ValueError("block_mask rows must be contiguous")
    check_device(q, prefix_k_packed, prefix_v_packed, cu_seqlens, block_k, block_v, block_mask)
    out = torch.empty_like(q)  # keeps q's strides: a head-split view stays one
    if q.numel() == 0:
        return out
    import triton

    from ._block_attention_triton import _block_attention_kernel

    block_d = max(16, triton.next_power_of_2(dim))  # tl.dot needs at least 16
    block_m = min(64, max(16, triton.next_power_of_2(length)))
    block_n = 64
    grid = (batch * heads, triton.cdiv(length, block_m))
    _block_attention_kernel[grid](
        q, prefix_k_packed, prefix_v_packed, cu_seqlens, block_k, block_v, block_mask.view(torch.uint8), out,
        heads, length, dim, LOG2_E / math.sqrt(dim),
        q.stride(0), q.stride(1), q.stride(2),
        prefix_k_packed.stride(0), prefix_k_packed.stride(1),
        block_k.stride(0), block_k.stride(1), block_k.stride(2),
        block_v.stride(0), block_v.stride(1), block_v.stride(2),
        block_mask.stride(0),
        out.stride(0), out.stride(1), out.stride(2),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=4,
    )  # fmt: skip
    return out
