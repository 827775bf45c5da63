"""What deciding can end in besides a response: a refused request (naming the field), or an engine failure."""

from __future__ import annotations

from dataclasses import dataclass, field


class RequestError(ValueError):
    """A request that cannot be decided, with the JSON path of the offending field."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "problem": self.problem}


@dataclass
class EngineFailure:
    """The engine failed on a request for a reason other than refusing it (a bug, out of memory)."""

    reason: str
    error: BaseException | None = field(default=None, compare=False, repr=False)  # the cause, where at hand
