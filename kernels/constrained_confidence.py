"""Constrained confidence: per masked position, the most probable allowed token and its probability.

Probabilities are renormalised over the allowed tokens only, so confidence is the
model's belief among the continuations that keep the slot valid.
"""

from __future__ import annotations

import torch


def constrained_confidence_reference(
    logits: torch.Tensor,  # (P, V) logits of the positions to score
    allowed: torch.Tensor,  # (P, A) allowed token ids, padded with -1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (confidence (P,), token (P,)); every row must allow at least one token."""
    if logits.dim() != 2 or allowed.dim() != 2 or logits.shape[0] != allowed.shape[0]:
        raise ValueError(f"expected logits (P, V) and allowed (P, A), got {tuple(logits.shape)} and {tuple(allowed.shape)}")
    valid = allowed >= 0
    if not bool(valid.any(dim=1).all()):
        raise ValueError("every position needs at least one allowed token")
    picked = logits.float().gather(1, allowed.clamp(min=0))  # (P, A)
    picked = picked.masked_fill(~valid, float("-inf"))
    probs = torch.softmax(picked, dim=1)
    confidence, index = probs.max(dim=1)
    return confidence, allowed.gather(1, index[:, None]).squeeze(1)
