"""The local decider: feeds the job loop chunk by chunk, each chunk decided in one shared run."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..engine import DecisionEngine, Outcome
from ..errors import EngineFailure

__all__ = ["EngineFailure", "LocalDecider", "Outcome"]  # EngineFailure and Outcome: their old import path


class LocalDecider:
    """Decides each chunk in this process, in input order."""

    def __init__(self, engine: DecisionEngine):
        self.engine = engine
        self.version = engine.model.version

    def decide(self, chunks: Iterable[list]) -> Iterator[tuple[list, list[Outcome], str]]:
        """For each chunk of items (each with a `.request`), yield (chunk, outcomes, model version)."""
        for chunk in chunks:
            yield chunk, self.engine.decide_many([item.request for item in chunk]), self.version

    def close(self) -> None:
        pass
