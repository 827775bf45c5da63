"""Dashboard sign-in: a random session id in an HttpOnly cookie, mapped in server memory to an API key id.

The cookie never holds the key. It is SameSite=Strict, so no other site can make the browser send
it; that is the CSRF defence (the sign-in form is the only POST). Sessions live in this process:
a restart signs everyone out.
"""

from __future__ import annotations

import secrets
import time

from litestar.datastructures import Cookie

COOKIE = "de_dashboard"
PATH = "/dashboard"
LIFETIME_S = 12 * 3600  # a working day; then sign in again
MAX_SESSIONS = 10_000  # past it the oldest sessions are dropped


class DashboardSessions:
    """Signed-in sessions: random id -> (API key id, expiry on the monotonic clock)."""

    def __init__(self, lifetime_s: float = LIFETIME_S, limit: int = MAX_SESSIONS):
        self.lifetime_s = lifetime_s
        self.limit = limit
        self._sessions: dict[str, tuple[int, float]] = {}

    def open(self, key_id: int) -> str:
        """A new session for the key; returns its id, the cookie's value."""
        now = time.monotonic()
        self._sessions = {sid: held for sid, held in self._sessions.items() if held[1] > now}
        while len(self._sessions) >= self.limit:
            del self._sessions[next(iter(self._sessions))]
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = (key_id, now + self.lifetime_s)
        return session_id

    def key_id(self, session_id: str | None) -> int | None:
        """The API key id of a live session, None when unknown or expired."""
        held = self._sessions.get(session_id or "")
        if held is None or held[1] <= time.monotonic():
            return None
        return held[0]

    def close(self, session_id: str | None) -> None:
        self._sessions.pop(session_id or "", None)


def session_cookie(session_id: str, secure: bool) -> Cookie:
    return Cookie(
        key=COOKIE,
        value=session_id,
        path=PATH,
        max_age=LIFETIME_S,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def cleared_cookie(secure: bool) -> Cookie:
    return Cookie(key=COOKIE, value="", path=PATH, max_age=0, httponly=True, samesite="strict", secure=secure)
