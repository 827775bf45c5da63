"""Deciding one chunk of requests, and the local decider that feeds the job loop chunk by chunk."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..engine import DecisionEngine
from ..errors import RequestError
from ..service.batcher import decide_together
from ..types import DecisionRequest, DecisionResponse


@dataclass
class EngineFailure:
    """The engine failed on a request for a reason other than refusing it (a bug, out of memory)."""

    reason: str


Outcome = DecisionResponse | RequestError | EngineFailure


def decide_chunk(engine: DecisionEngine, requests: list[DecisionRequest]) -> list[Outcome]:
    """Decide requests in one shared run, the service's path; a failing shared run is retried one by one,
    so one bad request costs only its own answer."""
    try:
        outcomes = decide_together(engine, requests)
    except Exception as error:  # isolate the request that breaks the shared run
        if len(requests) == 1:
            return [EngineFailure(f"engine failure: {type(error).__name__}: {error}")]
        return [decide_chunk(engine, [request])[0] for request in requests]
    return [
        outcome if isinstance(outcome, (DecisionResponse, RequestError))
        else EngineFailure(f"engine failure: {type(outcome).__name__}: {outcome}")
        for outcome in outcomes
    ]


def model_version(engine: DecisionEngine) -> str:
    """The checkpoint's short content hash, as the service stores it ("" when the model has none)."""
    return getattr(engine.model, "version", "") or ""


class LocalDecider:
    """Decides each chunk in this process, in input order."""

    def __init__(self, engine: DecisionEngine):
        self.engine = engine
        self.version = model_version(engine)

    def decide(self, chunks: Iterable[list]) -> Iterator[tuple[list, list[Outcome], str]]:
        """For each chunk of items (each with a `.request`), yield (chunk, outcomes, model version)."""
        for chunk in chunks:
            yield chunk, decide_chunk(self.engine, [item.request for item in chunk]), self.version

    def close(self) -> None:
        pass
