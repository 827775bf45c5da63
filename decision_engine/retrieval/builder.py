"""Retrieval as the engine's context builder: the best spans for the questions, with evidence;
and the one mapping from a retrieval name to its context builder."""

from __future__ import annotations

from collections.abc import Sequence

from ..backends.vocabulary import Vocabulary
from ..decoding.layout import ContextBuilder, ContextChoice, LeadingContext
from ..options import RETRIEVALS
from ..types import Evidence
from .context import Retriever
from .embedder import SpanEmbedder


class RetrievalContext:
    """Builds one shared context from the document's best spans (in document order) within the budget."""

    def __init__(self, retriever: Retriever, vocab: Vocabulary, evidence_per_question: int = 3):
        self.retriever = retriever
        self.vocab = vocab
        self.evidence_per_question = evidence_per_question

    @classmethod
    def create(cls, vocab: Vocabulary, dense: bool = True, evidence_per_question: int = 3) -> RetrievalContext:
        """Hybrid (dense + BM25) retrieval, or BM25 alone with `dense=False`."""
        return cls(Retriever(SpanEmbedder() if dense else None), vocab, evidence_per_question)

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice:
        if not self.evidence_per_question and len(document.split()) <= budget:
            whole = self.vocab.encode(document)  # fits whole: nothing to rank when no evidence is wanted
            if len(whole) <= budget:
                return ContextChoice(whole, [(0, len(document))], [[] for _ in questions])
        selected = self.retriever.build_context(document, list(questions), self.vocab, budget, self.evidence_per_question)
        evidence = [
            [Evidence(start=span.start, end=span.end, text=span.text, score=round(score, 4)) for span, score in picks]
            for picks in selected.evidence
        ]
        return ContextChoice(selected.token_ids, [(s.start, s.end) for s in selected.spans], evidence)


def context_for_model(retrieval: str, model, evidence_tokens: int | None = None) -> ContextBuilder:
    """The context builder for `model`: its own span pointer's per-question evidence where it has one
    (it was trained to read that way; `evidence_tokens` beside each question, None for the default), else
    the one `retrieval` names."""
    pointer = getattr(model, "span_pointer", None)
    if pointer is not None:
        from .pointed import EVIDENCE_TOKENS, PointedContext

        return PointedContext(
            model.vocab, pointer, evidence_tokens=evidence_tokens or EVIDENCE_TOKENS,
            evidence_pointer=getattr(model, "evidence_pointer", None),
        )
    return context_for(retrieval, model.vocab)


def context_for(retrieval: str, vocab: Vocabulary, evidence_per_question: int = 3) -> ContextBuilder:
    """The context builder a retrieval name stands for: "hybrid" (dense + BM25), "lexical" (BM25)
    or "leading" (the document's first tokens, no evidence)."""
    if retrieval not in RETRIEVALS:
        raise ValueError(f"unknown retrieval {retrieval!r}; use {', '.join(RETRIEVALS)}")
    if retrieval == "leading":
        return LeadingContext(vocab)
    return RetrievalContext.create(vocab, dense=retrieval == "hybrid", evidence_per_question=evidence_per_question)
