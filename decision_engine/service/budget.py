"""The per-request time budget: past it the client gets a 503 and the batcher drops the request's work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class OverBudget(Exception):
    """A request was not decided within its time budget."""

    def __init__(self, seconds: float):
        super().__init__(f"not decided within the {seconds:g} s time budget")
        self.seconds = seconds


@asynccontextmanager
async def time_budget(seconds: float) -> AsyncIterator[None]:
    """Cancel the block after `seconds`, raising OverBudget (cancelled awaits mark their work abandoned)."""
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            yield
    except TimeoutError:
        if not scope.expired():
            raise
        raise OverBudget(seconds) from None
