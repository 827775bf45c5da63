"""The sentence encoder read packed without padding gives the padded forward's states."""

from __future__ import annotations

import pytest
import torch

from decision_engine.retrieval import packed_encoder
from decision_engine.retrieval.embedder import SpanEmbedder
from decision_engine.retrieval.packed_encoder import packed_hidden_states

TEXTS = [
    "Notice.",
    "The tenant shall give thirty (30) days' written notice before the end of the term.",
    "Confidential Information excludes information that is or becomes public through no fault of the Recipient.",
    "Payment is due within 15 days of the invoice date; late amounts bear interest at 5% a year.",
    "x",
] + [f"Clause {n}: " + "the supplier shall keep records " * (n % 7 + 1) for n in range(30)]


@pytest.fixture(scope="module")
def embedder() -> SpanEmbedder:
    embedder = SpanEmbedder(cache_size=0)
    embedder._load()
    return embedder


def padded_states(embedder: SpanEmbedder, ids: list[list[int]]) -> list[torch.Tensor]:
    """transformers' own forward, one text at a time: no padding at all."""
    with torch.inference_mode():
        return [embedder._model(input_ids=torch.tensor([row])).last_hidden_state[0] for row in ids]


def test_packed_states_match_the_transformers_forward(embedder):
    ids = embedder._tokenizer(TEXTS, truncation=True, max_length=128)["input_ids"]
    with torch.inference_mode():
        packed = packed_hidden_states(embedder._model, ids, batch_size=16, device=torch.device("cpu"))
    reference = padded_states(embedder, ids)
    assert [tuple(s.shape) for s in packed] == [(len(row), 384) for row in ids]
    for mine, theirs in zip(packed, reference):
        assert torch.allclose(mine, theirs, atol=2e-5), (mine - theirs).abs().max()


def test_passes_split_at_the_token_budget_read_alike(embedder, monkeypatch):
    ids = embedder._tokenizer(TEXTS, truncation=True, max_length=128)["input_ids"]
    with torch.inference_mode():
        whole = packed_hidden_states(embedder._model, ids, batch_size=4, device=torch.device("cpu"))
        monkeypatch.setattr(packed_encoder, "CHUNK_TOKENS", 40)  # a pass per batch of four
        split = packed_hidden_states(embedder._model, ids, batch_size=4, device=torch.device("cpu"))
    for a, b in zip(whole, split):
        assert torch.allclose(a, b, atol=2e-5)


def test_embeddings_match_the_padded_batches(embedder):
    """`embed` (packed) against transformers' forward over padded batches of 16 texts, mean-pooled."""
    packed = embedder.embed(TEXTS)
    ids = embedder._tokenizer(TEXTS, truncation=True, max_length=128)["input_ids"]
    padded = torch.zeros_like(packed)
    with torch.inference_mode():
        for first in range(0, len(ids), 16):
            rows = ids[first : first + 16]
            batch = embedder._tokenizer.pad({"input_ids": rows}, return_tensors="pt")
            hidden = embedder._model(**batch).last_hidden_state
            for r, row in enumerate(rows):
                padded[first + r] = torch.nn.functional.normalize(hidden[r, : len(row)].mean(dim=0), dim=0)
    assert torch.allclose(packed, padded, atol=2e-5), (packed - padded).abs().max()


def test_no_texts_no_states(embedder):
    assert packed_hidden_states(embedder._model, [], batch_size=16, device=torch.device("cpu")) == []
