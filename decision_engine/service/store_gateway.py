"""The service's way into the SQL store: each call runs in a worker thread with its own session."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

import anyio.to_thread
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ..store import keys as key_store
from ..store import listing, recording, reports, retention
from ..store.database import StoreUnavailable, create_db_engine, is_unavailable, session_factory
from ..store.keys import KeyIdentity
from ..store.recording import Filing
from ..store.records import (
    AccuracyReport, DecisionFilters, DecisionPage, Removed, ReportFilters, RunList, StoredDecision
)
from ..types import DecisionRequest, DecisionResponse

T = TypeVar("T")


class StoreGateway:
    """Opens the database once and offers the calls the handlers need, without blocking the event loop."""

    def __init__(self, url: str, store_text: bool = True, key_cache_s: float = 0.0):
        self.engine = create_db_engine(url)
        self.sessions = session_factory(self.engine)
        self.store_text = store_text
        self.key_cache_s = key_cache_s
        self._keys: dict[str, tuple[float, KeyIdentity | None]] = {}

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """The one place a session opens and closes: one per call, an outage raised as StoreUnavailable."""
        try:
            with self.sessions() as session:
                yield session
        except SQLAlchemyError as error:
            if is_unavailable(error):
                raise StoreUnavailable(str(error).splitlines()[0]) from error
            raise

    async def _call(self, work: Callable[..., T], *args, **kwargs) -> T:
        def in_session() -> T:
            with self._session() as session:
                return work(session, *args, **kwargs)

        return await anyio.to_thread.run_sync(in_session)

    async def query(self, work: Callable[..., T], *args) -> T:
        """`work(session, *args)` in a worker thread: how pages run their queries."""
        return await self._call(work, *args)

    async def ping(self) -> None:
        await self._call(lambda session: session.execute(text("SELECT 1")))

    async def authenticate(self, key: str) -> KeyIdentity | None:
        """The key's identity, trusted for `key_cache_s` after each check against the store (0: asked every
        time, so a revoked or expired key is refused from its next request)."""
        if self.key_cache_s <= 0:
            return await self._call(key_store.authenticate, key)
        now = time.monotonic()
        cached = self._keys.get(key)
        if cached and now - cached[0] < self.key_cache_s:
            return cached[1]
        identity = await self._call(key_store.authenticate, key)
        if len(self._keys) > 10_000:
            self._keys.clear()
        self._keys[key] = (now, identity)
        return identity

    async def record(self, request: DecisionRequest, response: DecisionResponse, **filing) -> tuple[str, bool]:
        return await self._call(partial(recording.record_decision, store_text=self.store_text, **filing), request, response)

    async def find_idempotent(
        self, idempotency_key: str, api_key_id: int | None, request: DecisionRequest, filing: Filing
    ) -> str | None:
        return await self._call(recording.find_idempotent, idempotency_key, api_key_id, request, filing)

    async def load(self, decision_id: str) -> StoredDecision:
        return await self._call(recording.load_decision, decision_id)

    async def label(self, decision_id: str, labels: dict, api_key_id: int | None) -> StoredDecision:
        return await self._call(recording.apply_labels, decision_id, labels, api_key_id=api_key_id)

    async def report(self, filters: ReportFilters) -> AccuracyReport:
        return await self._call(reports.accuracy_report, filters)

    async def decisions(self, filters: DecisionFilters, limit: int, cursor: str | None) -> DecisionPage:
        return await self._call(listing.list_decisions, filters, limit, cursor)

    async def runs(self) -> RunList:
        return await self._call(listing.list_runs)

    async def delete(self, decision_id: str) -> Removed:
        return await self._call(retention.delete_decision, decision_id)
