"""Each question's own evidence, chosen by the model's span pointer and laid beside the question.

The document is cut into spans and embedded once (cached per document); the pointer ranks the spans
for each question, and the best ones, up to `EVIDENCE_TOKENS` tokens, follow that question in the
prefix in document order. The pointer's probabilities are the evidence each answer reports; a model
with a second, evidence pointer (`orders_evidence`) reports the spans its question was shown in that
pointer's order first, then the rest, so what an answer cites is what its reader read.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..backends.vocabulary import Vocabulary
from ..decoding.layout import ContextChoice
from ..reader.absence_gate import PassageStrength
from ..reader.evidence import EVIDENCE_SPANS
from ..reader.span_pointer import SpanPointer
from ..types import Evidence
from .context import SPAN_CHARS, zscore
from .embedder import SpanEmbedder
from .lexical import Bm25Index
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


def pointer_features(
    embedder: SpanEmbedder, document: str, questions: Sequence[str], spans: list[Span] | None = None,
    index: Bm25Index | None = None,
) -> PointerFeatures:
    """The pointer's inputs for `questions` over `document` (cut into spans, and the spans indexed for
    BM25, here unless given)."""
    spans = split_spans(document, SPAN_CHARS) if spans is None else spans
    span_vectors = embedder.embed_spans(document, spans)
    question_vectors = embedder.embed_questions(list(questions))
    if spans:
        index = index or Bm25Index([s.text for s in spans])
        lexical = zscore(index.scores(list(questions)))
    else:
        lexical = np.zeros((len(questions), 0))
    return PointerFeatures(spans, span_vectors, question_vectors, torch.as_tensor(lexical, dtype=torch.float32))


DOCUMENT_CACHE = 256  # documents whose spans and span tokens are kept
POINTED_CACHE = 4096  # (document, question) pairs whose pointing is kept


@dataclass
class _Document:
    spans: list[Span]
    index: Bm25Index  # the spans, tokenized for BM25
    tokens: dict[int, list[int]]  # span index -> its tokens, filled as spans are laid out


@dataclass
class _Pointed:
    probabilities: np.ndarray  # (S,) the pointer's distribution over the document's spans
    ranking: list[int]  # span indices, best first
    chosen: list[int]  # the spans laid beside the question
    reported: list[int]  # the spans an answer reports, best first
    reported_probabilities: np.ndarray  # (S,) the probabilities reported with them
    strength: float  # the layout pointer's best raw score: how strongly some span speaks to the question


def _strength(pointed: _Pointed, spans: int) -> PassageStrength:
    return PassageStrength(pointed.strength, spans, float(pointed.probabilities.max()))


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
        evidence_pointer: SpanPointer | None = None,
    ):
        self.vocab = vocab
        self.pointer = pointer
        self.evidence_pointer = evidence_pointer  # orders reported evidence; None: the layout pointer's order
        self.embedder = embedder or SpanEmbedder()
        self.evidence_tokens = evidence_tokens
        self._lock = threading.RLock()
        self._documents: OrderedDict[str, _Document] = OrderedDict()  # digest -> spans and their tokens
        self._pointed: OrderedDict[tuple[str, str], _Pointed] = OrderedDict()  # (digest, question) -> where it looks

    def clear_cache(self) -> None:
        """Forget every document and question, and the sentence encoder's vectors of them."""
        with self._lock:
            self._documents.clear()
            self._pointed.clear()
        _call(self.embedder, "clear_cache")

    def forget_questions(self) -> None:
        """Forget what was pointed at for each question (and the questions' vectors); keep the documents'."""
        with self._lock:
            self._pointed.clear()
        _call(self.embedder, "forget_questions")

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice:
        spans, pointed, tokens = self._point(document, questions)
        if not spans:
            empty = [[] for _ in questions]
            return ContextChoice([], [], [[] for _ in questions], per_question=empty, question_ranges=[[] for _ in questions])
        per_question, question_ranges, evidence = [], [], []
        for p in pointed:
            per_question.append([t for s in sorted(p.chosen) for t in tokens[s]][: self.evidence_tokens])
            question_ranges.append([(spans[s].start, spans[s].end) for s in sorted(p.chosen)])
            evidence.append([_evidence(spans[s], p.reported_probabilities[s]) for s in p.reported[:EVIDENCE_SPANS]])
        shown = sorted({r for ranges in question_ranges for r in ranges})
        return ContextChoice(
            [], shown, evidence, per_question=per_question, question_ranges=question_ranges,
            strength=[_strength(p, len(spans)) for p in pointed],
        )

    def question_evidence(self, document: str, questions: Sequence[str]) -> list[QuestionEvidence]:
        """Per question, its best spans and the ones laid beside it, as `__call__` lays them out."""
        spans, pointed, _ = self._point(document, questions)
        return [
            QuestionEvidence(
                [(spans[s].start, spans[s].end) for s in p.ranking[:RANKED_SPANS]],
                [(spans[s].start, spans[s].end) for s in sorted(p.chosen)],
            )
            for p in pointed
        ]

    def strengths(self, document: str, questions: Sequence[str]) -> list[PassageStrength] | None:
        """Per question, how strongly the best span speaks to it (what `__call__` reports as `strength`);
        None for a document without spans."""
        spans, pointed, _ = self._point(document, questions)
        return [_strength(p, len(spans)) for p in pointed] if spans else None

    def _point(self, document: str, questions: Sequence[str]):
        """The document's spans, each question's pointing (`_Pointed`) and the spans' tokens. Each
        (document, question) is pointed once and kept (up to `POINTED_CACHE` pairs, least recently
        used first out): the value chooser and the layout of one request both ask, and so may a later
        request."""
        digest = hashlib.sha256(document.encode("utf-8")).hexdigest()
        with self._lock:
            read = self._document(digest, document)
            if not read.spans:
                return [], [], {}
            missing = [q for q in dict.fromkeys(questions) if (digest, q) not in self._pointed]
            if missing:
                self._point_missing(digest, document, read, missing)
            pointed = []
            for q in questions:
                self._pointed.move_to_end((digest, q))
                pointed.append(self._pointed[(digest, q)])
                for span in pointed[-1].chosen:  # the document may have been read again since it was pointed at
                    if span not in read.tokens:
                        read.tokens[span] = self.vocab.encode(read.spans[span].text)
            while len(self._pointed) > POINTED_CACHE:
                self._pointed.popitem(last=False)
        return read.spans, pointed, read.tokens

    def _document(self, digest: str, document: str) -> _Document:
        read = self._documents.get(digest)
        if read is None:
            spans = split_spans(document, SPAN_CHARS)
            read = self._documents[digest] = _Document(spans, Bm25Index([s.text for s in spans]), {})
            while len(self._documents) > DOCUMENT_CACHE:
                self._documents.popitem(last=False)
        self._documents.move_to_end(digest)
        return read

    def _point_missing(self, digest: str, document: str, read: _Document, questions: list[str]) -> None:
        features = pointer_features(self.embedder, document, questions, read.spans, read.index)
        logits = _logits(self.pointer, features)  # (Q, S)
        probs, best = logits.softmax(dim=-1).numpy(), logits.max(dim=-1).values.tolist()
        cited = probs if self.evidence_pointer is None else _logits(self.evidence_pointer, features).softmax(dim=-1).numpy()
        for q, row, cited_row, strength in zip(questions, probs, cited, best):
            ranking = np.argsort(-row, kind="stable").tolist()
            chosen = self._fill(read.spans, np.asarray(ranking), read.tokens)
            reported = ranking if self.evidence_pointer is None else _reported(cited_row, chosen)
            self._pointed[(digest, q)] = _Pointed(row, ranking, chosen, reported, cited_row, strength)

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


def _logits(pointer: SpanPointer, features: PointerFeatures) -> torch.Tensor:
    """(Q, S) a pointer's raw scores of each question over the document's spans, on the CPU."""
    with torch.no_grad():
        return pointer(features.question_vectors, features.span_vectors, features.lexical).float().cpu()


def _reported(probabilities: np.ndarray, chosen: Sequence[int]) -> list[int]:
    """The spans an answer reports, best first: the ones shown to its question, most probable first,
    then the others the same way."""
    order = np.argsort(-probabilities, kind="stable").tolist()
    shown = set(chosen)
    return [s for s in order if s in shown] + [s for s in order if s not in shown]


def _call(owner, name: str) -> None:
    """Call `owner.name()` where it has one (a stand-in sentence encoder may keep nothing)."""
    method = getattr(owner, name, None)
    if method is not None:
        method()


def _evidence(span: Span, probability: float) -> Evidence:
    return Evidence(start=span.start, end=span.end, text=span.text, score=round(float(probability), 4))
