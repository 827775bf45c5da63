"""Okapi BM25 scores of spans against questions: the lexical half of retrieval."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

K1 = 1.5  # term-frequency saturation
B = 0.75  # length normalisation: 0 none, 1 full

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers him his how i if in into is it its itself just me more most my no nor not
    of off on once only or other our ours out over own same she should so some such than that the their
    theirs them then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours
    """.split()
)
# Negations ("no", "not", "nor") are in the list: they occur in most clauses and do not help ranking;
# telling "shall" from "shall not" is the model's job, not retrieval's.

_TOKEN = re.compile(r"[a-z0-9]+")
# Inflections stripped so "disclose", "disclosed" and "disclosure" meet ("disclos"); this lifts
# evidence recall on ContractNLI by about two points (measure.py).
_SUFFIX = re.compile(r"(?:ations?|ments?|ities|ity|ives?|ures?|ions?|ings?|ally|al|ly|ed|es|s|e)$")
STEM_MIN = 4  # words this short, and stems shorter than STEM_MIN - 1, are kept whole


def stem(word: str) -> str:
    """A crude suffix-stripping stemmer: enough to match inflected forms of the same word."""
    if len(word) <= STEM_MIN or word.isdigit():
        return word
    stripped = _SUFFIX.sub("", word)
    return stripped if len(stripped) >= STEM_MIN - 1 else word


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric words, stopwords removed, stemmed."""
    return [stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class Bm25Index:
    """A collection of spans, tokenized once, that scores queries by BM25 (each span a document)."""

    def __init__(self, spans: list[str], k1: float = K1, b: float = B):
        self.k1 = k1
        self.docs = [Counter(tokenize(s)) for s in spans]
        lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        mean_length = (lengths.mean() if self.docs else 0.0) or 1.0
        self.norm = k1 * (1.0 - b + b * lengths / mean_length)  # (S,)
        self.document_frequency: Counter[str] = Counter()
        for d in self.docs:
            self.document_frequency.update(d.keys())

    def scores(self, queries: list[str]) -> np.ndarray:
        """(Q, S) BM25 score of every span for every query."""
        n, k1 = len(self.docs), self.k1
        scores = np.zeros((len(queries), n), dtype=np.float64)
        for q, query in enumerate(queries):
            for term in set(tokenize(query)):
                df = self.document_frequency.get(term, 0)
                if not df:
                    continue
                idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))  # the non-negative (Lucene) form
                tf = np.fromiter((d.get(term, 0) for d in self.docs), dtype=np.float64, count=n)
                scores[q] += idf * tf * (k1 + 1.0) / (tf + self.norm)
        return scores


def bm25_scores(queries: list[str], spans: list[str], k1: float = K1, b: float = B) -> np.ndarray:
    """(Q, S) BM25 score of every span (as a document of the collection `spans`) for every query."""
    return Bm25Index(spans, k1, b).scores(queries)
