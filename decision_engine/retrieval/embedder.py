"""Sentence embeddings of spans and questions with all-MiniLM-L6-v2, cached per document.

The model loads on first use, never at import: a web server imports this module.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from ..model.loader import base_model_dir
from .spans import Span

DIM = 384  # all-MiniLM-L6-v2 embedding width
MAX_TOKENS = 128  # sentence-transformers uses 256; spans are at most a few hundred characters
BATCH_SIZE = 64
QUESTION_CACHE = 4096  # questions repeat across requests (e.g. the 17 ContractNLI hypotheses)


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    size: int  # documents held
    max_size: int


class SpanEmbedder:
    """Mean-pooled, L2-normalised MiniLM embeddings, with an LRU cache of span embeddings per document."""

    def __init__(
        self,
        cache_size: int = 256,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = BATCH_SIZE,
        device: str = "cpu",
    ):
        self.cache_size = cache_size
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.device = torch.device(device)
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.RLock()
        self._documents: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._questions: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._hits = 0
        self._misses = 0

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModel, AutoTokenizer

        folder = str(base_model_dir())
        self._tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self._model = AutoModel.from_pretrained(folder, local_files_only=True).to(self.device).eval()

    def embed(self, texts: list[str]) -> torch.Tensor:
        """(N, 384) unit-length embeddings, float32 on the CPU, in the order of `texts`."""
        out = torch.zeros((len(texts), DIM), dtype=torch.float32)
        if not texts:
            return out
        with self._lock, torch.inference_mode():
            self._load()
            ids = self._tokenizer(list(texts), truncation=True, max_length=self.max_tokens)["input_ids"]
            order = sorted(range(len(texts)), key=lambda i: len(ids[i]))  # similar lengths share a batch
            for first in range(0, len(order), self.batch_size):
                rows = order[first : first + self.batch_size]
                width = max(len(ids[i]) for i in rows)
                batch = torch.full((len(rows), width), self._tokenizer.pad_token_id, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, i in enumerate(rows):
                    batch[r, : len(ids[i])] = torch.tensor(ids[i])
                    mask[r, : len(ids[i])] = 1
                batch, mask = batch.to(self.device), mask.to(self.device)
                hidden = self._model(input_ids=batch, attention_mask=mask).last_hidden_state  # (B, T, 384)
                weights = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, 384)
                out[rows] = torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu()
        return out

    def embed_questions(self, questions: list[str]) -> torch.Tensor:
        """(Q, 384) embeddings of questions, remembered across calls."""
        with self._lock:
            missing = [q for q in dict.fromkeys(questions) if q not in self._questions]
            if missing:
                for q, row in zip(missing, self.embed(missing)):
                    self._questions[q] = row
            rows = []
            for q in questions:
                self._questions.move_to_end(q)
                rows.append(self._questions[q])
            while len(self._questions) > QUESTION_CACHE:
                self._questions.popitem(last=False)
            return torch.stack(rows) if rows else torch.zeros((0, DIM))

    def embed_spans(self, document_text: str, spans: list[Span]) -> torch.Tensor:
        """(S, 384) embeddings of a document's spans; repeated documents come from the cache."""
        digest = hashlib.sha256(document_text.encode("utf-8")).hexdigest()
        key = (digest, tuple((s.start, s.end) for s in spans))
        with self._lock:
            cached = self._documents.get(key)
            if cached is not None:
                self._hits += 1
                self._documents.move_to_end(key)
                return cached
            self._misses += 1
            vectors = self.embed([s.text for s in spans])
            if self.cache_size > 0:
                self._documents[key] = vectors
                while len(self._documents) > self.cache_size:
                    self._documents.popitem(last=False)
            return vectors

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._documents), self.cache_size)

    def clear_cache(self) -> None:
        with self._lock:
            self._documents.clear()
            self._questions.clear()
            self._hits = self._misses = 0
