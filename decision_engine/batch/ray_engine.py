"""Deciding a batch job's chunks on a Ray cluster: one model replica per actor, results streamed back.

Only the deciding moves to Ray; the driver keeps reading the input, writing the store and OUT, so
resuming works exactly as for a local job. Plain actors (not Ray Data) are used so the input is
streamed with a bounded number of chunks in flight rather than materialised up front.
Ray is optional: `pip install 'decision-engine[ray]'`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import msgspec

from ..engine import Outcome
from ..errors import EngineFailure, RequestError
from ..options import EngineOptions
from ..types import DecisionRequest, DecisionResponse
from .job_engine import build_job_engine

IN_FLIGHT_PER_ACTOR = 2  # chunks queued on each actor, so it never waits for the driver


class RayUnavailable(Exception):
    """Ray is not installed, cannot start, or an actor cannot build its engine."""


class ChunkDecider:
    """The body of each Ray actor: builds the engine once, then decides chunks of encoded requests."""

    def __init__(self, options: EngineOptions):
        from ..model.loader import ModelLoadError

        self.problem: str | None = None
        try:
            self.engine = build_job_engine(options)
        except ModelLoadError as error:
            self.problem = str(error)
            return
        self.version = self.engine.model.version

    def decide(self, payloads: list[bytes]) -> tuple[str, list[tuple]]:
        """(model version, one encoded outcome per request), or ("", [("fatal", why)]) without an engine."""
        if self.problem is not None:
            return "", [("fatal", self.problem)]
        requests = [msgspec.json.decode(payload, type=DecisionRequest) for payload in payloads]
        return self.version, [_encode(outcome) for outcome in self.engine.decide_many(requests)]


def _encode(outcome: Outcome) -> tuple:
    if isinstance(outcome, DecisionResponse):
        return ("ok", msgspec.json.encode(outcome))
    if isinstance(outcome, RequestError):
        return ("refused", outcome.field, outcome.problem)
    return ("failed", outcome.reason)


def _decode(encoded: tuple) -> Outcome:
    if encoded[0] == "ok":
        return msgspec.json.decode(encoded[1], type=DecisionResponse)
    if encoded[0] == "refused":
        return RequestError(encoded[1], encoded[2])
    return EngineFailure(encoded[1])


class RayDecider:
    """Decides chunks on `actors` Ray actors (default: one per CPU, or per GPU with a cuda device)."""

    def __init__(self, options: EngineOptions, address: str | None = None, cpus: int = 2, actors: int | None = None):
        try:
            import ray
        except ModuleNotFoundError:
            raise RayUnavailable("Ray is not installed; run: pip install 'decision-engine[ray]'") from None
        self._ray = ray
        try:
            if address:
                ray.init(address=address, logging_level=logging.WARNING)
            else:
                ray.init(num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING)
        except ModuleNotFoundError as error:  # a ray:// address needs Ray Client's extra packages
            raise RayUnavailable(f"cannot connect to {address}: {error}; run: pip install 'ray[client]'") from None
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise RayUnavailable(f"cannot start Ray{f' at {address}' if address else ''}: {_first_line(error)}") from None
        try:
            on_gpu = options.device.startswith("cuda")
            count = actors or max(1, int(ray.cluster_resources().get("GPU" if on_gpu else "CPU", 1)))
            remote = ray.remote(**({"num_gpus": 1, "num_cpus": 1} if on_gpu else {"num_cpus": 1}))(ChunkDecider)
            self.actors = [remote.remote(options) for _ in range(count)]
        except BaseException:
            ray.shutdown()
            raise

    def decide(self, chunks: Iterable[list]) -> Iterator[tuple[list, list[Outcome], str]]:
        """For each chunk, as soon as an actor has decided it: (chunk, outcomes, model version)."""
        ray = self._ray
        chunks = iter(chunks)
        in_flight: dict = {}  # ObjectRef -> (chunk, actor index)
        load = [0] * len(self.actors)

        def submit() -> bool:
            chunk = next(chunks, None)
            if chunk is None:
                return False
            index = min(range(len(self.actors)), key=load.__getitem__)
            payloads = [msgspec.json.encode(item.request) for item in chunk]
            in_flight[self.actors[index].decide.remote(payloads)] = (chunk, index)
            load[index] += 1
            return True

        more = True
        while more and len(in_flight) < IN_FLIGHT_PER_ACTOR * len(self.actors):
            more = submit()
        while in_flight:
            [ready], _ = ray.wait(list(in_flight), num_returns=1)
            chunk, index = in_flight.pop(ready)
            load[index] -= 1
            try:
                version, encoded = ray.get(ready)
            except ray.exceptions.RayError as error:
                raise RayUnavailable(f"a Ray actor failed: {_first_line(error)}") from None
            if encoded and encoded[0][0] == "fatal":
                raise RayUnavailable(f"a Ray actor cannot build its engine: {encoded[0][1]}")
            yield chunk, [_decode(outcome) for outcome in encoded], version
            if more:
                more = submit()

    def close(self) -> None:
        self._ray.shutdown()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
