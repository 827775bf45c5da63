"""Which engine a batch job runs, as a small picklable description that each worker builds for itself."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import DecisionEngine
from ..validation import Limits

# Testing aid: `--model tiny-random` builds a tiny randomly initialised model (seeded, so every
# replica, local or on Ray, is identical) instead of loading weights. Its answers mean nothing.
TINY_RANDOM = "tiny-random"


@dataclass(frozen=True)
class EngineSpec:
    """The model options of a batch job: the same engine is built in the driver or in every Ray actor."""

    model: str | None = None  # checkpoint folder; None for the bundled model; TINY_RANDOM for tests
    device: str = "cpu"
    retrieval: str = "lexical"
    max_document_chars: int = 1_000_000

    @property
    def limits(self) -> Limits:
        return Limits(max_document_chars=self.max_document_chars)

    @property
    def needs_gpu(self) -> bool:
        return self.device.startswith("cuda")

    def build(self) -> DecisionEngine:
        """Load the model and assemble the engine; raises ModelLoadError for a bad checkpoint."""
        if self.model == TINY_RANDOM:
            return _tiny_random_engine(self)
        from ..factory import build_engine

        return build_engine(self.model, self.device, self.limits, self.retrieval)


def _tiny_random_engine(spec: EngineSpec) -> DecisionEngine:
    import torch

    from ..backends.native import NativeBackend, base_tokenizer
    from ..backends.vocabulary import Vocabulary
    from ..model.loader import random_model
    from ..model.transformer import BlockDiffusionConfig

    vocab = Vocabulary.from_tokenizer(base_tokenizer())
    torch.manual_seed(0)
    model = NativeBackend(random_model(BlockDiffusionConfig.from_name("tiny"), seed=0), vocab, TINY_RANDOM, spec.device)
    context = None
    if spec.retrieval != "leading":
        from ..retrieval.builder import RetrievalContext

        context = RetrievalContext.create(vocab, dense=spec.retrieval == "hybrid")
    return DecisionEngine(model, spec.limits, context)
