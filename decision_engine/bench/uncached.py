"""The native backend with its prefix cache switched off, for the cache on/off comparison.

Every denoising step re-encodes the prefix together with the answer block, as a model without a
prefix cache must. The arithmetic is the cached path's (the same `encode_prefix`, `block_hidden`
and column-restricted `logits` of the model), so decisions are the same; only time differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..backends.native import NativeBackend, pad_prefixes
from ..backends.protocol import PrefixInput


@dataclass
class PrefixTokens:
    """What the uncached backend keeps between steps: the padded prefix tokens, not their keys and values."""

    ids: torch.Tensor  # (B, T)
    slots: torch.Tensor  # (B, T)
    mask: torch.Tensor  # (B, T) True on real tokens

    def select(self, rows: Sequence[int]) -> PrefixTokens:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.ids.device)
        return PrefixTokens(*(t.index_select(0, index) for t in (self.ids, self.slots, self.mask)))


class UncachedBackend:
    """Wraps a `NativeBackend`; `block_logits` recomputes the prefix on every call."""

    def __init__(self, inner: NativeBackend):
        self.inner = inner
        self.vocab = inner.vocab
        self.name = inner.name
        self.version = inner.version
        self.max_positions = inner.max_positions
        self.context_tokens = inner.context_tokens

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> PrefixTokens:
        return PrefixTokens(*pad_prefixes(prefixes, self.vocab.pad_id, self.inner.device))

    def block_logits(
        self,
        cache: PrefixTokens,
        block_ids: torch.Tensor,  # (B, L)
        block_slots: torch.Tensor,  # (B, L)
        columns: torch.Tensor | None = None,  # (C,)
    ) -> torch.Tensor:
        model, device = self.inner.model, self.inner.device
        with torch.inference_mode():
            prefix = model.encode_prefix(cache.ids, cache.slots, cache.mask)
            hidden = model.block_hidden(prefix, block_ids.to(device), block_slots.to(device))
            return model.logits(hidden, None if columns is None else columns.to(device))
