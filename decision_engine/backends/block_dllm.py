"""Block diffusion LLMs that keep a KV cache (SDAR's interface), loaded with their own modelling code.

The prefix is read once, block-causally in the model's diffusion blocks, into the model's cache
(`store_kv=True`, as SDAR prefills a prompt). Each denoising step then runs the answer block alone:
it attends to the cached prefix and, bidirectionally, to itself, and is not stored
(`store_kv=False`). The whole answer block is one block here, however long; it is not cut into the
model's `block_size`. Prefixes are left-padded with per-row positions, so a request's answers do not
depend on what it is batched with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..model.loader import ModelLoadError
from .diffusion_gemma import left_pad
from .masked_dllm import MaskedDLLMBackend
from .protocol import PrefixInput

BLOCK_CACHED_TYPES = ("sdar",)  # model_type values whose remote code takes `past_key_values` and `store_kv`


def is_block_cached(config: dict) -> bool:
    return str(config.get("model_type", "")).lower() in BLOCK_CACHED_TYPES


def block_causal_mask(positions: torch.Tensor, real: torch.Tensor, block_size: int) -> torch.Tensor:
    """(B, 1, T, T) boolean: a real token sees the real tokens of its own and earlier blocks; a padding
    token sees only itself (so no attention row is empty)."""
    blocks = positions // block_size  # (B, T)
    seen = (blocks[:, None, :] <= blocks[:, :, None]) & real[:, None, :] & real[:, :, None]  # (B, T, T)
    eye = torch.eye(positions.shape[1], dtype=torch.bool, device=positions.device)[None]
    return (seen | (eye & ~real[:, :, None]))[:, None]


@dataclass
class BlockPrefixCache:
    """The model's cache of the prefixes, their mask (B, T) and each row's next position (B,)."""

    kv: object  # a transformers DynamicCache
    mask: torch.Tensor
    next_position: torch.Tensor

    def select(self, rows: Sequence[int]) -> BlockPrefixCache:
        from transformers import DynamicCache

        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.mask.device)
        kv = DynamicCache()
        for layer, entry in enumerate(self.kv.layers):
            kv.update(entry.keys.index_select(0, index), entry.values.index_select(0, index), layer)
        return BlockPrefixCache(kv, self.mask.index_select(0, index), self.next_position.index_select(0, index))


class BlockCachedDLLMBackend(MaskedDLLMBackend):
    """A masked diffusion LLM that reads its prefix into a KV cache once and denoises the block over it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.shift_logits:
            raise ModelLoadError(f"{self.name}: a block-cached model with shifted logits is not supported")
        if not self.block_size:
            raise ModelLoadError(f"{self.name}: config.json gives no block_size; pass --block-size")
        self.name = self.name.replace("masked-dllm:", "block-dllm:", 1)

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> BlockPrefixCache:
        from transformers import DynamicCache

        ids, real, positions = left_pad(prefixes, self.vocab.pad_id, self.device)
        kv = DynamicCache()
        with torch.inference_mode():
            self.model(
                input_ids=ids, attention_mask=block_causal_mask(positions, real, int(self.block_size)),
                position_ids=positions, past_key_values=kv, use_cache=True, store_kv=True,
            )
        return BlockPrefixCache(kv, real, positions[:, -1] + 1)

    def block_logits(
        self,
        cache: BlockPrefixCache,
        block_ids: torch.Tensor,  # (B, L), the mask id on open positions
        block_slots: torch.Tensor,  # (B, L), 0 on padding
        columns: torch.Tensor | None = None,
    ) -> torch.Tensor:
        block_ids, block_slots = block_ids.to(self.device), block_slots.to(self.device)
        length = block_ids.shape[1]
        real = block_slots > 0  # (B, L)
        keys = torch.cat([cache.mask, real], dim=1)  # (B, T + L): the real prefix and block tokens
        mask = keys[:, None, None, :].expand(-1, 1, length, -1)  # (B, 1, L, T + L)
        positions = cache.next_position[:, None] + torch.arange(length, device=self.device)[None]  # (B, L)
        with torch.inference_mode():
            logits = self.model(
                input_ids=block_ids, attention_mask=mask, position_ids=positions,
                past_key_values=cache.kv, use_cache=False, store_kv=False,
            ).logits  # (B, L, V)
        return logits if columns is None else logits.index_select(-1, columns.to(self.device))
