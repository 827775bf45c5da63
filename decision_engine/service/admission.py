"""A cap on requests in flight: past it, 429 with Retry-After, so overload sheds instead of queueing forever.

Retry-After is the time the requests in flight take to drain at the model's measured rate.
"""

from __future__ import annotations

import msgspec
from litestar.types import ASGIApp, Receive, Scope, Send

from .resources import resources_of
from .wire import ErrorBody

UNLIMITED_PATHS = ("/healthz", "/readyz")


class InFlightLimit:
    """ASGI middleware counting HTTP requests being served."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNLIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            await _too_many(send, self.limit, _retry_after(scope, self.in_flight))
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def _retry_after(scope: Scope, waiting: int) -> int:
    """Seconds until `waiting` requests drain, at the rate the app's batcher measured (1 before it has)."""
    batcher = resources_of(scope["app"]).batcher if "app" in scope else None
    return 1 if batcher is None else batcher.drain.retry_after(waiting)


async def _too_many(send: Send, limit: int, retry_after: int) -> None:
    body = msgspec.json.encode(
        ErrorBody(
            status=429, field="request", problem=f"{limit} requests are already in flight; retry in {retry_after} s"
        )
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"retry-after", str(retry_after).encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
