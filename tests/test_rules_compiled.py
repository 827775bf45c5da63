"""Compiled rules: the solver works on atoms (values no clause tells apart) and agrees with brute force
over every combination of concrete answers."""

from __future__ import annotations

import itertools
import random

import pytest

from decision_engine.rules import RuleSet
from decision_engine.types import AnswerSchema, Rule

SCHEMAS = [
    AnswerSchema(type="string", enum=["a", "b", "c"]),
    AnswerSchema(type="boolean"),
    AnswerSchema(type="integer", minimum=0, maximum=5),
]
IDS = ["choice", "flag", "count"]
VALUES = [["a", "b", "c"], [True, False], list(range(6))]  # every answer each slot admits


def random_rules(rng: random.Random, count: int) -> list[Rule]:
    def side() -> dict:
        slots = rng.sample(range(len(IDS)), rng.randint(1, 2))
        return {IDS[s]: rng.sample(VALUES[s], rng.randint(1, len(VALUES[s]) - 1)) for s in slots}

    return [Rule(if_=side(), then=side()) for _ in range(count)]


def breaks(rule: Rule, answers: tuple) -> bool:
    named = dict(zip(IDS, answers))
    premises = all(named[q] in values for q, values in rule.if_.items())
    return premises and not all(named[q] in values for q, values in rule.then.items())


@pytest.mark.parametrize("seed", range(60))
def test_supported_classes_and_violations_agree_with_brute_force(seed):
    rng = random.Random(seed)
    rules = random_rules(rng, rng.randint(1, 6))
    compiled = RuleSet.compile(SCHEMAS, IDS, rules)
    everything = list(itertools.product(*VALUES))
    for answers in everything:
        assert compiled.violations(list(answers)) == [i for i, r in enumerate(rules) if breaks(r, answers)]
    domains = compiled.full_domains()
    for _ in range(5):  # the full domains, then random narrowings of them
        allowed = [d for d in itertools.product(*VALUES)
                   if all(c.index(v) in dom for c, v, dom in zip(compiled.classes, d, domains))]  # fmt: skip
        solutions = [answers for answers in allowed if not any(breaks(r, answers) for r in rules)]
        expected = [{c.index(answers[s]) for answers in solutions} for s, c in enumerate(compiled.classes)]
        got = compiled.supported(domains)
        for slot in compiled.involved:
            assert got[slot] == expected[slot], (rules, domains, slot)
        assert (compiled.solve(domains) is None) == (not solutions)
        domains = [set(rng.sample(sorted(d), rng.randint(1, len(d)))) for d in compiled.full_domains()]


def test_thousands_of_named_values_collapse_into_one_atom_per_clause():
    schema = AnswerSchema(type="integer", minimum=0, maximum=1_000_000)
    rules = [Rule(if_={"x": list(range(r * 1000, (r + 1) * 1000))}, then={"y": [r]}) for r in range(64)]
    compiled = RuleSet.compile([schema, schema], ["x", "y"], rules)
    assert compiled.classes[0].count == 64_001  # every named value, and OTHER
    assert compiled.atoms == [65, 65]  # one atom per rule's values, and one for the rest
    assert compiled.violations([1500, 1]) == [] and compiled.violations([1500, 2]) == [1]
    supported = compiled.supported(compiled.full_domains())
    assert len(supported[0]) == 64_001 and len(supported[1]) == 65
