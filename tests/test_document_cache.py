"""The encoded-document cache: keyed by text, bounded in bytes, least recently used first out."""

from __future__ import annotations

import pytest
import torch

from decision_engine.reader.document_cache import DocumentCache, document_key


def tensor_of(n_bytes: int) -> torch.Tensor:
    return torch.zeros(n_bytes, dtype=torch.uint8)


def test_key_depends_on_text_and_salt_only():
    assert document_key("a contract") == document_key("a contract")
    assert document_key("a contract") != document_key("a contract.")
    assert document_key("a contract", salt="v1") != document_key("a contract", salt="v2")


def test_hit_returns_the_stored_entry_and_counts():
    cache = DocumentCache(max_bytes=100)
    entry = tensor_of(10)
    cache.put("k", entry)
    assert cache.get("k") is entry
    assert cache.get("other") is None
    assert (cache.hits, cache.misses) == (1, 1)


def test_bound_evicts_least_recently_used_first():
    cache = DocumentCache(max_bytes=30)
    for key in "abc":
        cache.put(key, tensor_of(10))
    cache.get("a")  # a is now the most recently used
    cache.put("d", tensor_of(10))
    assert "b" not in cache and {"a", "c", "d"} <= set(cache._entries)
    assert cache.bytes == 30


def test_entry_larger_than_the_bound_is_not_kept():
    cache = DocumentCache(max_bytes=30)
    cache.put("a", tensor_of(10))
    cache.put("huge", tensor_of(31))
    assert "huge" not in cache and "a" in cache and cache.bytes == 10


def test_replacing_a_key_recounts_its_bytes():
    cache = DocumentCache(max_bytes=100)
    cache.put("a", tensor_of(40))
    cache.put("a", tensor_of(10))
    assert cache.bytes == 10 and len(cache) == 1


def test_get_or_compute_computes_once():
    cache = DocumentCache(max_bytes=100)
    calls = []

    def compute():
        calls.append(1)
        return tensor_of(5)

    first = cache.get_or_compute("k", compute)
    second = cache.get_or_compute("k", compute)
    assert first is second and len(calls) == 1


def test_negative_bound_is_refused():
    with pytest.raises(ValueError, match="max_bytes"):
        DocumentCache(max_bytes=-1)
