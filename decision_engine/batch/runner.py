"""The batch job loop: items in chunks of --batch-size, decided, stored under the run, written to OUT.

Whoever decides (this process or Ray actors), the store and the files are written here, in the
driver, always in this order: the store first (one commit per item, under an idempotency key made
of the run and the item id), then OUT (flushed and fsynced per chunk). A rerun therefore skips the
ids already in OUT, writes the ids already in the store from the store without deciding them again,
and decides the rest: no duplicates, nothing lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec
from sqlalchemy.orm import Session

from ..engine import Outcome
from ..errors import EngineFailure, RequestError
from ..store.recording import IdempotencyConflict, find_idempotent, load_decision, record_decision
from ..store.records import StoredDecision
from ..types import DecisionResponse, Mode
from .inputs import BatchItem
from .outputs import JobFiles, error_key
from .progress import Progress

MAX_KEY_CHARS = 300  # the store keeps idempotency keys (with a short prefix) in 320 characters


@dataclass(frozen=True)
class BatchJob:
    """Where a job's results go and how its items are decided."""

    out: Path
    run: str
    dataset: str | None = None
    mode: Mode | None = None  # overrides each request's own mode
    batch_size: int = 8


class Decider(Protocol):
    def decide(self, chunks: Iterable[list[BatchItem]]) -> Iterator[tuple[list[BatchItem], list[Outcome], str]]: ...

    def close(self) -> None: ...


def idempotency_key(run: str, item_id: str) -> str:
    """The key an item is stored under: the same run and id always give the same key."""
    key = f"batch:{run}:{item_id}"
    if len(key) <= MAX_KEY_CHARS:
        return key
    return "batch:sha256:" + hashlib.sha256(f"{run}\0{item_id}".encode()).hexdigest()


def out_line(item: BatchItem, decision_id: str, result: DecisionResponse | StoredDecision) -> dict[str, Any]:
    """One OUT line: the item's id, the store's decision id and the core response fields (and labels)."""
    line = {
        "id": item.id,
        "decision_id": decision_id,
        "answers": msgspec.to_builtins(result.answers),
        "mode": result.mode,
        "steps": result.steps,
        "model": result.model,
        "timings_ms": result.timings_ms,
    }
    if item.labels is not None:
        line["labels"] = item.labels
    return line


def error_line(item: BatchItem, reason: str) -> dict[str, Any]:
    """One errors-file line: where the item is in the input, its id when known, and why it failed."""
    return {**item.where, **({"id": item.id} if item.id is not None else {}), "reason": reason}


def run_batch(
    items: Iterable[BatchItem], job: BatchJob, decider: Decider, session: Session, progress: Progress
) -> Progress:
    """Decide every item not yet done, storing and writing each; returns the progress with its counts.

    Store outages propagate (SQLAlchemyError), as do OutputError and the decider's fatal errors;
    whatever was written until then stays valid for a rerun.
    """
    files = JobFiles(job.out)
    try:
        loop = _JobLoop(job, files, session, progress)
        for chunk, outcomes, version in decider.decide(loop.pending_chunks(items)):
            loop.record(chunk, outcomes, version)
    finally:
        files.close()
    return progress


class _InputOrder:
    """Errors-file lines in input order, whatever order items are settled in (a Ray actor may finish a later
    chunk first): each item's line waits until every earlier item is settled. Lines still waiting when a
    job stops are not lost: a rerun meets their items again."""

    def __init__(self, files: JobFiles):
        self.files = files
        self.next = 0  # the first input position not yet written out
        self.settled: dict[int, dict[str, Any] | None] = {}  # position -> its errors-file line, or None

    def settle(self, position: int, entry: dict[str, Any] | None) -> None:
        self.settled[position] = entry
        ready = []
        while self.next in self.settled:
            entry = self.settled.pop(self.next)
            if entry is not None:
                ready.append(entry)
            self.next += 1
        self.files.write_errors(ready)


class _JobLoop:
    def __init__(self, job: BatchJob, files: JobFiles, session: Session, progress: Progress):
        self.job = job
        self.files = files
        self.session = session
        self.progress = progress
        self.order = _InputOrder(files)
        self.positions: dict[int, tuple[int, BatchItem]] = {}  # id(item) -> its input position, while unsettled

    def _settle(self, item: BatchItem, entry: dict[str, Any] | None = None) -> None:
        position, _ = self.positions.pop(id(item))
        self.order.settle(position, entry)

    def pending_chunks(self, items: Iterable[BatchItem]) -> Iterator[list[BatchItem]]:
        """Chunks of the items still to decide; errors, items done earlier and items found in the store
        are dealt with on the way."""
        state = self.files.state
        chunk: list[BatchItem] = []
        for position, item in enumerate(items):
            self.positions[id(item)] = (position, item)
            if item.error is not None:
                self._fail([(item, item.error)])
            elif item.id in state.done_ids:
                self.progress.advance(skipped=1)
                self._settle(item)
            elif error_key(item.where) in state.error_keys:  # refused by the engine in an earlier run
                self.progress.advance(errors=1)
                self._settle(item)
            else:
                if self.job.mode is not None:
                    item.request.mode = self.job.mode
                if self._restored(item):
                    continue
                chunk.append(item)
                if len(chunk) >= self.job.batch_size:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    def _restored(self, item: BatchItem) -> bool:
        """Write the item's OUT line from the store if an earlier run stored it (then crashed before OUT)."""
        key = idempotency_key(self.job.run, item.id)
        try:
            decision_id = find_idempotent(self.session, key, None, item.request)
        except IdempotencyConflict:
            decision_id = find_idempotent(self.session, key, None)
            self.session.commit()
            reason = (
                f"id: {item.id!r} is already stored in run {self.job.run!r} for a different request "
                f"(decision {decision_id}); use another --run"
            )
            self._fail([(item, reason)])
            return True
        if decision_id is None:
            self.session.commit()  # ends the read transaction while the model works
            return False
        stored = load_decision(self.session, decision_id)
        self.session.commit()
        self.files.write_results([out_line(item, decision_id, stored)])
        self.progress.advance(skipped=1)
        self._settle(item)
        return True

    def record(self, chunk: list[BatchItem], outcomes: list[Outcome], version: str) -> None:
        """Store the decided items of a chunk, then append their OUT lines and the chunk's errors."""
        lines, failed, decided = [], [], []
        for item, outcome in zip(chunk, outcomes, strict=True):
            if not isinstance(outcome, DecisionResponse):
                failed.append((item, outcome.reason if isinstance(outcome, EngineFailure) else str(outcome)))
                continue
            try:
                decision_id, created = record_decision(
                    self.session,
                    item.request,
                    outcome,
                    run=self.job.run,
                    dataset=self.job.dataset,
                    external_id=item.id,
                    model_version=version,
                    idempotency_key=idempotency_key(self.job.run, item.id),
                    labels=item.labels or None,
                )
            except (RequestError, IdempotencyConflict) as error:  # a bad label; the key taken by another request
                failed.append((item, str(error)))
                continue
            result = outcome if created else load_decision(self.session, decision_id)  # stored by a concurrent run
            lines.append(out_line(item, decision_id, result))
            decided.append(item)
        self.files.write_results(lines)
        self.progress.advance(decided=len(lines))
        for item in decided:
            self._settle(item)
        self._fail(failed)

    def _fail(self, failed: list[tuple[BatchItem, str]]) -> None:
        self.progress.advance(errors=len(failed))
        for item, reason in failed:
            self._settle(item, error_line(item, reason))
