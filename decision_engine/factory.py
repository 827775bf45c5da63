"""Assembling a ready engine from its options: the model plus how document context is chosen."""

from __future__ import annotations

from . import models
from .backends.native import NativeBackend
from .backends.protocol import DenoisingModel
from .engine import DecisionEngine
from .grounding.grounder import grounder_for_model
from .model.loader import ModelLoadError
from .options import EngineOptions
from .precision import autocast_dtype, resolved_precision
from .retrieval.builder import context_for_model


def dllm_options(options: EngineOptions):
    """The masked diffusion LLM options the engine options carry."""
    from .backends.masked_dllm import MaskedDLLMOptions

    return MaskedDLLMOptions(mask_token_id=options.mask_token_id, loader=options.loader, block_size=options.block_size)


def build_engine(options: EngineOptions = EngineOptions(), model: DenoisingModel | None = None) -> DecisionEngine:
    """An engine as `options` say: over the bundled (or named) model, or over `model` when one is given
    already built. Raises ModelLoadError for a model that cannot be opened, or not in the precision
    asked. In bfloat16 the linear layers of the model's transformer layers, and of the context's
    sentence encoder, keep a bfloat16 copy of their weights (`NativeBackend.keep_weight_copies`,
    `SpanEmbedder.compute_in`); in int8 the model's become int8 layers, in place
    (`NativeBackend.quantize_int8`), so "auto" takes int8 only for a model the engine opened itself: a
    model handed in (as every fit hands its own) keeps its float weights unless int8 is asked by name."""
    opened_here = model is None
    if model is None:
        model = models.open_model(options.model, options.device, options.trust_remote_code, dllm_options(options))
    bundled = isinstance(model, NativeBackend)
    try:
        precision = resolved_precision(options.precision, options.device, bundled, opened_here)
    except ValueError as error:
        raise ModelLoadError(str(error)) from None
    dtype = autocast_dtype(precision)
    context = context_for_model(options.retrieval, model, options.evidence_tokens)
    embedder = getattr(context, "embedder", None)
    if embedder is not None:
        embedder.mentions_in_spans = getattr(model, "mentions_in_spans", False)
        embedder.compute_in(dtype)
        if precision == "int8":
            embedder.quantize_int8()
    if bundled:
        model.keep_weight_copies(dtype)
        if precision == "int8":
            model.quantize_int8()
    return DecisionEngine(model, options.limits, context, grounder_for_model(model, context), dtype, precision)
