"""A cap on requests in flight: past it, 429 with Retry-After, so overload sheds instead of queueing forever."""

from __future__ import annotations

import msgspec
from litestar.types import ASGIApp, Receive, Scope, Send

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
            await _too_many(send, self.limit)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


async def _too_many(send: Send, limit: int) -> None:
    body = msgspec.json.encode(
        ErrorBody(status=429, field="request", problem=f"{limit} requests are already in flight; retry shortly")
    )
    headers = [(b"content-type", b"application/json"), (b"retry-after", b"1"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
