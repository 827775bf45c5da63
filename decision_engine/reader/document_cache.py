"""A cache of encoded documents, keyed by a hash of the text and bounded in bytes (least recently used goes first).

A second group of questions about the same contract then pays only for its questions and answers.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CACHE_BYTES = 512 * 1024 * 1024  # about a hundred 10,000-character contracts


def document_key(text: str, salt: str = "") -> str:
    """SHA-256 of the document text (and of `salt`, e.g. the model version that encoded it)."""
    digest = hashlib.sha256(salt.encode())
    digest.update(b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class DocumentCache(Generic[T]):
    """Least-recently-used entries, evicted once their sizes add up to more than `max_bytes`.

    An entry larger than the whole bound is returned but never kept. Safe to share between threads.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, size_of: Callable[[T], int] | None = None):
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._size_of = size_of or (lambda entry: int(entry.nbytes))
        self._entries: OrderedDict[str, tuple[T, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> T | None:
        with self._lock:
            held = self._entries.get(key)
            if held is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return held[0]

    def put(self, key: str, entry: T) -> None:
        size = self._size_of(entry)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if size > self.max_bytes:
                return
            self._entries[key] = (entry, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped

    def get_or_compute(self, key: str, compute: Callable[[], T]) -> T:
        """The cached entry, or `compute()` stored under `key` (computed outside the lock)."""
        entry = self.get(key)
        if entry is None:
            entry = compute()
            self.put(key, entry)
        return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0
