"""From requests to responses: slot spaces, rules, layout, one shared denoising run, checks."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .backends.protocol import DenoisingModel
from .decoding.constraints import GroupConstraints
from .decoding.denoise import Block, GroupRun, run_denoising
from .decoding.layout import build_prefix, context_budget, leading_context, question_tokens
from .decoding.slot_space import build_space
from .errors import RequestError
from .rules import RuleSet
from .types import Answer, DecisionRequest, DecisionResponse, Mode
from .validation import Limits, validate_request
from .values import value_problem


class InvalidOutputError(AssertionError):
    """The engine produced a value or a rule violation it should have made impossible."""


@dataclass
class _Prepared:
    request: DecisionRequest
    mode: Mode
    group: GroupRun
    rules: RuleSet
    blocks: list[Block]


class DecisionEngine:
    """Decides requests with one model; many requests can share forward passes."""

    def __init__(self, model: DenoisingModel, limits: Limits = Limits()):
        self.model = model
        self.limits = limits

    def decide(self, request: DecisionRequest, mode: Mode | None = None) -> DecisionResponse:
        return self.decide_batch([request], mode)[0]

    def decide_batch(self, requests: Sequence[DecisionRequest], mode: Mode | None = None) -> list[DecisionResponse]:
        """Decide several requests together; `mode` overrides each request's own."""
        started = time.perf_counter()
        prepared = [self._prepare(r, mode or r.mode) for r in requests]
        prepared_at = time.perf_counter()
        run_denoising(self.model, [b for p in prepared for b in p.blocks])
        done_at = time.perf_counter()
        timings = {
            "prepare": (prepared_at - started) * 1e3,
            "denoise": (done_at - prepared_at) * 1e3,
            "total": (done_at - started) * 1e3,
            "batch_size": float(len(requests)),
        }
        return [self._respond(p, timings) for p in prepared]

    def _prepare(self, request: DecisionRequest, mode: Mode) -> _Prepared:
        validate_request(request, self.limits)
        vocab = self.model.vocab
        schemas = [q.schema for q in request.questions]
        ids = [q.id for q in request.questions]
        rules = RuleSet.compile(schemas, ids, request.rules)
        spaces = [
            build_space(q.schema, vocab, rules.classes[i], f"questions[{i}].schema")
            for i, q in enumerate(request.questions)
        ]
        options = request.options
        total_len = sum(s.length for s in spaces)
        max_steps = options.max_steps or (total_len if mode != "independent" else max(s.length for s in spaces))
        group = GroupRun(GroupConstraints(spaces, rules), options.threshold, max_steps)
        questions = question_tokens(vocab, [q.text for q in request.questions])
        try:
            budget = context_budget(vocab, self.model.max_positions, questions, total_len, options.context_tokens)
        except ValueError as error:
            raise RequestError("questions", f"{error} (the model holds {self.model.max_positions} tokens)") from None
        context = leading_context(vocab, request.document.text, budget)
        slots = list(range(len(spaces)))
        if mode == "independent":
            blocks = [
                Block(group, [s], [1], build_prefix(vocab, [(1, questions[s])], context)) for s in slots
            ]
        else:
            numbered = [(s + 1, questions[s]) for s in slots]
            prefix = build_prefix(vocab, numbered, context)
            blocks = [Block(group, slots, [s + 1 for s in slots], prefix, sequential=mode == "sequential")]
        return _Prepared(request, mode, group, rules, blocks)

    def _respond(self, p: _Prepared, timings: dict[str, float]) -> DecisionResponse:
        constraints = p.group.constraints
        values = [constraints.value(s) for s in range(len(constraints.spaces))]
        for question, value in zip(p.request.questions, values):
            problem = value_problem(question.schema, value)
            if problem:
                raise InvalidOutputError(f"question {question.id!r}: {problem}")
        broken = p.rules.violations(values)
        if broken:
            raise InvalidOutputError(f"answers break rules {broken}")
        answers = [
            Answer(
                id=q.id,
                value=v,
                confidence=round(math.exp(p.group.log_confidence[i]), 6),
                step=p.group.fixed_step[i] or 0,
            )
            for i, (q, v) in enumerate(zip(p.request.questions, values))
        ]
        return DecisionResponse(
            answers=answers,
            mode=p.mode,
            steps=sum(b.steps for b in p.blocks),
            model=self.model.name,
            timings_ms={k: round(v, 3) for k, v in timings.items()},
        )
