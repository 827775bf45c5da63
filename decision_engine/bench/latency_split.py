"""Latency of one group alone, cold (its document not yet encoded) and warm (the document cached).

A second group of questions about the same contract pays only for its questions and answers when
the model reads whole documents and keeps their encoding, or keeps its span vectors; warm requests
forget what was kept of the questions themselves (their vectors, where the pointer looked), so the
figure is that of a new group about a known document, not of a repeated request.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..engine import DecisionEngine
from ..types import DecisionRequest
from .runner import clear_document_cache, decided, forget_questions, percentile


def cold_and_warm(engine: DecisionEngine, requests: Sequence[DecisionRequest], mode: str = "joint") -> dict:
    """p50 and p90 milliseconds of each request decided alone: first with an empty document cache, then
    again with the document cached and everything kept of its questions forgotten."""
    cold, warm = [], []
    for request in requests:
        clear_document_cache(engine)
        began = time.perf_counter()
        decided(engine.decide_many([request], mode))
        cold.append((time.perf_counter() - began) * 1e3)
        forget_questions(engine)  # warm: the document is known, its questions are asked afresh
        began = time.perf_counter()
        decided(engine.decide_many([request], mode))
        warm.append((time.perf_counter() - began) * 1e3)
    return {
        "mode": mode,
        "groups": len(requests),
        "cold_p50_ms": percentile(cold, 0.5),
        "cold_p90_ms": percentile(cold, 0.9),
        "warm_p50_ms": percentile(warm, 0.5),
        "warm_p90_ms": percentile(warm, 0.9),
    }
