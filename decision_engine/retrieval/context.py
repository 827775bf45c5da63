"""One shared context for several questions: rank spans per question, fill a token budget round-robin."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..backends.vocabulary import Vocabulary
from .embedder import SpanEmbedder
from .lexical import bm25_scores
from .spans import Span, split_spans

SPAN_CHARS = 400  # longest span; see measure.py for the recall this gives
MIN_FILL = 4  # stop looking for spans once fewer tokens than this are left
MAX_PASSES = 16  # spans a question may pass over for not fitting before it stops choosing


@dataclass
class SelectedContext:
    """Token ids of the chosen spans and, per question, its best chosen spans."""

    token_ids: list[int]
    spans: list[Span]  # chosen, in document order
    evidence: list[list[tuple[Span, float]]]  # per question: (span, score), best first


def zscore(rows: np.ndarray) -> np.ndarray:
    """Each row shifted to mean 0 and scaled to unit deviation; constant rows become 0."""
    mean = rows.mean(axis=1, keepdims=True)
    std = rows.std(axis=1, keepdims=True)
    return np.where(std > 1e-12, (rows - mean) / np.where(std > 1e-12, std, 1.0), 0.0)


class Retriever:
    """Scores a document's spans against questions by dense cosine and BM25, and builds contexts."""

    def __init__(
        self,
        embedder: SpanEmbedder | None,
        dense_weight: float = 1.0,
        lexical_weight: float = 1.0,
        max_chars: int = SPAN_CHARS,
    ):
        self.embedder = embedder
        self.dense_weight = dense_weight if embedder is not None else 0.0
        self.lexical_weight = lexical_weight
        self.max_chars = max_chars

    def score(self, document_text: str, questions: list[str]) -> tuple[list[Span], np.ndarray]:
        """The document's spans and a (Q, S) relevance matrix: weighted sum of z-scored cosine and BM25."""
        spans = split_spans(document_text, self.max_chars)
        scores = np.zeros((len(questions), len(spans)), dtype=np.float64)
        if not spans or not questions:
            return spans, scores
        if self.dense_weight and self.embedder is not None:
            span_vectors = self.embedder.embed_spans(document_text, spans)  # (S, 384)
            question_vectors = self.embedder.embed_questions(questions)  # (Q, 384)
            # numpy, not torch: torch's thread pool costs milliseconds on a product this small
            cosine = question_vectors.numpy().astype(np.float64) @ span_vectors.numpy().astype(np.float64).T  # (Q, S)
            scores += self.dense_weight * zscore(cosine)
        if self.lexical_weight:
            lexical = bm25_scores(questions, [s.text for s in spans])  # (Q, S)
            scores += self.lexical_weight * zscore(lexical)
        return spans, scores

    def build_context(
        self,
        document_text: str,
        questions: list[str],
        vocab: Vocabulary,
        budget_tokens: int,
        evidence_per_question: int = 3,
    ) -> SelectedContext:
        """The document's best spans for all `questions` together, at most `budget_tokens` tokens.

        Questions take turns choosing their next-best span not yet chosen, so each gets its best
        spans in before any gets its fifth; a span that does not fit is passed over.
        """
        spans, scores = self.score(document_text, questions)
        if budget_tokens <= 0 or not spans:
            return SelectedContext([], [], [[] for _ in questions])
        if len(document_text.split()) <= budget_tokens:  # every word is at least one token
            whole = vocab.encode(document_text)
            if len(whole) <= budget_tokens:
                evidence = _evidence(spans, scores, range(len(spans)), evidence_per_question)
                return SelectedContext(whole, list(spans), evidence)
        chosen, tokens = _round_robin(spans, scores, vocab, budget_tokens)
        chosen.sort()
        return SelectedContext(
            [t for s in chosen for t in tokens[s]],
            [spans[s] for s in chosen],
            _evidence(spans, scores, chosen, evidence_per_question),
        )


def _round_robin(
    spans: list[Span], scores: np.ndarray, vocab: Vocabulary, budget: int
) -> tuple[list[int], dict[int, list[int]]]:
    """Indices of the spans chosen in turns by the questions, and the token ids of every span encoded."""
    tokens: dict[int, list[int]] = {}
    chosen: list[int] = []
    taken = np.zeros(len(spans), dtype=bool)
    rankings = [np.argsort(-row, kind="stable") for row in scores]  # best first, per question
    cursor = [0] * len(rankings)  # next rank each question looks at
    passed = [0] * len(rankings)  # spans it passed over for not fitting
    used = 0
    active = list(range(len(rankings)))
    while active and budget - used >= MIN_FILL:
        for q in active:
            ranking = rankings[q]
            while cursor[q] < len(ranking) and passed[q] < MAX_PASSES:
                s = int(ranking[cursor[q]])
                cursor[q] += 1
                if taken[s]:
                    continue
                if s not in tokens:
                    tokens[s] = vocab.encode(spans[s].text)
                if used + len(tokens[s]) <= budget:
                    taken[s] = True
                    chosen.append(s)
                    used += len(tokens[s])
                    break
                passed[q] += 1
        active = [q for q in active if cursor[q] < len(rankings[q]) and passed[q] < MAX_PASSES]
    return chosen, tokens


def _evidence(
    spans: list[Span], scores: np.ndarray, chosen: Sequence[int], per_question: int
) -> list[list[tuple[Span, float]]]:
    """Per question, its `per_question` highest-scoring spans among `chosen`."""
    index = np.asarray(chosen, dtype=np.int64)
    out = []
    for row in scores:
        if per_question <= 0 or not len(index):
            out.append([])
            continue
        best = index[np.argsort(-row[index], kind="stable")[:per_question]]
        out.append([(spans[s], float(row[s])) for s in best])
    return out
