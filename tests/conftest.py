"""Shared fixtures: the real tokenizer vocabulary, fake models with chosen logits, a tiny real model."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from decision_engine.backends.native import NativeBackend, base_tokenizer  # noqa: E402
from decision_engine.backends.protocol import PrefixInput  # noqa: E402
from decision_engine.backends.vocabulary import Vocabulary  # noqa: E402
from decision_engine.model.loader import random_model  # noqa: E402
from decision_engine.model.transformer import BlockDiffusionConfig  # noqa: E402
from store_fixtures import *  # noqa: E402, F403 - the store's database fixtures


class FakeCache:
    def __init__(self, rows: Sequence[int]):
        self.rows = list(rows)

    def select(self, rows):
        return FakeCache([self.rows[r] for r in rows])


class FakeModel:
    """A model whose logits come from `logits_fn(call, rows, block_ids) -> (B, L, V)`; counts calls."""

    def __init__(self, vocab: Vocabulary, logits_fn: Callable, max_positions: int = 512):
        self.vocab = vocab
        self.name = "fake"
        self.version = ""
        self.device = torch.device("cpu")
        self.max_positions = max_positions
        self.context_tokens: int | None = None
        self.reads_documents = False
        self.logits_fn = logits_fn
        self.calls = 0
        self.prefixes: list[PrefixInput] = []
        self.block_shapes: list[tuple[int, int]] = []

    def encode_prefix(self, prefixes):
        self.prefixes.extend(prefixes)
        return FakeCache(range(len(prefixes)))

    def block_logits(self, cache, block_ids, block_slots, columns=None):
        self.calls += 1
        self.block_shapes.append(tuple(block_ids.shape))
        logits = self.logits_fn(self.calls, cache.rows, block_ids)
        return logits if columns is None else logits.index_select(-1, columns)


def random_logits(seed: int, scale: float = 3.0) -> Callable:
    """Fresh random logits every call, reproducible from `seed`."""
    generator = torch.Generator().manual_seed(seed)

    def fn(call, rows, block_ids):
        b, length = block_ids.shape
        return torch.randn(b, length, VOCAB_SIZE, generator=generator) * scale

    return fn


VOCAB_SIZE = 30522


@pytest.fixture(autouse=True)
def no_int8_unless_asked(monkeypatch):
    """"auto" never takes int8 in tests unless a test asks for it: an int8 engine rewrites its model's
    layers in place, and tests hand the session's shared models to engines (through a patched
    `open_model` too). Tests then decide alike on every CI machine's CPU."""
    import decision_engine.int8

    monkeypatch.setattr(decision_engine.int8, "cpu_has_fast_int8", lambda: False)


@pytest.fixture(scope="session")
def vocab() -> Vocabulary:
    return Vocabulary.from_tokenizer(base_tokenizer())


@pytest.fixture(scope="session")
def tiny_backend(vocab) -> NativeBackend:
    """A real (randomly initialised) block-diffusion model, small enough for CPU tests."""
    return NativeBackend(random_model(BlockDiffusionConfig.from_name("tiny")), vocab, "tiny-random")
