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


def _atoms(classes: Sequence[SlotClasses], clauses: Sequence[Clause]) -> list[list[int]]:
    """Per slot, each class's atom: classes in exactly the same clauses share one, numbered by first class."""
    member: list[list[list[int]]] = [[[] for _ in range(c.count)] for c in classes]
    for number, clause in enumerate(clauses):
        for k in clause.classes:
            member[clause.slot][k].append(number)
    atom_of = []
    for slot_members in member:
        numbering: dict[tuple[int, ...], int] = {}
        atom_of.append([numbering.setdefault(tuple(m), len(numbering)) for m in slot_members])
    return atom_of


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
    """Compiled rules over the slots of one request.

    Classes that every clause either holds or leaves out alike are one atom: the rules cannot tell
    them apart, so the solver works on atoms, at most one per distinct clause membership. A rule
    set naming thousands of values for a slot thus costs about as much as one naming a handful.
    """

    def __init__(self, classes: list[SlotClasses], atom_of: list[list[int]], rules: list[CompiledRule]):
        self.classes = classes
        self.atom_of = atom_of  # per slot: class index -> atom index
        self.atoms = [max(a, default=-1) + 1 for a in atom_of]  # per slot: how many atoms
        self.rules = rules  # clauses hold atom indices
        involved = {c.slot for r in rules for c in (*r.premises, *r.conclusions)}
        self.involved = sorted(involved)
        self._supported: dict[tuple[frozenset[int], ...], list[set[int]]] = {}  # atom domains -> supported atoms

    @classmethod
    def compile(cls, schemas: Sequence[AnswerSchema], ids: Sequence[str], rules: Sequence[Rule]) -> RuleSet:
        """Compile validated rules; `ids[i]` names slot i. Linear in the number of values the rules name."""
        position = {qid: i for i, qid in enumerate(ids)}
        mentioned: list[list[Value]] = [[] for _ in ids]
        for rule in rules:
            for side in (rule.if_, rule.then):
                for qid, values in side.items():
                    mentioned[position[qid]].extend(values)
        classes = [slot_classes(s, m) for s, m in zip(schemas, mentioned)]

        def clauses(side: dict[str, list[Value]]) -> tuple[Clause, ...]:
            slots = [position[qid] for qid in side]
            return tuple(Clause(s, frozenset(classes[s].index(v) for v in vs)) for s, vs in zip(slots, side.values()))

        def to_atoms(side: tuple[Clause, ...]) -> tuple[Clause, ...]:
            return tuple(Clause(c.slot, frozenset(atom_of[c.slot][k] for k in c.classes)) for c in side)

        by_class = [(clauses(rule.if_), clauses(rule.then)) for rule in rules]
        atom_of = _atoms(classes, [c for pair in by_class for side in pair for c in side])
        compiled = [CompiledRule(to_atoms(premises), to_atoms(conclusions)) for premises, conclusions in by_class]
        return cls(classes, atom_of, compiled)

    def full_domains(self) -> list[set[int]]:
        """Every class of every slot."""
        return [set(range(c.count)) for c in self.classes]

    def _atom_domains(self, domains: Sequence[set[int]]) -> list[set[int]]:
        return [{atoms[c] for c in d} for atoms, d in zip(self.atom_of, domains)]

    def holds(self, assignment: Sequence[int]) -> list[int]:
        """Indices of the rules that the class assignment breaks (empty when all hold)."""
        atoms = [self.atom_of[slot][c] for slot, c in enumerate(assignment)]
        broken = []
        for i, rule in enumerate(self.rules):
            if all(atoms[p.slot] in p.classes for p in rule.premises) and not all(
                atoms[c.slot] in c.classes for c in rule.conclusions
            ):
                broken.append(i)
        return broken

    def violations(self, values: Sequence[Value]) -> list[int]:
        """Indices of the rules that concrete answer values break."""
        return self.holds([self.classes[i].index(v) for i, v in enumerate(values)])

    def solve(self, domains: Sequence[set[int]]) -> list[int] | None:
        """One class per slot satisfying every rule within `domains`, or None."""
        found = self._solve_atoms(self._atom_domains(domains))
        if found is None:
            return None
        return [min(c for c in d if atoms[c] in f) for atoms, d, f in zip(self.atom_of, domains, found)]

    def _solve_atoms(self, domains: Sequence[set[int]]) -> list[set[int]] | None:
        return self._search([set(d) for d in domains], [SEARCH_BUDGET])

    def supported(self, domains: Sequence[set[int]]) -> list[set[int]]:
        """For each slot, the classes that belong to at least one full solution."""
        if not self.rules:
            return [set(d) for d in domains]
        atoms = self._supported_atoms(self._atom_domains(domains))
        return [
            {c for c in d if of[c] in kept} if slot in self.involved else set(d)
            for slot, (of, d, kept) in enumerate(zip(self.atom_of, domains, atoms))
        ]

    def _supported_atoms(self, domains: list[set[int]]) -> list[set[int]]:
        """For each slot, the atoms that belong to at least one full solution (remembered per domains)."""
        key = tuple(frozenset(d) for d in domains)
        known = self._supported.get(key)
        if known is not None:
            return known
        result = [set(d) for d in domains]
        for slot in self.involved:
            result[slot] = set()
        for slot in self.involved:
            for atom in sorted(domains[slot]):
                if atom in result[slot]:
                    continue
                trial = [set(d) for d in domains]
                trial[slot] = {atom}
                solution = self._solve_atoms(trial)
                if solution is not None:
                    for s in self.involved:
                        result[s].add(min(solution[s]))
        if len(self._supported) >= 1024:
            self._supported.clear()
        self._supported[key] = result
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
