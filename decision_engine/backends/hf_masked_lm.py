"""Any local `AutoModelForMaskedLM` checkpoint (BERT, ModernBERT); LLaDA and Dream go through `masked_dllm`.

Generic Hugging Face encoders have no prefix-isolated attention, so the cache is
the tokenised prefix and each step runs prefix and block together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from .native import pad_prefixes
from .protocol import PrefixInput
from .vocabulary import Vocabulary


@dataclass
class TokenPrefixCache:
    """Padded prefix ids (B, T) and their real lengths (B,)."""

    ids: torch.Tensor
    lengths: torch.Tensor

    def select(self, rows: Sequence[int]) -> TokenPrefixCache:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.ids.device)
        return TokenPrefixCache(self.ids.index_select(0, index), self.lengths.index_select(0, index))


def full_sequence(
    cache: TokenPrefixCache, block_ids: torch.Tensor, block_slots: torch.Tensor, pad_id: int
) -> tuple[torch.Tensor, ...]:
    """Each row's prefix followed directly by its block, right-padded so positions count from 0 in every row:
    ids and attention mask (B, T + L), and the row (B, 1) and position (B, L) index of each block position."""
    device = cache.ids.device
    batch, block_len = block_ids.shape
    width = int(cache.lengths.max()) + block_len
    ids = torch.full((batch, width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((batch, width), dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device)[:, None]
    starts = cache.lengths[:, None] + torch.arange(block_len, device=device)[None, :]  # (B, L)
    for i in range(batch):
        n = int(cache.lengths[i])
        ids[i, :n] = cache.ids[i, :n]
        mask[i, :n] = 1
    ids[rows, starts] = block_ids.to(device)
    mask[rows, starts] = (block_slots.to(device) > 0).long()
    return ids, mask, rows, starts


class FullSequenceBackend:
    """The prefix kept as tokens and run again with the block at every step, for models without a
    prefix-isolated cache. Subclasses set model, vocab, device and `shift_logits`."""

    shift_logits = False  # True where the logits at i score position i + 1 (Dream)

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> TokenPrefixCache:
        ids, _, mask = pad_prefixes(prefixes, self.vocab.pad_id, self.device)
        return TokenPrefixCache(ids, mask.sum(dim=1))

    def block_logits(
        self,
        cache: TokenPrefixCache,
        block_ids: torch.Tensor,
        block_slots: torch.Tensor,
        columns: torch.Tensor | None = None,
    ) -> torch.Tensor:
        ids, mask, rows, starts = full_sequence(cache, block_ids, block_slots, self.vocab.pad_id)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits  # (B, T + L, V)
        block = logits[rows, starts - 1 if self.shift_logits else starts]  # (B, L, V); a prefix is never empty
        return block if columns is None else block.index_select(-1, columns.to(self.device))


class HFMaskedLMBackend(FullSequenceBackend):
    """Drives a Hugging Face masked LM loaded from a local folder (never downloaded)."""

    def __init__(self, path: str | Path, device: str = "cpu", trust_remote_code: bool = False):
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        folder = str(path)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=trust_remote_code)
        model = AutoModelForMaskedLM.from_pretrained(folder, local_files_only=True, trust_remote_code=trust_remote_code)
        self.model = model.to(device).eval()
        self.vocab = Vocabulary.from_tokenizer(tokenizer)
        self.device = torch.device(device)
        self.name = f"hf:{Path(folder).name}"
        self.version = getattr(model.config, "_commit_hash", None) or ""
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 512))
        self.context_tokens: int | None = None  # trained for no particular cap: the window limits the context
        self.reads_documents = False  # the document is laid into the prefix as context tokens
