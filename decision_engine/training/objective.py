"""The masked-diffusion objective on the answer block."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ..backends.native import pad_positions, pad_prefixes
from ..model.transformer import BlockDiffusionModel, PrefixState
from .examples import Example


def batch_tensors(examples: Sequence[Example], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Padded prefix (ids, slots, mask) and block (gold, slots), each (B, T) or (B, L); plus, for the
    constrained loss, the vocabulary ids any position may hold (`columns`, (C,)), which of them each
    position may hold (`allowed`, (B, L, C)) and the gold token's column (`gold_column`, (B, L))."""
    prefix_ids, prefix_slots, prefix_mask = pad_prefixes([e.prefix for e in examples], pad_id, device)
    width = max(len(e.gold) for e in examples)
    gold = torch.full((len(examples), width), pad_id, dtype=torch.long)
    slots = torch.zeros((len(examples), width), dtype=torch.long)
    columns = sorted({t for e in examples for options in e.allowed for t in options})
    column_of = {t: c for c, t in enumerate(columns)}
    allowed = torch.zeros((len(examples), width, len(columns)), dtype=torch.bool)
    allowed[:, :, 0] = True  # padding positions: one harmless column, so their (unused) loss stays finite
    gold_column = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        gold[i, : len(e.gold)] = torch.tensor(e.gold)
        slots[i, : len(e.slots)] = torch.tensor(e.slots)
        for j, (token, options) in enumerate(zip(e.gold, e.allowed)):
            allowed[i, j, 0] = False
            allowed[i, j, [column_of[t] for t in options]] = True
            gold_column[i, j] = column_of[token]
    return dict(
        prefix_ids=prefix_ids, prefix_slots=prefix_slots, prefix_mask=prefix_mask,
        prefix_positions=pad_positions([e.prefix for e in examples], device),
        gold=gold.to(device), block_slots=slots.to(device),
        columns=torch.tensor(columns, dtype=torch.long, device=device),
        allowed=allowed.to(device), gold_column=gold_column.to(device),
    )


def mask_block(batch: dict[str, torch.Tensor], mask_id: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, masked), each (B, L): t ~ U(0, 1) per example, that share of its block positions masked
    (at least one: the real position with the smallest draw)."""
    gold, slots = batch["gold"], batch["block_slots"]
    real = slots > 0  # (B, L)
    b, length = gold.shape
    t = torch.rand(b, 1, generator=generator).to(gold.device)  # (B, 1)
    masked = (torch.rand(b, length, generator=generator).to(gold.device) < t) & real
    forced = torch.rand(b, length, generator=generator).to(gold.device).masked_fill(~real, 2.0).argmin(dim=1)
    masked[torch.arange(b), forced] = True
    return gold.masked_fill(masked, mask_id), masked


def masked_token_loss(
    logits: torch.Tensor, target: torch.Tensor, masked: torch.Tensor, slots: torch.Tensor | None = None
) -> torch.Tensor:
    """Cross-entropy on the masked positions, summed per example and divided by the number masked
    (about t * L: the 1/t weighting of the masked-diffusion bound, with less variance than dividing by t).

    With `slots` ((B, L) slot number per position, 0 on padding) each question weighs the same instead:
    its masked positions' mean, then the mean over the questions with any masked, so a one-token
    boolean counts as much as a ten-token date (`TrainConfig.per_question_loss`)."""
    losses = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")  # (B, L)
    if slots is None:
        return ((losses * masked).sum(dim=1) / masked.sum(dim=1).clamp(min=1)).mean()
    width = int(slots.max()) + 1
    weight = masked.float()
    per_slot = torch.zeros(losses.shape[0], width, device=losses.device).scatter_add_(1, slots, losses * weight)
    counts = torch.zeros(losses.shape[0], width, device=losses.device).scatter_add_(1, slots, weight)
    asked = counts[:, 1:] > 0  # (B, S): questions with a masked position
    means = per_slot[:, 1:] / counts[:, 1:].clamp(min=1)
    return ((means * asked).sum(dim=1) / asked.sum(dim=1).clamp(min=1)).mean()


def masked_diffusion_loss(
    model: BlockDiffusionModel,
    batch: dict[str, torch.Tensor],
    mask_id: int,
    generator: torch.Generator,
    constrained: bool = False,
    prefix: PrefixState | None = None,
    per_question: bool = False,
) -> torch.Tensor:
    """Mask a share t ~ U(0, 1) of each block (`mask_block`) and predict the masked tokens.

    With `constrained` the softmax runs over the tokens each position's schema allows, the
    distribution the decoder renormalises to, instead of the whole vocabulary. `prefix`, when given,
    is the batch's prefix already encoded (as `encode_prefix` returns it); else the prefix is encoded here.
    `per_question` weighs each question alike (`masked_token_loss`).
    """
    inputs, masked = mask_block(batch, mask_id, generator)
    if prefix is None:
        positions = batch.get("prefix_positions")
        prefix = model.encode_prefix(batch["prefix_ids"], batch["prefix_slots"], batch["prefix_mask"], positions)
    hidden = model.block_hidden(prefix, inputs, batch["block_slots"])
    slots = batch["block_slots"] if per_question else None
    if constrained:
        logits = model.logits(hidden, batch["columns"]).float()  # (B, L, C)
        logits = logits.masked_fill(~batch["allowed"], float("-inf"))
        return masked_token_loss(logits, batch["gold_column"], masked, slots)
    return masked_token_loss(model.logits(hidden).float(), batch["gold"], masked, slots)  # (B, L, V)
