"""Assembling a ready engine from its options: the model plus how document context is chosen."""

from __future__ import annotations

from . import models
from .backends.protocol import DenoisingModel
from .engine import DecisionEngine
from .grounding.grounder import grounder_for_model
from .options import EngineOptions
from .retrieval.builder import context_for_model


def build_engine(options: EngineOptions = EngineOptions(), model: DenoisingModel | None = None) -> DecisionEngine:
    """An engine as `options` say: over the bundled (or named) model, or over `model` when one is given
    already built. Raises ModelLoadError for a model that cannot be opened."""
    if model is None:
        model = models.open_model(options.model, options.device, options.trust_remote_code)
    context = context_for_model(options.retrieval, model)
    return DecisionEngine(model, options.limits, context, grounder_for_model(model, context))
