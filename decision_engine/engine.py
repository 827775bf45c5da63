"""From requests to responses: layout, one shared denoising run, checks; a bad request fails alone."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import torch

from .backends.protocol import DenoisingModel
from .decoding.agreement import agreed_answers, decided_answers
from .decoding.denoise import run_denoising
from .decoding.grounded_space import GroundedSpace
from .decoding.layout import ContextBuilder, Grounding, Layout, LeadingContext, lay_out
from .decoding.provenance import fixed_by, rule_bounded
from .decoding.slot_space import ChoiceSpace
from .decoding.value_agreement import agreed_values, grounded_answers
from .errors import EngineFailure, RequestError
from .precision import computing_in
from .reader.absence_gate import is_hypothesis_slot
from .types import Answer, DecisionRequest, DecisionResponse, Mode
from .validation import Limits
from .values import kind, value_problem

Outcome = DecisionResponse | RequestError | EngineFailure


class InvalidOutputError(AssertionError):
    """The engine produced a value or a rule violation it should have made impossible."""


class DecisionEngine:
    """Decides requests with one model; many requests can share forward passes."""

    def __init__(
        self,
        model: DenoisingModel,
        limits: Limits = Limits(),
        context: ContextBuilder | None = None,
        grounder: Grounding | None = None,
        dtype: torch.dtype = torch.float32,
        precision: str | None = None,
    ):
        self.model = model
        self.dtype = dtype  # what forward passes autocast to (precision.py)
        # the precision the engine was built in: float32, bfloat16, or int8 (int8 linear layers, float32 between)
        self.precision = precision or str(dtype).removeprefix("torch.")
        self.limits = limits
        self.context = context or LeadingContext(model.vocab)
        self.grounder = grounder  # grounded integer and date slots, for a model with a value chooser
        self.context_tokens = model.context_tokens  # document-token cap: the one the model was trained with

    def decide(self, request: DecisionRequest, mode: Mode | None = None) -> DecisionResponse:
        return self.decide_batch([request], mode)[0]

    def decide_batch(self, requests: Sequence[DecisionRequest], mode: Mode | None = None) -> list[DecisionResponse]:
        """Decide several requests together; `mode` overrides each request's own. Any failure raises."""
        started = time.perf_counter()
        prepared = [self.prepare(r, mode or r.mode) for r in requests]
        return self.run(prepared, (time.perf_counter() - started) * 1e3)

    def decide_many(self, requests: Sequence[DecisionRequest], mode: Mode | None = None) -> list[Outcome]:
        """Decide requests in one shared run, one outcome per request: its response, the RequestError
        that refuses it, or an EngineFailure. A bad request costs only its own answer."""
        started = time.perf_counter()
        laid_out = self.lay_out_many(requests, mode)
        return self.decide_laid_out(laid_out, (time.perf_counter() - started) * 1e3)

    def lay_out_many(
        self, requests: Sequence[DecisionRequest], mode: Mode | None = None
    ) -> list[Layout | RequestError | EngineFailure]:
        """Each request's layout (`mode` overrides its own), or why it has none."""
        laid_out: list[Layout | RequestError | EngineFailure] = []
        for request in requests:
            try:
                laid_out.append(self.prepare(request, mode or request.mode))
            except RequestError as error:
                laid_out.append(error)
            except Exception as error:  # noqa: BLE001 - a bug on one request must not cost the others
                laid_out.append(_failure(error))
        return laid_out

    def decide_laid_out(
        self, laid_out: Sequence[Layout | RequestError | EngineFailure], prepare_ms: float = 0.0
    ) -> list[Outcome]:
        """Denoise the layouts together; refusals and failures pass through. If the shared run fails,
        each request is laid out afresh and decided alone, so the one that broke it fails alone."""
        outcomes: list[Outcome | None] = [item if not isinstance(item, Layout) else None for item in laid_out]
        layouts = [item for item in laid_out if isinstance(item, Layout)]
        if not layouts:
            return outcomes
        try:
            timings = self._denoise(layouts, prepare_ms)
        except Exception as error:  # noqa: BLE001 - isolate the request that breaks the shared run
            if len(layouts) == 1:
                decided = [error if isinstance(error, RequestError) else _failure(error)]
            else:
                decided = [self.decide_many([p.request], p.mode)[0] for p in layouts]
        else:
            decided = [self._checked_response(p, timings) for p in layouts]
        answers = iter(decided)
        return [outcome if outcome is not None else next(answers) for outcome in outcomes]

    def run(self, prepared: Sequence[Layout], prepare_ms: float = 0.0) -> list[DecisionResponse]:
        """Denoise laid-out requests together and build their responses; any failure raises."""
        timings = self._denoise(prepared, prepare_ms)
        return [self._respond(p, timings) for p in prepared]

    def prepare(self, request: DecisionRequest, mode: Mode) -> Layout:
        """Check a request and lay it out for this engine's model; raises RequestError."""
        model = self.model
        with computing_in(self.dtype, model.device):
            return lay_out(
                request, mode, model.vocab, self.context, model.max_positions, self.context_tokens, self.limits,
                reads_documents=model.reads_documents, grounder=self.grounder,
                gate=getattr(model, "absence_gate", None), verdict=getattr(model, "verdict_reader", None),
                choices=getattr(model, "choice_reader", None), cross=getattr(model, "cross_reader", None),
            )

    def _denoise(self, prepared: Sequence[Layout], prepare_ms: float) -> dict[str, float]:
        started = time.perf_counter()
        with computing_in(self.dtype, self.model.device):
            run_denoising(self.model, [b for p in prepared for b in p.blocks])
        denoise_ms = (time.perf_counter() - started) * 1e3
        return {
            "prepare": prepare_ms,
            "denoise": denoise_ms,
            "total": prepare_ms + denoise_ms,
            "batch_size": float(len(prepared)),
        }

    def _checked_response(self, p: Layout, timings: dict[str, float]) -> Outcome:
        try:
            return self._respond(p, timings)
        except RequestError as error:
            return error
        except Exception as error:  # noqa: BLE001 - an invalid output costs only its own request
            return _failure(error)

    def _respond(self, p: Layout, timings: dict[str, float]) -> DecisionResponse:
        constraints = p.group.constraints
        values = [constraints.value(s) for s in range(len(constraints.spaces))]
        for question, value in zip(p.request.questions, values):
            problem = value_problem(question.schema, value)
            if problem:
                raise InvalidOutputError(f"question {question.id!r}: {problem}")
        broken = p.rules.violations(values)
        if broken:
            raise InvalidOutputError(f"answers break rules {broken}")
        settled = fixed_by(p.request, p.group.chosen)
        own = [math.exp(log) for log in p.group.log_confidence]  # a forced slot's own is 1.0: nothing was chosen
        calibration = getattr(self.model, "calibration", None)  # the model's own map of raw confidence, if any
        if calibration is not None:
            own = [
                calibration.apply(calibration_kind(p, i), c, p.mode) if how == "model" else c
                for i, (c, how) in enumerate(zip(own, settled))
            ]
        if p.mode == "joint":
            values, own = self._agreed(p, values, settled, own)
        confidences = rule_bounded(p.request, values, settled, own)
        answers = [
            Answer(
                id=q.id,
                value=v,
                confidence=round(confidences[i], 6),
                step=p.group.fixed_step[i] or 0,
                fixed_by=settled[i],
                evidence=_grounded(p, i, confidences[i]) + (p.evidence[i] or _pointed(p, i)) or None,
            )
            for i, (q, v) in enumerate(zip(p.request.questions, values))
        ]
        return DecisionResponse(
            answers=answers,
            mode=p.mode,
            steps=sum(b.steps for b in p.blocks),
            passes=sum(b.passes for b in p.blocks),
            model=self.model.name,
            timings_ms={k: round(v, 3) for k, v in timings.items()},
        )

    def _agreed(self, p: Layout, values: list, settled: list, own: list[float]) -> tuple[list, list[float]]:
        """A joint request's boolean and enum answers weighed again with the surer ones, where the model
        has an agreement reader (`decoding/agreement.py`), then its integer and date answers, where it has
        a value agreement reader (`decoding/value_agreement.py`); as they are otherwise."""
        embedder = getattr(self.context, "embedder", None)
        if embedder is None:
            return values, own
        questions = p.request.questions
        reader = getattr(self.model, "agreement_reader", None)
        if reader is not None:
            kept = [calibration_kind(p, slot) == "compared" for slot in range(len(values))]
            values, own = agreed_answers(reader, embedder, questions, values, own, settled, kept, p.rules)
        weighs_values = getattr(self.model, "value_agreement_reader", None)
        if weighs_values is None:
            return values, own
        constraints = p.group.constraints
        grounded = grounded_answers(
            questions, constraints.spaces, constraints.patterns, settled, own, p.request.document.text, embedder
        )
        if not grounded:
            return values, own
        answers = [item for _, item in decided_answers(questions, values, own, settled, embedder)]
        return agreed_values(weighs_values, grounded, answers, constraints.spaces, values, own, p.rules)


def calibration_kind(p: Layout, slot: int) -> str:
    """The answer kind whose calibration map a slot's confidence goes through: "compared" for a boolean
    a comparison chose (its confidence is the comparison chooser's, not the reader's), "hypothesis" for
    an enum the absence gate shifted (its odds are the reader's and the gate's), else its kind."""
    space = p.group.constraints.spaces[slot]
    if space.choice_bias is not None and isinstance(space, ChoiceSpace) and is_hypothesis_slot(space.values):
        return "hypothesis"
    if isinstance(space, GroundedSpace) and space.chosen(p.group.constraints.patterns[slot]) is not None:
        if isinstance(space.values[0], bool):
            return "compared"
    return kind(p.request.questions[slot].schema)


def _grounded(p: Layout, slot: int, confidence: float) -> list:
    """The mentions a grounded slot's value came from, first in its evidence (empty for other slots)."""
    from .grounding.grounder import grounded_evidence

    return grounded_evidence(p.group.constraints.spaces[slot], p.group.constraints.patterns[slot], confidence)


def _pointed(p: Layout, slot: int) -> list:
    """The evidence a reading model pointed at for one question (empty for other models)."""
    block = p.group.block_of[slot]
    return block.pointed.get(block.numbers[block.slots.index(slot)], []) if block is not None else []


def _failure(error: BaseException) -> EngineFailure:
    return EngineFailure(f"engine failure: {type(error).__name__}: {error}", error)
