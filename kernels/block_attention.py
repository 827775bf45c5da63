"""Answer-block attention over a cached prefix.

The block's queries attend to the prefix keys/values plus the block's own keys/values
(bidirectional within the block). The two score sets share one softmax, so the cached
prefix is read in place and never concatenated with the block.
"""

from __future__ import annotations

import math

import torch


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
