"""The native backend with its prefix cache switched off, for the cache on/off comparison.

Every denoising step re-encodes the prefix together with the answer block, as a model without a
prefix cache must. The arithmetic is the cached path's (the same `encode_prefix`, `block_hidden`
and column-restricted `logits` of the model), so decisions are the same; only time differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..backends.native import NativeBackend, pad_positions, pad_prefixes
from ..backends.protocol import PrefixInput
from ..model.reading import DocumentMemory
from ..reader.windows import tokenize_document


@dataclass
class PrefixTokens:
    """What the uncached backend keeps between steps: the padded prefix tokens, not their keys and values."""

    ids: torch.Tensor  # (B, T)
    slots: torch.Tensor  # (B, T)
    mask: torch.Tensor  # (B, T) True on real tokens
    documents: list[str] | None = None  # per row, the text a reading model reads (encoded again every step)
    positions: torch.Tensor | None = None  # (B, T) where positions restart per question; None: 0, 1, 2, ...

    def select(self, rows: Sequence[int]) -> PrefixTokens:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.ids.device)
        tensors = (t.index_select(0, index) for t in (self.ids, self.slots, self.mask))
        documents = None if self.documents is None else [self.documents[r] for r in rows]
        positions = None if self.positions is None else self.positions.index_select(0, index)
        return PrefixTokens(*tensors, documents, positions)


class UncachedBackend:
    """Wraps a `NativeBackend`; `block_logits` recomputes the prefix on every call."""

    def __init__(self, inner: NativeBackend):
        self.inner = inner
        self.vocab = inner.vocab
        self.name = inner.name
        self.version = inner.version
        self.device = inner.device
        self.max_positions = inner.max_positions
        self.context_tokens = inner.context_tokens
        self.reads_documents = inner.reads_documents

    def _read(self, cache: PrefixTokens):
        """A reading model's prefix state over freshly encoded documents (nothing cached)."""
        model, vocab = self.inner.model, self.vocab
        states = [
            model.encode_document_windows(tokenize_document(vocab, text), vocab.cls_id, vocab.sep_id) for text in cache.documents
        ]
        prefix = model.encode_prefix(cache.ids, cache.slots, cache.mask, DocumentMemory.stack(states, self.device))
        prefix.documents = list(zip(cache.documents, states))
        return prefix

    def pointed_evidence(self, cache: PrefixTokens, numbers):
        with torch.inference_mode():
            return self.inner.pointed_evidence(self._read(cache), numbers)

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> PrefixTokens:
        documents = [p.document or "" for p in prefixes] if self.reads_documents else None
        device = self.inner.device
        return PrefixTokens(
            *pad_prefixes(prefixes, self.vocab.pad_id, device), documents, pad_positions(prefixes, device)
        )

    def block_logits(
        self,
        cache: PrefixTokens,
        block_ids: torch.Tensor,  # (B, L)
        block_slots: torch.Tensor,  # (B, L)
        columns: torch.Tensor | None = None,  # (C,)
    ) -> torch.Tensor:
        model, device = self.inner.model, self.inner.device
        with torch.inference_mode():
            if cache.documents is None:
                prefix = model.encode_prefix(cache.ids, cache.slots, cache.mask, cache.positions)
            else:  # no document cache either: every step encodes each document again
                prefix = self._read(cache)
            hidden = model.block_hidden(prefix, block_ids.to(device), block_slots.to(device))
            return model.logits(hidden, None if columns is None else columns.to(device))
