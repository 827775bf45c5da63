"""From requests to responses: slot spaces, rules, layout, one shared denoising run, checks."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .backends.protocol import DenoisingModel
from .decoding.constraints import GroupConstraints
from .decoding.denoise import Block, GroupRun, run_denoising
from .decoding.layout import ContextBuilder, LeadingContext, build_prefix, context_budget, question_tokens
from .decoding.slot_space import build_space
from .errors import RequestError
from .rules import RuleSet
from .types import Answer, DecisionRequest, DecisionResponse, Evidence, Mode
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
    evidence: list[list[Evidence]]
    shown_ranges: list[list[tuple[int, int]]]  # per question, the document characters its block shows


class DecisionEngine:
    """Decides requests with one model; many requests can share forward passes."""

    def __init__(self, model: DenoisingModel, limits: Limits = Limits(), context: ContextBuilder | None = None):
        self.model = model
        self.limits = limits
        self.context = context or LeadingContext(model.vocab)
        self.context_tokens = getattr(model, "context_tokens", None)  # the cap the model was trained with

    def decide(self, request: DecisionRequest, mode: Mode | None = None) -> DecisionResponse:
        return self.decide_batch([request], mode)[0]

    def decide_batch(self, requests: Sequence[DecisionRequest], mode: Mode | None = None) -> list[DecisionResponse]:
        """Decide several requests together; `mode` overrides each request's own."""
        started = time.perf_counter()
        prepared = [self.prepare(r, mode or r.mode) for r in requests]
        return self.run(prepared, (time.perf_counter() - started) * 1e3)

    def run(self, prepared: Sequence[_Prepared], prepare_ms: float = 0.0) -> list[DecisionResponse]:
        """Denoise prepared requests together and build their responses."""
        started = time.perf_counter()
        run_denoising(self.model, [b for p in prepared for b in p.blocks])
        denoise_ms = (time.perf_counter() - started) * 1e3
        timings = {
            "prepare": prepare_ms,
            "denoise": denoise_ms,
            "total": prepare_ms + denoise_ms,
            "batch_size": float(len(prepared)),
        }
        return [self._respond(p, timings) for p in prepared]

    def prepare(self, request: DecisionRequest, mode: Mode) -> _Prepared:
        """Check a request and lay it out: slot spaces, rules, prefixes and answer blocks."""
        validate_request(request, self.limits)
        vocab = self.model.vocab
        schemas = [q.schema for q in request.questions]
        rules = RuleSet.compile(schemas, [q.id for q in request.questions], request.rules)
        spaces = [
            build_space(q.schema, vocab, rules.classes[i], f"questions[{i}].schema")
            for i, q in enumerate(request.questions)
        ]
        options = request.options
        cap = options.context_tokens or self.context_tokens
        lengths = [s.length for s in spaces]
        max_steps = options.max_steps or (sum(lengths) if mode != "independent" else max(lengths))
        group = GroupRun(GroupConstraints(spaces, rules), options.threshold, max_steps)
        texts = [q.text for q in request.questions]
        questions = question_tokens(vocab, texts)
        document = request.document.text
        slots = list(range(len(spaces)))
        if mode == "independent":
            blocks, evidence, shown = [], [], []
            for s in slots:
                budget = self._budget([questions[s]], lengths[s], cap)
                choice = self.context(document, [texts[s]], budget)
                blocks.append(Block(group, [s], [1], build_prefix(vocab, [(1, questions[s])], choice.token_ids)))
                evidence.extend(choice.evidence)
                shown.append(list(choice.ranges))
        else:
            budget = self._budget(questions, sum(lengths), cap)
            choice = self.context(document, texts, budget)
            evidence, shown = choice.evidence, [list(choice.ranges)] * len(slots)
            prefix = build_prefix(vocab, [(s + 1, questions[s]) for s in slots], choice.token_ids)
            blocks = [Block(group, slots, [s + 1 for s in slots], prefix, sequential=mode == "sequential")]
        return _Prepared(request, mode, group, rules, blocks, evidence, shown)

    def _budget(self, questions: list[list[int]], block_len: int, cap: int | None) -> int:
        try:
            return context_budget(self.model.vocab, self.model.max_positions, questions, block_len, cap)
        except ValueError as error:
            raise RequestError("questions", f"{error} (the model holds {self.model.max_positions} tokens)") from None

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
                evidence=p.evidence[i] or None,
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
