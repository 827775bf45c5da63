"""The small interface between the denoiser and a model.

A model encodes each prefix (document context and questions) once into a cache,
then returns logits for the answer block given that cache and the block's
current tokens, as many times as the denoiser needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from ..types import Evidence
from .vocabulary import Vocabulary


@dataclass(frozen=True)
class PrefixInput:
    """Prefix token ids, and per token the 1-based question it belongs to (0: document or special)."""

    token_ids: list[int]
    slot_ids: list[int]
    document: str | None = None  # for models that read whole documents: the text read beside the prefix
    positions: list[int] | None = None  # per token, its position where they restart per question; None: 0, 1, 2, ...


class PrefixCache(Protocol):
    """Whatever a model keeps from encoding a batch of prefixes."""

    def select(self, rows: Sequence[int]) -> PrefixCache:
        """The cache of a subset of the batch, in the given order."""


class DenoisingModel(Protocol):
    """A model that fills masked answer positions."""

    name: str  # shown in responses and stored with decisions
    version: str  # short content hash of the weights, stored with decisions; "" when there is none
    vocab: Vocabulary
    device: torch.device  # where the model computes
    max_positions: int  # prefix plus answer block must fit in this many positions
    context_tokens: int | None  # document-token cap the model was trained with; None: only the window limits it
    reads_documents: bool  # True: prefixes hold only questions and the model reads `PrefixInput.document` whole

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> PrefixCache:
        """Encode prefixes once; the cache is reused by every denoising step."""

    def block_logits(
        self,
        cache: PrefixCache,
        block_ids: torch.Tensor,  # (B, L) current block tokens, mask id where still masked
        block_slots: torch.Tensor,  # (B, L) 1-based slot index per position, 0 on padding
        columns: torch.Tensor | None = None,  # (C,) vocabulary ids to score; None: the whole vocabulary
    ) -> torch.Tensor:
        """Logits (B, L, V), or (B, L, C) for the given vocabulary ids only, for every block position."""


class DocumentReader(DenoisingModel, Protocol):
    """A model that reads whole documents and can say where in them each question's answer comes from."""

    def pointed_evidence(self, cache: PrefixCache, numbers: Sequence[Sequence[int]]) -> list[dict[int, list[Evidence]]]:
        """Per cache row, for each of its slot `numbers`: the document spans its pointer weighs most, best first."""
