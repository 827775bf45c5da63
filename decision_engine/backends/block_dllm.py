"""Block diffusion LLMs that keep a KV cache, loaded with their own modelling code (SDAR, LLaDA2, Fast-dLLM v2).

The prefix is read once, block-causally in the model's diffusion blocks, into the model's cache.
Each denoising step then runs the answer block alone: it attends to the cached prefix and,
bidirectionally, to itself, and is not stored. The whole answer block is one block here, however
long; it is not cut into the model's block size. A row's answers do not depend on what it is batched
with: batched prefixes are left-padded with per-row positions, or, where padding cannot be masked,
each row runs alone.

The families differ in how their forward takes the cache and the mask (`BlockFamily`): SDAR stores
new keys only with `store_kv=True` and takes a boolean 4-D mask; LLaDA2 appends to any cache it is
given and takes an additive 4-D mask, so each step gets a throwaway view of the cache. Fast-dLLM v2
builds its own mask and takes none, so it runs row by row (`block_dllm_rows`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ..model.loader import ModelLoadError
from .diffusion_gemma import left_pad
from .masked_dllm import MaskedDLLMBackend, MaskedDLLMOptions, checkpoint_config
from .protocol import PrefixInput

CAUSAL_LM_LOADER = "AutoModelForCausalLM"  # their auto_map's AutoModel, where it has one, is the bare backbone


@dataclass(frozen=True)
class BlockFamily:
    """One family of block diffusion LLMs: how its config.json names it and how its forward takes the cache."""

    name: str  # in messages
    model_types: tuple[str, ...]  # config.json model_type values, lower case
    block_size_fields: tuple[str, ...]  # config.json fields giving the diffusion block, the first present wins
    store_flag: str | None  # forward keyword that stores the new keys/values; None: any cache given is appended to
    additive_mask: bool = False  # the 4-D mask is added to the scores (0 or a large negative), not a keep-mask
    builds_own_mask: bool = False  # the forward ignores `attention_mask` and masks by `block_size`: rows run alone
    shifted_logits: bool = False  # logits at i score the token at i + 1
    prefill_backbone: bool = False  # read the prefix through `model.model`, whose forward computes no logits
    block_size_note: str = ""  # added to the missing-block-size error


SDAR = BlockFamily("SDAR", ("sdar",), ("block_size",), store_flag="store_kv")
LLADA2 = BlockFamily(
    "LLaDA2", ("llada2_moe",), ("block_size", "block_length"), store_flag=None, additive_mask=True,
    prefill_backbone=True, block_size_note="LLaDA2.0's own generate() defaults to blocks of 32",
)
FAST_DLLM_V2 = BlockFamily(
    "Fast-dLLM v2", ("fast_dllm_qwen",), ("bd_size",), store_flag="update_past_key_values",
    builds_own_mask=True, shifted_logits=True,
)
FAMILIES = (SDAR, LLADA2, FAST_DLLM_V2)


def block_family(config: dict) -> BlockFamily | None:
    """The block-cached family a checkpoint's config.json names, or None."""
    model_type = str(config.get("model_type", "")).lower()
    return next((family for family in FAMILIES if model_type in family.model_types), None)


def block_backend_class(config: dict):
    """The backend class for a block-cached checkpoint's config.json, or None for any other checkpoint."""
    family = block_family(config)
    if family is None:
        return None
    if family.builds_own_mask:
        from .block_dllm_rows import RowCachedDLLMBackend

        return RowCachedDLLMBackend
    return BlockCachedDLLMBackend


def block_causal_mask(positions: torch.Tensor, real: torch.Tensor, block_size: int) -> torch.Tensor:
    """(B, 1, T, T) boolean: a real token sees the real tokens of its own and earlier blocks; a padding
    token sees only itself (so no attention row is empty)."""
    blocks = positions // block_size  # (B, T)
    seen = (blocks[:, None, :] <= blocks[:, :, None]) & real[:, None, :] & real[:, :, None]  # (B, T, T)
    eye = torch.eye(positions.shape[1], dtype=torch.bool, device=positions.device)[None]
    return (seen | (eye & ~real[:, :, None]))[:, None]


def additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean keep-mask as scores to add: 0 where attended, the dtype's lowest value elsewhere."""
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def scratch_view(kv):
    """A cache that shares `kv`'s keys and values in copies of its layers: what a forward appends to
    it leaves `kv` as it was, for models that append to any cache they are given."""
    view = copy.copy(kv)
    view.layers = [copy.copy(layer) for layer in kv.layers]
    return view


def preferred_loader(config: dict, options: MaskedDLLMOptions) -> str | None:
    """The auto class to load with: the one asked for, else the causal LM where the auto_map names one."""
    if options.loader is not None:
        return options.loader
    return CAUSAL_LM_LOADER if CAUSAL_LM_LOADER in (config.get("auto_map") or {}) else None


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
    """A block diffusion LLM that reads its prefix into a KV cache once and denoises the block over it,
    left-padded rows batched together (SDAR, LLaDA2)."""

    rows_run_alone = False  # the subclass for models that build their own mask runs each row alone

    def __init__(
        self,
        path: str | Path,
        device: str = "cpu",
        trust_remote_code: bool = False,
        options: MaskedDLLMOptions = MaskedDLLMOptions(),
        *,
        random_weights: bool = False,
    ):
        config = checkpoint_config(Path(path))
        family = block_family(config) or SDAR  # a checkpoint of no known family is driven as SDAR is
        if family.builds_own_mask != self.rows_run_alone:
            fitting = "RowCachedDLLMBackend" if family.builds_own_mask else "BlockCachedDLLMBackend"
            raise ModelLoadError(f"{family.name} checkpoints are driven by {fitting} (models.open_model picks it)")
        if options.shift_logits not in (None, family.shifted_logits):
            raise ModelLoadError(f"{family.name} checkpoints do not take shift_logits={options.shift_logits}")
        loader = preferred_loader(config, options)
        super().__init__(path, device, trust_remote_code, replace(options, loader=loader), random_weights=random_weights)
        self.family = family
        self.shift_logits = family.shifted_logits
        self.name = self.name.replace("masked-dllm:", "block-dllm:", 1)
        given = next((config[field] for field in family.block_size_fields if config.get(field)), None)
        self.block_size = options.block_size or given
        if not self.block_size:
            note = f" ({family.block_size_note})" if family.block_size_note else ""
            fields = " or ".join(family.block_size_fields)
            raise ModelLoadError(f"{self.name}: config.json gives no {fields}; pass --block-size{note}")
        self.block_size = int(self.block_size)

    def stores(self, store: bool) -> dict:
        """The forward keyword that tells the model whether to keep the new keys and values."""
        return {self.family.store_flag: store} if self.family.store_flag else {}

    def mask_for_model(self, keep: torch.Tensor) -> torch.Tensor:
        """A boolean keep-mask in the form the family's forward takes."""
        return additive(keep, self.model.dtype) if self.family.additive_mask else keep

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> BlockPrefixCache:
        from transformers import DynamicCache

        ids, real, positions = left_pad(prefixes, self.vocab.pad_id, self.device)
        kv = DynamicCache()
        reader = getattr(self.model, "model", self.model) if self.family.prefill_backbone else self.model
        with torch.inference_mode():
            reader(
                input_ids=ids, attention_mask=self.mask_for_model(block_causal_mask(positions, real, self.block_size)),
                position_ids=positions, past_key_values=kv, use_cache=True, **self.stores(True),
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
        keep = keys[:, None, None, :].expand(-1, 1, length, -1)  # (B, 1, L, T + L)
        positions = cache.next_position[:, None] + torch.arange(length, device=self.device)[None]  # (B, L)
        kv = cache.kv if self.family.store_flag else scratch_view(cache.kv)
        with torch.inference_mode():
            logits = self.model(
                input_ids=block_ids, attention_mask=self.mask_for_model(keep), position_ids=positions,
                past_key_values=kv, use_cache=False, **self.stores(False),
            ).logits  # (B, L, V)
        return logits if columns is None else logits.index_select(-1, columns.to(self.device))
