"""Service settings: everything the app factory needs, with embedded defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..options import EngineOptions
from ..validation import Limits


@dataclass(frozen=True)
class ServiceSettings:
    """How the service runs; the defaults give a working service on one machine."""

    database_url: str | None = None  # None: $DATABASE_URL, else a SQLite file in the working folder
    engine: EngineOptions = field(default_factory=EngineOptions)  # the model, device, retrieval and request limits
    auth: bool = True  # Bearer API keys; off only for local experiments
    store_document_text: bool = True  # False keeps only each document's SHA-256 and length
    migrate: bool = True  # upgrade the store to the newest schema on start
    run: str = "api"  # run name under which API decisions are stored unless a request names one
    max_body_bytes: int = 8 * 1024 * 1024  # a 1M-character document in JSON, with room to spare
    max_in_flight: int = 64  # requests being served at once; past it, 429 with Retry-After
    batch_max: int = 16  # requests gathered into one model call
    max_queued_decisions: int = 24  # decisions waiting for or in the model; past it, 429 with the measured Retry-After
    batch_wait_ms: float = 5.0  # how long the first request of a batch waits for company
    request_timeout_s: float = 30.0  # a decision not made by then is a 503 and its work is dropped
    key_cache_s: float = 0.0  # how long a checked API key is trusted without asking the store (0: every request)

    @property
    def limits(self) -> Limits:
        """Size limits on accepted requests (the engine's)."""
        return self.engine.limits
