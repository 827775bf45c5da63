"""Block diffusion LLMs that build their own attention mask (Fast-dLLM v2), run one row at a time.

Fast-dLLM v2's forward ignores `attention_mask`: it masks block-causally by token index, from its
`block_size` keyword and the length of the cache it is given. So no padding can be masked out, and
each row runs alone, its positions counting from its first token. The prefix is read once into the
row's cache in the model's blocks (`update_past_key_values=True`); each step runs the row's answer
block over that cache without storing it (`update_past_key_values=False`), with `block_size` set so
that the block and the whole cache fall in one block: the answer block sees the prefix and,
bidirectionally, itself. Its logits at i score the token at i + 1 (Fast-dLLM v2's token shift), so
the block's first position is scored by the prefix's last token, read when the prefix is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .block_dllm import BlockCachedDLLMBackend
from .protocol import PrefixInput


@dataclass
class RowPrefixCache:
    """Per row: the model's cache of that prefix alone, its length, and the logits of its last token."""

    kv: list  # one transformers DynamicCache per row, batch size 1
    lengths: list[int]
    last_logits: torch.Tensor  # (B, V): they score each row's first block position

    def select(self, rows: Sequence[int]) -> RowPrefixCache:
        rows = list(rows)
        index = torch.as_tensor(rows, dtype=torch.long, device=self.last_logits.device)
        kv, lengths = [self.kv[r] for r in rows], [self.lengths[r] for r in rows]
        return RowPrefixCache(kv, lengths, self.last_logits.index_select(0, index))


class RowCachedDLLMBackend(BlockCachedDLLMBackend):
    """A block diffusion LLM whose forward builds its own mask: each row reads its prefix into its own
    cache once and denoises its block over it alone."""

    rows_run_alone = True

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> RowPrefixCache:
        from transformers import DynamicCache

        caches, last = [], []
        for prefix in prefixes:
            ids = torch.tensor([prefix.token_ids], dtype=torch.long, device=self.device)
            kv = DynamicCache()
            with torch.inference_mode():
                logits = self.model(
                    input_ids=ids, position_ids=torch.arange(ids.shape[1], device=self.device)[None],
                    past_key_values=kv, use_cache=True, block_size=self.block_size, logits_to_keep=1,
                    **self.stores(True),
                ).logits  # (1, 1, V)
            caches.append(kv)
            last.append(logits[0, -1])
        return RowPrefixCache(caches, [len(p.token_ids) for p in prefixes], torch.stack(last))

    def block_logits(
        self,
        cache: RowPrefixCache,
        block_ids: torch.Tensor,  # (B, L), the mask id on open positions
        block_slots: torch.Tensor,  # (B, L), 0 on padding
        columns: torch.Tensor | None = None,
    ) -> torch.Tensor:
        block_ids, block_slots = block_ids.to(self.device), block_slots.to(self.device)
        columns = None if columns is None else columns.to(self.device)
        rows = []
        for row in range(block_ids.shape[0]):
            at = (block_slots[row] > 0).nonzero().squeeze(1)  # the row's real block positions
            scored = self.row_logits(cache, row, block_ids[row, at])  # (len(at), V)
            rows.append((at, scored if columns is None else scored.index_select(-1, columns)))
        width = rows[0][1].shape[-1]
        out = torch.zeros((*block_ids.shape, width), dtype=rows[0][1].dtype, device=self.device)  # 0 on padding
        for row, (at, scored) in enumerate(rows):
            out[row, at] = scored
        return out

    def row_logits(self, cache: RowPrefixCache, row: int, ids: torch.Tensor) -> torch.Tensor:
        """Logits (M, V) of one row's M real block tokens over its cached prefix, read one position back."""
        first = cache.last_logits[row][None]  # (1, V)
        if ids.numel() <= 1:
            return first[: ids.numel()]
        start, length = cache.lengths[row], ids.numel()
        with torch.inference_mode():
            logits = self.model(
                input_ids=ids[None], position_ids=start + torch.arange(length, device=self.device)[None],
                past_key_values=cache.kv[row], use_cache=True, block_size=start + length, **self.stores(False),
            ).logits[0]  # (M, V); the block size puts the cache and the block in one block
        return torch.cat([first, logits[:-1].to(first.dtype)])
