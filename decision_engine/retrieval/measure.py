"""Evidence recall and latency of retrieval on ContractNLI.

    python -m decision_engine.retrieval.measure --path contractnli_test_split.json [--budget 320]

For every document, the hypotheses are asked in groups of 8 (and one at a time); for each group the
shared context is built within the token budget, and we count the gold evidence ranges it covers
(at least half their characters) for lexical-only, dense-only and combined scoring.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..backends.native import base_tokenizer
from ..backends.vocabulary import Vocabulary
from ..datasets.contractnli import NliDocument, load_contractnli, to_requests
from .context import SPAN_CHARS, Retriever
from .coverage import evidence_recall
from .embedder import MAX_TOKENS, SpanEmbedder

TOP_K = 4  # spans per hypothesis for the ranking hit rate


@dataclass
class Tally:
    covered: int = 0
    total: int = 0
    hits: int = 0  # hypotheses with a gold range covered by their top-K spans
    asked: int = 0  # hypotheses with any gold evidence

    def row(self) -> str:
        recall = self.covered / max(self.total, 1)
        hit_rate = self.hits / max(self.asked, 1)
        return (
            f"recall {recall:6.3f} ({self.covered}/{self.total})   "
            f"top-{TOP_K} hit {hit_rate:6.3f} ({self.hits}/{self.asked})"
        )


def groups_of(doc: NliDocument, hypotheses: dict[str, str], size: int) -> list[list[str]]:
    """Hypothesis keys of the requests `to_requests` makes, in key order."""
    return [[q["id"] for q in request["questions"]] for request in to_requests(doc, hypotheses, size)]


def evaluate(
    docs: Sequence[NliDocument],
    hypotheses: dict[str, str],
    retriever: Retriever,
    vocab: Vocabulary,
    budget: int,
    group_size: int,
) -> Tally:
    tally = Tally()
    for doc in docs:
        for keys in groups_of(doc, hypotheses, group_size):
            questions = [hypotheses[k] for k in keys]
            selected = retriever.build_context(doc.text, questions, vocab, budget)
            spans, scores = retriever.score(doc.text, questions)
            for q, key in enumerate(keys):
                gold = doc.evidence.get(key, [])
                if not gold:
                    continue
                covered, total = evidence_recall(gold, [(s.start, s.end) for s in selected.spans])
                tally.covered += covered
                tally.total += total
                top = [(spans[s].start, spans[s].end) for s in np.argsort(-scores[q], kind="stable")[:TOP_K]]
                tally.asked += 1
                tally.hits += evidence_recall(gold, top)[0] > 0
    return tally


def latency(
    docs: Sequence[NliDocument],
    hypotheses: dict[str, str],
    retriever: Retriever,
    vocab: Vocabulary,
    budget: int,
    around_chars: int = 10_000,
    samples: int = 7,
) -> tuple[float, float]:
    """Median seconds for one 8-hypothesis context of documents near `around_chars`: (cold, warm cache)."""
    nearest = sorted(docs, key=lambda d: abs(len(d.text) - around_chars))[:samples]
    cold, warm = [], []
    for doc in nearest:
        questions = [hypotheses[k] for k in groups_of(doc, hypotheses, 8)[0]]
        if retriever.embedder is not None:
            retriever.embedder.clear_cache()
        start = time.perf_counter()
        retriever.build_context(doc.text, questions, vocab, budget)
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        retriever.build_context(doc.text, questions, vocab, budget)
        warm.append(time.perf_counter() - start)
    return statistics.median(cold), statistics.median(warm)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="ContractNLI split JSON")
    parser.add_argument("--budget", type=int, default=320, help="context tokens per group")
    parser.add_argument(
        "--max-chars", type=int, nargs="+", default=[SPAN_CHARS], help="longest span (several to compare)"
    )
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="embedder truncation")
    parser.add_argument("--limit", type=int, default=None, help="first N documents only")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    docs, hypotheses = load_contractnli(args.path)
    docs = docs[: args.limit] if args.limit else docs
    vocab = Vocabulary.from_tokenizer(base_tokenizer())
    embedder = SpanEmbedder(cache_size=1 << 16, max_tokens=args.max_tokens, device=args.device)
    print(
        f"{len(docs)} documents, {len(hypotheses)} hypotheses, budget {args.budget} tokens, "
        f"embedder truncation {args.max_tokens} tokens"
    )
    for max_chars in args.max_chars:
        scorers = {
            "lexical": Retriever(None, max_chars=max_chars),
            "dense": Retriever(embedder, 1.0, 0.0, max_chars=max_chars),
            "combined": Retriever(embedder, 1.0, 1.0, max_chars=max_chars),
        }
        for group_size in (8, 1):
            for name, retriever in scorers.items():
                start = time.perf_counter()
                tally = evaluate(docs, hypotheses, retriever, vocab, args.budget, group_size)
                seconds = time.perf_counter() - start
                label = f"max_chars {max_chars:4d}  group {group_size}  {name:9s}"
                print(f"{label} {tally.row()}   [{seconds:.1f}s]", flush=True)
        cold, warm = latency(docs, hypotheses, scorers["combined"], vocab, args.budget)
        lexical = latency(docs, hypotheses, scorers["lexical"], vocab, args.budget)[0]
        print(
            f"max_chars {max_chars:4d}  latency, 8 hypotheses, ~10,000-char document: combined "
            f"cold {cold * 1000:.0f} ms, warm {warm * 1000:.0f} ms; lexical only {lexical * 1000:.0f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
