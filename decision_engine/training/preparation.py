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
from multiprocessing.pool import AsyncResult
from dataclasses import dataclass
from functools import partial

from ..backends.native import base_tokenizer
from ..backends.vocabulary import Vocabulary
from ..decoding.layout import ContextBuilder, lay_out
from ..retrieval.builder import context_for
from .examples import Example, LayoutFunction, examples_from_line

CHUNK_LINES = 256  # request lines per task sent to a worker
_WORKER_LAYOUT: LayoutFunction | None = None  # each worker's own layout function
_WORKER_EMBEDDER = None  # and its span pointer's embedder, when it has one


@dataclass(frozen=True)
class LayoutSpec:
    """What it takes to lay requests out exactly as the trained model will see them."""

    max_positions: int  # the model's window
    context_tokens: int | None  # document-token cap
    split_digits: bool  # how the model reads numbers
    retrieval: str  # "leading", "lexical" or "hybrid"
    pointer: dict | None = None  # a trained span pointer's state: each question's own evidence (retrieval/pointed.py)
    pointer_folds: list | None = None  # cross-fitting: each fold's pointer state and document keys (cross_fitting.py)


@dataclass(frozen=True)
class PlannedLine:
    """A request line and, where drawn, which of its questions is also trained alone (a share of [0, 1))."""

    line: dict
    single: float | None


def layout_for(spec: LayoutSpec, vocab: Vocabulary | None = None, context: ContextBuilder | None = None) -> LayoutFunction:
    """`lay_out` as `spec` says (over `vocab`, or the base tokenizer's): (request, mode) -> its layout.
    `context`, when given, is the one `spec` describes already built (a worker builds its own)."""
    vocab = vocab or Vocabulary.from_tokenizer(base_tokenizer(), split_digits=spec.split_digits)
    if context is None and spec.pointer is not None:
        context = pointed_context(vocab, spec.pointer, spec.pointer_folds)
    # Training needs no evidence, so documents that fit whole are not ranked.
    context = context or context_for(spec.retrieval, vocab, evidence_per_question=0)
    return partial(
        lay_out, vocab=vocab, context=context, max_positions=spec.max_positions, context_tokens=spec.context_tokens
    )


def pointed_context(vocab: Vocabulary, pointer_state: dict, folds: list | None = None) -> ContextBuilder:
    """Per-question evidence from a frozen span pointer, every training document's vectors kept; with
    `folds` (state, document keys), those documents laid out by their fold's pointer instead."""
    from ..reader.span_pointer import SpanPointer
    from ..retrieval.embedder import SpanEmbedder
    from ..retrieval.pointed import PointedContext

    def pointer_from(state: dict) -> SpanPointer:
        pointer = SpanPointer()
        pointer.load_state_dict(state)
        return pointer.eval()

    context = PointedContext(vocab, pointer_from(pointer_state), SpanEmbedder(cache_size=4096))
    if not folds:
        return context
    from .cross_fitting import CrossFittedContext

    return CrossFittedContext(context, [(pointer_from(state), keys) for state, keys in folds])


def plan_epoch(lines: Sequence[dict], independent_share: float, rng: random.Random) -> list[PlannedLine]:
    """Each line, with a draw choosing whether (and which) one question is also trained alone."""
    planned = []
    for line in lines:
        alone, which = rng.random(), rng.random()
        planned.append(PlannedLine(line, which if alone < independent_share else None))
    return planned


def planned_examples(layout: LayoutFunction, planned: Sequence[PlannedLine]) -> list[Example]:
    """The joint block of every line, plus the single-question blocks the plan asks for."""
    examples: list[Example] = []
    for item in planned:
        examples.extend(examples_from_line(layout, item.line, "joint"))
        if item.single is not None:
            singles = examples_from_line(layout, item.line, "independent")
            if singles:
                examples.append(singles[int(item.single * len(singles))])
    return examples


def _start_worker(spec: LayoutSpec) -> None:
    global _WORKER_LAYOUT, _WORKER_EMBEDDER
    import torch

    torch.set_num_threads(1)  # one core each: a pool of workers, each on every core, mostly waits on the others
    _WORKER_LAYOUT = layout_for(spec)
    _WORKER_EMBEDDER = getattr(_WORKER_LAYOUT.keywords["context"], "embedder", None)


def _worker_examples(planned: list[PlannedLine], span_vectors: list | None = None) -> list[Example]:
    if span_vectors and _WORKER_EMBEDDER is not None:
        _WORKER_EMBEDDER.remember_spans(span_vectors)
    return planned_examples(_WORKER_LAYOUT, planned)


class ExamplePreparer:
    """Builds epochs of examples: in this process (`workers` 0) or on a pool, one epoch ahead. With a
    pool and a span pointer, `embedder` (a `SpanEmbedder`, e.g. on the GPU) embeds each chunk's
    documents' spans here, in one batch, and the workers take those vectors instead of embedding
    each document on their own CPU (nearly all of a generated group's layout time)."""

    def __init__(
        self,
        spec: LayoutSpec,
        workers: int = 0,
        vocab: Vocabulary | None = None,
        context: ContextBuilder | None = None,
        embedder=None,
    ):
        self.layout = layout_for(spec, vocab, context) if workers == 0 else None
        self.embedder = embedder if workers > 0 and spec.pointer is not None else None
        self.pool = None
        if workers > 0:
            self.pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_start_worker, initargs=(spec,))

    def start(self, planned: list[PlannedLine]) -> list[AsyncResult] | list[PlannedLine]:
        """Begin an epoch's examples; pass the result to `finish`."""
        if self.pool is None:
            return planned
        chunks = [planned[i : i + CHUNK_LINES] for i in range(0, len(planned), CHUNK_LINES)]
        return [self.pool.apply_async(_worker_examples, (chunk, self._span_vectors(chunk))) for chunk in chunks]

    def _span_vectors(self, chunk: list[PlannedLine]) -> list | None:
        if self.embedder is None:
            return None
        return self.embedder.span_vectors([p.line["document"]["text"] for p in chunk])

    def finish(self, started) -> list[Example]:
        """The examples of an epoch begun with `start`, in line order."""
        if self.pool is None:
            return planned_examples(self.layout, started)
        return [e for chunk in started for e in chunk.get()]

    def close(self) -> None:
        if self.pool is not None:  # an epoch laid out ahead that training will not reach is dropped, not waited for
            self.pool.terminate()
            self.pool.join()

    def __enter__(self) -> ExamplePreparer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
