"""Gathering concurrent requests into shared model calls, run off the event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..engine import DecisionEngine
from ..errors import EngineFailure, RequestError
from ..types import DecisionRequest, DecisionResponse
from .drain import DrainRate


class QueueFull(Exception):
    """The batcher already holds as many decisions as it admits; `retry_after` says when it will have room."""

    def __init__(self, waiting: int, retry_after: int):
        super().__init__(f"{waiting} decisions are already waiting for the model; retry in {retry_after} s")
        self.retry_after = retry_after


@dataclass
class _Pending:
    request: DecisionRequest
    future: asyncio.Future
    abandoned: bool = False  # its client stopped waiting (a time budget ran out): skip its work


class DecisionBatcher:
    """Requests arriving within `max_wait_ms` of each other (up to `max_batch`) share denoising passes.

    One worker thread runs the model, so the event loop stays free and the model sees one batch at a time;
    requests that arrive while a batch runs form the next one. At most `max_waiting` decisions wait or
    run at once; past that a request is turned away at once (`QueueFull`, a 429 whose Retry-After is
    the measured time the waiting ones take), so admitted requests never queue behind an unbounded crowd.
    Given a factory instead of an engine, the
    model is built in that same thread: PyTorch's CPU thread pool belongs to the thread that first computes,
    and a model loaded in one thread and run in another runs markedly slower.
    """

    def __init__(
        self,
        engine: DecisionEngine | Callable[[], DecisionEngine],
        max_batch: int = 16,
        max_wait_ms: float = 5.0,
        max_waiting: int = 24,
    ):
        self._factory = None if isinstance(engine, DecisionEngine) else engine
        self.engine: DecisionEngine | None = engine if self._factory is None else None
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1e3
        self.max_waiting = max_waiting
        self.waiting = 0  # decisions admitted and not yet answered
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.batches = 0  # model calls so far, for tests and metrics
        self.largest_batch = 0
        self.drain = DrainRate()  # measured model seconds per request, for Retry-After

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decision-model")
        if self.engine is None:
            try:
                self.engine = await asyncio.get_running_loop().run_in_executor(self._pool, self._factory)
            except BaseException:
                self._pool.shutdown(wait=False)
                raise
        self._worker = asyncio.create_task(self._serve())

    async def stop(self) -> None:
        """Finish what is queued, then stop the worker."""
        if self._worker is None:
            return
        while self._queue is not None and not self._queue.empty():
            await asyncio.sleep(0.01)
        self._worker.cancel()
        try:
            await self._worker
        except asyncio.CancelledError:
            pass
        self._pool.shutdown(wait=True)
        self._worker = None

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        """Decide one request in the next shared batch; raises RequestError for a request the model cannot
        take, and the engine's own error where it failed on this request."""
        if self._queue is None:
            raise RuntimeError("the batcher is not started")
        if self.waiting >= self.max_waiting:
            raise QueueFull(self.waiting, self.drain.retry_after(self.waiting))
        pending = _Pending(request, asyncio.get_running_loop().create_future())
        self.waiting += 1
        try:
            await self._queue.put(pending)
            return await pending.future
        except asyncio.CancelledError:
            pending.abandoned = True  # the model thread drops it if it has not started on it
            raise
        finally:
            self.waiting -= 1

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            deadline = loop.time() + self.max_wait_s
            while len(batch) < self.max_batch:
                if not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                    continue
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), left))
                except TimeoutError:
                    break
            batch = [p for p in batch if not p.abandoned]  # their clients have had their 503
            if not batch:
                continue
            self.batches += 1
            self.largest_batch = max(self.largest_batch, len(batch))
            # every request gets its own outcome: one bad request fails alone.
            started = loop.time()
            outcomes = await loop.run_in_executor(self._pool, self._decide, batch)
            self.drain.observe(len(batch), loop.time() - started)
            for pending, outcome in zip(batch, outcomes):
                if pending.future.done():  # the client went away
                    continue
                if isinstance(outcome, EngineFailure):  # a 500 for this client, its cause logged
                    pending.future.set_exception(outcome.error or RuntimeError(outcome.reason))
                elif isinstance(outcome, RequestError):  # this client's 400
                    pending.future.set_exception(outcome)
                else:
                    pending.future.set_result(outcome)

    def _decide(self, batch: Sequence[_Pending]) -> list:
        """In the model thread: lay out the batch, then denoise it, leaving out requests abandoned meanwhile
        (laying out checks the rules; a request whose client gave up costs no model time)."""
        started = time.perf_counter()
        laid_out = self.engine.lay_out_many([p.request for p in batch])
        gone = EngineFailure("abandoned: its time budget ran out")
        laid_out = [gone if p.abandoned else item for p, item in zip(batch, laid_out)]
        return self.engine.decide_laid_out(laid_out, (time.perf_counter() - started) * 1e3)
