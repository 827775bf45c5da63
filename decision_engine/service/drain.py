"""How fast the model drains its queue, measured, so a 429 can tell clients when to come back."""

from __future__ import annotations

import math

MAX_RETRY_AFTER_S = 120  # never ask a client to wait longer than this
SMOOTHING = 0.2  # weight of the newest batch in the running mean of seconds per request


class DrainRate:
    """Seconds of model time per request, a running mean over recent batches."""

    def __init__(self) -> None:
        self.per_request_s: float | None = None  # None until the first batch ran

    def observe(self, requests: int, seconds: float) -> None:
        """One batch of `requests` took `seconds` of model time."""
        if requests <= 0 or seconds < 0:
            return
        latest = seconds / requests
        mean = self.per_request_s
        self.per_request_s = latest if mean is None else (1 - SMOOTHING) * mean + SMOOTHING * latest

    def retry_after(self, waiting: int) -> int:
        """Whole seconds until `waiting` requests have drained at the measured rate (1 before any measure)."""
        if self.per_request_s is None:
            return 1
        return max(1, min(MAX_RETRY_AFTER_S, math.ceil(waiting * self.per_request_s)))
