"""An epoch's training examples, laid out in this process or in worker processes.

Laying requests out (tokenising, ranking spans, building slot spaces) costs a few milliseconds a
group on one core; a GPU consumes groups far faster. With `workers` > 0 the examples are built by
a pool of processes, and the next epoch's are started while the current one trains. Every random
choice is drawn here, before the work is split, so workers and the plain path give the same examples.
"""

from __future__ import annotations

import multiprocessing
import random
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from ..backends.native import base_tokenizer
from ..backends.vocabulary import Vocabulary
from ..engine import DecisionEngine
from ..retrieval.gold_first import GoldFirstRetriever, gold_evidence
from .examples import Example, examples_from_line

CHUNK_LINES = 256  # request lines per task sent to a worker
_WORKER_ENGINE: DecisionEngine | None = None  # each worker's own layout engine
_WORKER_GOLD: GoldFirstLayout | None = None  # and its gold-first one, where the run asks for it


@dataclass(frozen=True)
class LayoutSpec:
    """What it takes to lay requests out exactly as the trained model will see them."""

    max_positions: int  # the model's window
    context_tokens: int | None  # document-token cap
    split_digits: bool  # how the model reads numbers
    retrieval: str  # "leading", "lexical" or "hybrid"


@dataclass(frozen=True)
class PlannedLine:
    """A request line; where drawn, which of its questions is also trained alone (a share of [0, 1)),
    and whether its context ranks each question's gold evidence first."""

    line: dict
    single: float | None
    gold_first: bool = False


class LayoutOnlyModel:
    """The part of a model the engine reads while it only lays requests out (no forward passes)."""

    name = "layout"

    def __init__(self, vocab: Vocabulary, max_positions: int, context_tokens: int | None):
        self.vocab = vocab
        self.max_positions = max_positions
        self.context_tokens = context_tokens


def context_builder(retrieval: str, vocab: Vocabulary):
    """The engine's context builder for a retrieval name; None keeps the leading tokens."""
    if retrieval == "leading":
        return None
    from ..retrieval.builder import RetrievalContext

    # Training needs no evidence, so documents that fit whole are not ranked.
    return RetrievalContext.create(vocab, dense=retrieval == "hybrid", evidence_per_question=0)


def layout_engine(spec: LayoutSpec, vocab: Vocabulary | None = None) -> DecisionEngine:
    """An engine that lays requests out as `spec` says (over `vocab`, or the base tokenizer's)."""
    vocab = vocab or Vocabulary.from_tokenizer(base_tokenizer(), split_digits=spec.split_digits)
    model = LayoutOnlyModel(vocab, spec.max_positions, spec.context_tokens)
    return DecisionEngine(model, context=context_builder(spec.retrieval, vocab))


def plan_epoch(
    lines: Sequence[dict], independent_share: float, rng: random.Random, gold_evidence_share: float = 0.0
) -> list[PlannedLine]:
    """Each line, with a draw choosing whether (and which) one question is also trained alone, and,
    for lines carrying gold evidence when `gold_evidence_share` > 0, a draw choosing gold-first context."""
    planned = []
    for line in lines:
        alone, which = rng.random(), rng.random()
        gold = bool(gold_evidence_share) and "evidence" in line and rng.random() < gold_evidence_share
        planned.append(PlannedLine(line, which if alone < independent_share else None, gold))
    return planned


def require_ranked_retrieval(spec: LayoutSpec) -> None:
    """Gold-first contexts rank spans, so `spec` must rank them: a clear error if it keeps leading tokens."""
    if spec.retrieval == "leading":
        raise ValueError("gold-evidence-first contexts need ranked retrieval (lexical or hybrid), not 'leading'")


class GoldFirstLayout:
    """A layout engine whose retrieval ranks the gold evidence of the lines it is given first."""

    def __init__(self, spec: LayoutSpec, vocab: Vocabulary | None = None):
        require_ranked_retrieval(spec)
        self.engine = layout_engine(spec, vocab)
        self.gold: dict[tuple[str, str], list[tuple[int, int]]] = {}
        self.engine.context.retriever = GoldFirstRetriever(self.engine.context.retriever, self.gold)

    def engine_for(self, line: dict) -> DecisionEngine:
        """The engine, with `line`'s gold evidence registered (a question's evidence is the same in every line)."""
        self.gold.update(gold_evidence(line))
        return self.engine


def planned_examples(
    engine: DecisionEngine, planned: Sequence[PlannedLine], gold_layout: GoldFirstLayout | None = None
) -> list[Example]:
    """The joint block of every line, plus the single-question blocks the plan asks for; lines planned
    gold-first are laid out by `gold_layout`."""
    examples: list[Example] = []
    for item in planned:
        line_engine = engine
        if item.gold_first:
            if gold_layout is None:
                raise ValueError("a line is planned gold-first but no gold-first layout was given")
            line_engine = gold_layout.engine_for(item.line)
        examples.extend(examples_from_line(line_engine, item.line, "joint"))
        if item.single is not None:
            singles = examples_from_line(line_engine, item.line, "independent")
            if singles:
                examples.append(singles[int(item.single * len(singles))])
    return examples


def _start_worker(spec: LayoutSpec, gold_first: bool) -> None:
    global _WORKER_ENGINE, _WORKER_GOLD
    _WORKER_ENGINE = layout_engine(spec)
    _WORKER_GOLD = GoldFirstLayout(spec) if gold_first else None


def _worker_examples(planned: list[PlannedLine]) -> list[Example]:
    return planned_examples(_WORKER_ENGINE, planned, _WORKER_GOLD)


class ExamplePreparer:
    """Builds epochs of examples: in this process (`workers` 0) or on a pool, one epoch ahead.

    `gold_first` also prepares a gold-evidence-first layout for the lines planned that way.
    """

    def __init__(self, spec: LayoutSpec, workers: int = 0, vocab: Vocabulary | None = None, gold_first: bool = False):
        self.engine = layout_engine(spec, vocab) if workers == 0 else None
        self.gold_layout = GoldFirstLayout(spec, vocab) if gold_first and workers == 0 else None
        if gold_first:
            require_ranked_retrieval(spec)  # before any worker starts
        self.pool = None
        if workers > 0:
            self.pool = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                initargs=(spec, gold_first),
            )

    def start(self, planned: list[PlannedLine]) -> list[Future] | list[PlannedLine]:
        """Begin an epoch's examples; pass the result to `finish`."""
        if self.pool is None:
            return planned
        return [self.pool.submit(_worker_examples, planned[i : i + CHUNK_LINES]) for i in range(0, len(planned), CHUNK_LINES)]

    def finish(self, started) -> list[Example]:
        """The examples of an epoch begun with `start`, in line order."""
        if self.pool is None:
            return planned_examples(self.engine, started, self.gold_layout)
        return [e for future in started for e in future.result()]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def __enter__(self) -> ExamplePreparer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
