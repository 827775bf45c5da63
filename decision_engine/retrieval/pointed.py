"""Each question's own evidence, chosen by the model's span pointer and laid beside the question.

The document is cut into spans and embedded once (cached per document); the pointer ranks the spans
for each question, and the best ones, up to `EVIDENCE_TOKENS` tokens, follow that question in the
prefix in document order. The pointer's probabilities are the evidence each answer reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..backends.vocabulary import Vocabulary
from ..decoding.layout import ContextChoice
from ..reader.evidence import EVIDENCE_SPANS
from ..reader.span_pointer import SpanPointer
from ..types import Evidence
from .context import SPAN_CHARS, zscore
from .embedder import SpanEmbedder
from .lexical import bm25_scores
from .spans import Span, split_spans

EVIDENCE_TOKENS = 160  # tokens of evidence laid beside each question
MAX_PASSES = 8  # spans a question passes over for not fitting before it stops choosing


@dataclass
class PointerFeatures:
    """What the pointer scores: a document's spans, their vectors, the questions' vectors and BM25."""

    spans: list[Span]
    span_vectors: torch.Tensor  # (S, D)
    question_vectors: torch.Tensor  # (Q, D)
    lexical: torch.Tensor  # (Q, S) z-scored BM25


def pointer_features(embedder: SpanEmbedder, document: str, questions: Sequence[str]) -> PointerFeatures:
    spans = split_spans(document, SPAN_CHARS)
    texts = [s.text for s in spans]
    span_vectors = embedder.embed_spans(document, spans)
    question_vectors = embedder.embed_questions(list(questions))
    lexical = zscore(bm25_scores(list(questions), texts)) if spans else np.zeros((len(questions), 0))
    return PointerFeatures(spans, span_vectors, question_vectors, torch.as_tensor(lexical, dtype=torch.float32))


RANKED_SPANS = 8  # best spans per question a value chooser is told the rank of


@dataclass
class QuestionEvidence:
    """Where the pointer looks for one question: its best spans (character ranges, best first) and
    the ones laid beside it (in document order)."""

    ranked: list[tuple[int, int]]
    shown: list[tuple[int, int]]


class PointedContext:
    """The engine's context builder for a model with a span pointer: per-question evidence."""

    def __init__(
        self,
        vocab: Vocabulary,
        pointer: SpanPointer,
        embedder: SpanEmbedder | None = None,
        evidence_tokens: int = EVIDENCE_TOKENS,
    ):
        self.vocab = vocab
        self.pointer = pointer
        self.embedder = embedder or SpanEmbedder()
        self.evidence_tokens = evidence_tokens

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice:
        spans, probs, rankings, chosen, tokens = self._point(document, questions)
        if not spans:
            empty = [[] for _ in questions]
            return ContextChoice([], [], [[] for _ in questions], per_question=empty, question_ranges=[[] for _ in questions])
        per_question, question_ranges, evidence = [], [], []
        for row, ranking, picked in zip(probs, rankings, chosen):
            per_question.append([t for s in sorted(picked) for t in tokens[s]][: self.evidence_tokens])
            question_ranges.append([(spans[s].start, spans[s].end) for s in sorted(picked)])
            evidence.append([_evidence(spans[s], row[s]) for s in ranking[:EVIDENCE_SPANS]])
        shown = sorted({r for ranges in question_ranges for r in ranges})
        return ContextChoice([], shown, evidence, per_question=per_question, question_ranges=question_ranges)

    def question_evidence(self, document: str, questions: Sequence[str]) -> list[QuestionEvidence]:
        """Per question, its best spans and the ones laid beside it, as `__call__` lays them out."""
        spans, _, rankings, chosen, _ = self._point(document, questions)
        return [
            QuestionEvidence(
                [(spans[s].start, spans[s].end) for s in ranking[:RANKED_SPANS]],
                [(spans[s].start, spans[s].end) for s in sorted(picked)],
            )
            for ranking, picked in zip(rankings, chosen)
        ]

    def _point(self, document: str, questions: Sequence[str]):
        """The document's spans, the pointer's (Q, S) probabilities, each question's ranking and the
        spans chosen for it, and the chosen spans' tokens."""
        features = pointer_features(self.embedder, document, questions)
        if not features.spans:
            return [], [], [[] for _ in questions], [[] for _ in questions], {}
        with torch.no_grad():
            logits = self.pointer(features.question_vectors, features.span_vectors, features.lexical)
        probs = logits.float().softmax(dim=-1).cpu().numpy()  # (Q, S)
        tokens: dict[int, list[int]] = {}
        rankings = [np.argsort(-row, kind="stable").tolist() for row in probs]
        chosen = [self._fill(features.spans, np.asarray(ranking), tokens) for ranking in rankings]
        return features.spans, probs, rankings, chosen, tokens

    def _fill(self, spans: list[Span], ranking: np.ndarray, tokens: dict[int, list[int]]) -> list[int]:
        """The best-ranked spans that fit the evidence budget together (the best one always, cut to fit)."""
        chosen, used, passed = [], 0, 0
        for s in ranking.tolist():
            if s not in tokens:
                tokens[s] = self.vocab.encode(spans[s].text)
            if not chosen or used + len(tokens[s]) <= self.evidence_tokens:
                chosen.append(s)
                used += len(tokens[s])
            else:
                passed += 1
            if used >= self.evidence_tokens or passed >= MAX_PASSES:
                break
        return chosen


def _evidence(span: Span, probability: float) -> Evidence:
    return Evidence(start=span.start, end=span.end, text=span.text, score=round(float(probability), 4))
