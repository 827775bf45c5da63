"""Implication rules between answers, compiled to finite value classes, and a small solver.

Each slot's values are grouped into classes: every value some rule names gets its
own class, and an integer or date slot gets one more class, OTHER, for all the
values no rule names. Rules only ever see classes, so checking them is a finite
search over at most 8 slots even when a slot ranges over millions of values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from .kinds import canonical_json, kind_of
from .types import AnswerSchema, Rule, Value

SEARCH_BUDGET = 200_000  # search nodes before a rule set is called too complex


class RulesTooComplex(RuntimeError):
    """The rule set needs more search than `SEARCH_BUDGET` allows."""


@dataclass(frozen=True)
class SlotClasses:
    """The value classes of one slot: named values, then OTHER when the domain has more.

    Values are told apart by `key`, the slot kind's answer key (True == 1 in Python; keys differ).
    """

    named: tuple[Value, ...]
    has_other: bool
    key: Callable[[Value], str] = field(default=canonical_json, compare=False, repr=False)

    @cached_property
    def _named_keys(self) -> dict[str, int]:
        keys: dict[str, int] = {}
        for i, named in enumerate(self.named):
            keys.setdefault(self.key(named), i)
        return keys

    @property
    def count(self) -> int:
        return len(self.named) + int(self.has_other)

    @property
    def other(self) -> int | None:
        return len(self.named) if self.has_other else None

    def index(self, value: Value) -> int:
        found = self._named_keys.get(self.key(value))
        if found is not None:
            return found
        if not self.has_other:
            raise KeyError(value)
        return len(self.named)


@dataclass(frozen=True)
class Clause:
    slot: int
    classes: frozenset[int]


@dataclass(frozen=True)
class CompiledRule:
    premises: tuple[Clause, ...]
    conclusions: tuple[Clause, ...]


def slot_classes(schema: AnswerSchema, mentioned: Sequence[Value]) -> SlotClasses:
    """Classes for a slot given the values rules mention for it."""
    kind = kind_of(schema)
    listed = kind.enumerated_values(schema)
    if listed is not None:
        return SlotClasses(tuple(listed), False, kind.answer_key)
    named: dict[str, Value] = {}
    for value in mentioned:
        named.setdefault(kind.answer_key(value), value)
    return SlotClasses(tuple(named.values()), kind.domain_size(schema) > len(named), kind.answer_key)


class RuleSet:
    """Compiled rules over the slots of one request."""

    def __init__(self, classes: list[SlotClasses], rules: list[CompiledRule]):
        self.classes = classes
        self.rules = rules
        involved = {c.slot for r in rules for c in (*r.premises, *r.conclusions)}
        self.involved = sorted(involved)

    @classmethod
    def compile(cls, schemas: Sequence[AnswerSchema], ids: Sequence[str], rules: Sequence[Rule]) -> RuleSet:
        """Compile validated rules; `ids[i]` names slot i."""
        position = {qid: i for i, qid in enumerate(ids)}
        mentioned: list[list[Value]] = [[] for _ in ids]
        for rule in rules:
            for side in (rule.if_, rule.then):
                for qid, values in side.items():
                    mentioned[position[qid]].extend(values)
        classes = [slot_classes(s, m) for s, m in zip(schemas, mentioned)]

        def clauses(side: dict[str, list[Value]]) -> tuple[Clause, ...]:
            out = []
            for qid, values in side.items():
                slot = position[qid]
                out.append(Clause(slot, frozenset(classes[slot].index(v) for v in values)))
            return tuple(out)

        compiled = [CompiledRule(clauses(r.if_), clauses(r.then)) for r in rules]
        return cls(classes, compiled)

    def full_domains(self) -> list[set[int]]:
        return [set(range(c.count)) for c in self.classes]

    def holds(self, assignment: Sequence[int]) -> list[int]:
        """Indices of the rules that the class assignment breaks (empty when all hold)."""
        broken = []
        for i, rule in enumerate(self.rules):
            if all(assignment[p.slot] in p.classes for p in rule.premises) and not all(
                assignment[c.slot] in c.classes for c in rule.conclusions
            ):
                broken.append(i)
        return broken

    def violations(self, values: Sequence[Value]) -> list[int]:
        """Indices of the rules that concrete answer values break."""
        return self.holds([self.classes[i].index(v) for i, v in enumerate(values)])

    def solve(self, domains: Sequence[set[int]]) -> list[int] | None:
        """One class per slot satisfying every rule within `domains`, or None."""
        doms = [set(d) for d in domains]
        budget = [SEARCH_BUDGET]
        found = self._search(doms, budget)
        if found is None:
            return None
        return [min(d) for d in found]

    def supported(self, domains: Sequence[set[int]]) -> list[set[int]]:
        """For each slot, the classes that belong to at least one full solution."""
        result = [set(d) for d in domains]
        if not self.rules:
            return result
        for slot in self.involved:
            result[slot] = set()
        for slot in self.involved:
            for cls in sorted(domains[slot]):
                if cls in result[slot]:
                    continue
                trial = [set(d) for d in domains]
                trial[slot] = {cls}
                solution = self.solve(trial)
                if solution is not None:
                    for s in self.involved:
                        result[s].add(solution[s])
        return result

    def _propagate(self, doms: list[set[int]]) -> bool:
        changed = True
        while changed:
            changed = False
            for rule in self.rules:
                premises_hold = all(doms[p.slot] <= p.classes for p in rule.premises)
                if premises_hold:
                    for c in rule.conclusions:
                        narrowed = doms[c.slot] & c.classes
                        if narrowed != doms[c.slot]:
                            doms[c.slot] = narrowed
                            changed = True
                            if not narrowed:
                                return False
                    continue
                if all(doms[c.slot] & c.classes for c in rule.conclusions):
                    continue
                # Some conclusion cannot hold: the premises must not all hold.
                undecided = [p for p in rule.premises if not doms[p.slot] <= p.classes]
                if any(not doms[p.slot] & p.classes for p in undecided) or len(undecided) != 1:
                    continue
                p = undecided[0]
                narrowed = doms[p.slot] - p.classes
                if narrowed != doms[p.slot]:
                    doms[p.slot] = narrowed
                    changed = True
                    if not narrowed:
                        return False
        return True

    def _search(self, doms: list[set[int]], budget: list[int]) -> list[set[int]] | None:
        budget[0] -= 1
        if budget[0] < 0:
            raise RulesTooComplex("rule search budget exhausted")
        if any(not d for d in doms) or not self._propagate(doms):
            return None
        open_slots = [s for s in self.involved if len(doms[s]) > 1]
        if not open_slots:
            return doms
        slot = min(open_slots, key=lambda s: len(doms[s]))
        for cls in sorted(doms[slot]):
            trial = [set(d) for d in doms]
            trial[slot] = {cls}
            found = self._search(trial, budget)
            if found is not None:
                return found
        return None
