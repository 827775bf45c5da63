"""Encoding a whole document in overlapping windows: the plan, the states, and the cache's reuse of them."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.model.reading import ReadingModel
from decision_engine.reader.document_cache import DocumentCache, document_key
from decision_engine.reader.encoding import encode_document
from decision_engine.reader.windows import DocumentTokens, plan_windows, tokenize_document


@given(st.integers(1, 5000), st.integers(8, 600), st.data())
@settings(max_examples=200, deadline=None)
def test_kept_ranges_partition_the_document(n, window, data):
    overlap = data.draw(st.integers(0, window - 1))
    windows = plan_windows(n, window, overlap)
    assert windows[0].keep_start == 0 and windows[-1].keep_end == n
    for w in windows:
        assert 0 <= w.start <= w.keep_start <= w.keep_end <= w.end <= n
        assert w.end - w.start <= window
    for a, b in zip(windows, windows[1:]):
        assert a.keep_end == b.keep_start  # no token kept twice, none dropped
        assert a.end - b.start >= overlap  # neighbours share at least the overlap


def test_bad_window_sizes_are_refused():
    with pytest.raises(ValueError, match="overlap"):
        plan_windows(100, 10, 10)


@pytest.fixture(scope="module")
def tiny_reader():
    torch.manual_seed(0)
    model = ReadingModel(replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True))
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return model.eval()


def _window_alone(model, ids, start, end, cls_id=1, sep_id=2):
    """Per-layer keys and the last hidden state of one window encoded by itself (no cache, no scatter)."""
    tokens = torch.tensor([[cls_id, *ids[start:end], sep_id]])
    mask = torch.ones_like(tokens, dtype=torch.bool)
    positions = torch.arange(tokens.shape[1])[None]
    with torch.inference_mode():
        x = model.document_embed(tokens, positions, 0, torch.zeros_like(tokens))
        keys = []
        for layer in model.document_layers:
            k, v = layer.split(layer.key(x)), layer.split(layer.value(x))
            keys.append(k[0, :, 1:-1].transpose(0, 1))
            x = layer(x, k, v, mask)
    return keys, x[0, 1:-1]


def test_every_token_takes_its_states_from_its_own_window(tiny_reader):
    ids = list(range(100, 170))  # 70 tokens in windows of 24 overlapping by 8
    tokens = DocumentTokens(ids, [(i, i + 1) for i in range(len(ids))])
    windows = plan_windows(len(ids), 24, 8)
    states = encode_document(tiny_reader.document_embed, tiny_reader.document_layers, tokens, 1, 2, windows)
    assert len(windows) > 2 and states.keys.shape[1] == len(ids)
    for w in windows:
        keys, hidden = _window_alone(tiny_reader, ids, w.start, w.end)
        a, b = w.keep_start - w.start, w.keep_end - w.start
        torch.testing.assert_close(states.hidden[w.keep_start : w.keep_end], hidden[a:b], rtol=1e-5, atol=1e-5)
        for layer, k in enumerate(keys):
            torch.testing.assert_close(states.keys[layer, w.keep_start : w.keep_end], k[a:b], rtol=1e-5, atol=1e-5)


def test_tokenized_offsets_slice_the_text(vocab):
    text = "The Recipient shall return all Confidential Information within 30 days."
    tokens = tokenize_document(vocab, text)
    assert len(tokens.ids) == len(tokens.offsets) > 5
    for token, (a, b) in zip(tokens.ids, tokens.offsets):
        assert text[a:b].lower() == vocab.tokenizer.convert_ids_to_tokens(token).removeprefix("##")


def test_cached_encoding_equals_a_fresh_one(tiny_reader, vocab):
    text = "Either party may terminate this Agreement on thirty (30) days written notice. " * 20
    cache = DocumentCache(max_bytes=1 << 28)
    key = document_key(text, salt="tiny")

    def encode():
        return tiny_reader.encode_document_windows(tokenize_document(vocab, text), vocab.cls_id, vocab.sep_id)

    first = cache.get_or_compute(key, encode)
    again = cache.get_or_compute(key, encode)
    fresh = encode()
    assert again is first and cache.hits == 1
    for name in ("keys", "values", "hidden", "offsets"):
        assert torch.equal(getattr(again, name), getattr(fresh, name)), name
