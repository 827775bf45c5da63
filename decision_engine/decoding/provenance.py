"""What settled each answer (the model, a declared rule, or the schema alone), and what a forced answer may claim.

An answer the model never chose a token of was forced: by its schema when that admits one value, else by
the rules. A rule-fixed answer is no surer than the answers that made the rule fire, so its confidence is
capped by theirs (and theirs by their own triggers, when those were forced too).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..kinds import kind_of
from ..types import DecisionRequest, FixedBy, Value


def fixed_by(request: DecisionRequest, chosen: Sequence[int]) -> list[FixedBy]:
    """Per question: "model" when the model chose any of its tokens, else "schema" or "rule"."""
    in_rules = {qid for rule in request.rules for side in (rule.if_, rule.then) for qid in side}
    settled: list[FixedBy] = []
    for question, count in zip(request.questions, chosen):
        if count:
            settled.append("model")
        elif kind_of(question.schema).domain_size(question.schema) == 1 or question.id not in in_rules:
            settled.append("schema")
        else:
            settled.append("rule")
    return settled


def rule_bounded(
    request: DecisionRequest, values: Sequence[Value], settled: Sequence[FixedBy], confidences: Sequence[float]
) -> list[float]:
    """`confidences` with each rule-fixed answer's capped by the lowest among the answers that triggered it."""
    triggers = _triggers(request, values, settled)
    bounded = list(confidences)
    for _ in range(len(bounded)):  # a trigger may be rule-fixed itself: settle the chain (at most 8 slots)
        changed = False
        for slot, sources in triggers.items():
            low = min([bounded[slot], *(bounded[t] for t in sources)])
            if low < bounded[slot]:
                bounded[slot], changed = low, True
        if not changed:
            break
    return bounded


def _triggers(request: DecisionRequest, values: Sequence[Value], settled: Sequence[FixedBy]) -> dict[int, set[int]]:
    """{rule-fixed slot: the slots whose answers made a rule force it}.

    A rule forces its `then` slots when every `if` holds, and forces an `if` slot off its listed values when
    some `then` fails; where neither explains a slot (the solver combined rules), every slot it shares a
    rule with counts.
    """
    position = {q.id: i for i, q in enumerate(request.questions)}
    forced = [slot for slot, by in enumerate(settled) if by == "rule"]
    found: dict[int, set[int]] = {slot: set() for slot in forced}
    if not forced:
        return found
    schemas = [q.schema for q in request.questions]

    def holds(qid: str, listed: list[Value]) -> bool:
        slot = position[qid]
        kind = kind_of(schemas[slot])
        return kind.answer_key(values[slot]) in {kind.answer_key(v) for v in listed}

    shared: dict[int, set[int]] = {slot: set() for slot in forced}
    for rule in request.rules:
        premises, conclusions = _slots(rule.if_, position), _slots(rule.then, position)
        fired = all(holds(qid, listed) for qid, listed in rule.if_.items())
        failing = {position[qid] for qid, listed in rule.then.items() if not holds(qid, listed)}
        for slot in forced:
            if fired and slot in conclusions:
                found[slot] |= premises
            elif failing and slot in premises:
                found[slot] |= failing
            if slot in premises or slot in conclusions:
                shared[slot] |= premises | conclusions
    for slot in forced:
        found[slot] = (found[slot] or shared[slot]) - {slot}
    return found


def _slots(side: dict[str, list[Value]], position: dict[str, int]) -> set[int]:
    return {position[qid] for qid in side}
