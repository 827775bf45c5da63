"""Assembling a ready engine: the model plus how document context is chosen."""

from __future__ import annotations

from pathlib import Path

from .engine import DecisionEngine
from . import models
from .validation import Limits


def build_engine(
    model_path: str | Path | None = None,
    device: str = "cpu",
    limits: Limits = Limits(),
    retrieval: str = "lexical",
    trust_remote_code: bool = False,
) -> DecisionEngine:
    """An engine over the bundled (or given) model; `retrieval` is hybrid, lexical or leading."""
    model = models.open_model(model_path, device, trust_remote_code)
    context = None
    if retrieval != "leading":
        from .retrieval.builder import RetrievalContext

        context = RetrievalContext.create(model.vocab, dense=retrieval == "hybrid")
    return DecisionEngine(model, limits, context)
