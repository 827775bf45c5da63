"""Building a batch job's engine from its options, in the driver or in every Ray actor alike."""

from __future__ import annotations

from ..engine import DecisionEngine
from ..factory import build_engine
from ..options import EngineOptions

# Testing aid: `--model tiny-random` builds a tiny randomly initialised model (seeded, so every
# replica, local or on Ray, is identical) instead of loading weights. Its answers mean nothing.
TINY_RANDOM = "tiny-random"


def build_job_engine(options: EngineOptions) -> DecisionEngine:
    """Load the model and assemble the engine; raises ModelLoadError for a bad checkpoint."""
    return build_engine(options, _tiny_random_model(options.device) if options.model == TINY_RANDOM else None)


def _tiny_random_model(device: str):
    import torch

    from ..backends.native import NativeBackend, base_tokenizer
    from ..backends.vocabulary import Vocabulary
    from ..model.loader import random_model
    from ..model.transformer import BlockDiffusionConfig

    vocab = Vocabulary.from_tokenizer(base_tokenizer())
    torch.manual_seed(0)
    return NativeBackend(random_model(BlockDiffusionConfig.from_name("tiny"), seed=0), vocab, TINY_RANDOM, device)
