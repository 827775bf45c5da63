"""Assembling a ready engine from its options: the model plus how document context is chosen."""

from __future__ import annotations

from . import models
from .backends.native import NativeBackend
from .backends.protocol import DenoisingModel
from .engine import DecisionEngine
from .grounding.grounder import grounder_for_model
from .options import EngineOptions
from .precision import compute_dtype
from .retrieval.builder import context_for_model


def dllm_options(options: EngineOptions):
    """The masked diffusion LLM options the engine options carry."""
    from .backends.masked_dllm import MaskedDLLMOptions

    return MaskedDLLMOptions(mask_token_id=options.mask_token_id, loader=options.loader, block_size=options.block_size)


def build_engine(options: EngineOptions = EngineOptions(), model: DenoisingModel | None = None) -> DecisionEngine:
    """An engine as `options` say: over the bundled (or named) model, or over `model` when one is given
    already built. Raises ModelLoadError for a model that cannot be opened. In bfloat16 the linear layers
    of the model's transformer layers, and of the context's sentence encoder, keep a bfloat16 copy of
    their weights (`NativeBackend.keep_weight_copies`, `SpanEmbedder.compute_in`)."""
    if model is None:
        model = models.open_model(options.model, options.device, options.trust_remote_code, dllm_options(options))
    context = context_for_model(options.retrieval, model, options.evidence_tokens)
    dtype = compute_dtype(options.precision, options.device, bundled_family=isinstance(model, NativeBackend))
    embedder = getattr(context, "embedder", None)
    if embedder is not None:
        embedder.compute_in(dtype)
    if isinstance(model, NativeBackend):
        model.keep_weight_copies(dtype)
    return DecisionEngine(model, options.limits, context, grounder_for_model(model, context), dtype)
