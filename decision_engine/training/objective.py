"""The masked-diffusion objective on the answer block."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ..backends.native import pad_prefixes
from ..model.transformer import BlockDiffusionModel
from .examples import Example


def batch_tensors(examples: Sequence[Example], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Padded prefix (ids, slots, mask) and block (gold, slots), each (B, T) or (B, L)."""
    prefix_ids, prefix_slots, prefix_mask = pad_prefixes([e.prefix for e in examples], pad_id, device)
    width = max(len(e.gold) for e in examples)
    gold = torch.full((len(examples), width), pad_id, dtype=torch.long)
    slots = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        gold[i, : len(e.gold)] = torch.tensor(e.gold)
        slots[i, : len(e.slots)] = torch.tensor(e.slots)
    return dict(
        prefix_ids=prefix_ids, prefix_slots=prefix_slots, prefix_mask=prefix_mask,
        gold=gold.to(device), block_slots=slots.to(device),
    )


def masked_diffusion_loss(
    model: BlockDiffusionModel,
    batch: dict[str, torch.Tensor],
    mask_id: int,
    generator: torch.Generator,
    inverse_t_weighting: bool = True,
) -> torch.Tensor:
    """Draw t ~ U(0, 1) per example, mask that share of block positions (at least one), predict them.

    With `inverse_t_weighting` each example's masked losses are summed and divided by the number
    masked (about t * L: the 1/t weighting of the masked-diffusion bound, with less variance);
    without it they are divided by the block length L, so lightly masked examples count less.
    """
    gold, slots = batch["gold"], batch["block_slots"]
    real = slots > 0  # (B, L)
    b, length = gold.shape
    t = torch.rand(b, 1, generator=generator).to(gold.device)  # (B, 1)
    masked = (torch.rand(b, length, generator=generator).to(gold.device) < t) & real
    # Guarantee one masked position per example: the real position with the smallest draw.
    forced = torch.rand(b, length, generator=generator).to(gold.device).masked_fill(~real, 2.0).argmin(dim=1)
    masked[torch.arange(b), forced] = True
    inputs = gold.masked_fill(masked, mask_id)
    logits = model(batch["prefix_ids"], batch["prefix_slots"], batch["prefix_mask"], inputs, slots)  # (B, L, V)
    losses = F.cross_entropy(logits.float().transpose(1, 2), gold, reduction="none")  # (B, L)
    denominator = masked.sum(dim=1) if inverse_t_weighting else real.sum(dim=1)
    return ((losses * masked).sum(dim=1) / denominator.clamp(min=1)).mean()
