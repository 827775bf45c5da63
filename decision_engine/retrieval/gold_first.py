"""Retrieval with each question's gold evidence ranked first: what a perfect retriever would show the model.

For evaluation only (`decision-engine eval --gold-evidence-first`): it needs the gold evidence ranges of
labelled groups, keyed by document text and question text. Spans overlapping a question's gold ranges
outrank every other span for that question; the rest keep the wrapped retriever's order, and the context
is built within the same budget as usual.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .context import Retriever
from .spans import Span

GoldEvidence = Mapping[tuple[str, str], Sequence[tuple[int, int]]]  # (document text, question text) -> ranges


def gold_evidence(line: Mapping) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """The gold evidence ranges a labelled request line carries ("evidence": question id -> ranges),
    keyed as `GoldFirstRetriever` reads them; questions without evidence are left out."""
    text = line["document"]["text"]
    evidence = line.get("evidence") or {}
    return {
        (text, question["text"]): [(int(start), int(end)) for start, end in evidence[question["id"]]]
        for question in line["questions"]
        if evidence.get(question["id"])
    }


class GoldFirstRetriever(Retriever):
    """`inner`'s scoring, with the spans that overlap gold evidence lifted above all others."""

    def __init__(self, inner: Retriever, gold: GoldEvidence):
        super().__init__(inner.embedder, inner.dense_weight, inner.lexical_weight, inner.max_chars)
        self.gold = gold

    def score(self, document_text: str, questions: list[str]) -> tuple[list[Span], np.ndarray]:
        spans, scores = super().score(document_text, questions)
        if not scores.size:
            return spans, scores
        lift = float(scores.max() - scores.min()) + 1.0
        for q, question in enumerate(questions):
            ranges = self.gold.get((document_text, question), ())
            for s, span in enumerate(spans):
                if any(min(end, span.end) > max(start, span.start) for start, end in ranges):
                    scores[q, s] += lift
        return spans, scores
