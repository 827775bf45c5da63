"""Generated linked compliance groups: valid requests, gold labels that fit schemas and rules, held-out wording."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

import random

from decision_engine.datasets.domains import ALL
from decision_engine.datasets.domains.common import Wording, render
from decision_engine.datasets.linked_groups import DOMAINS, HELD_OUT, generate_groups, template_names
from decision_engine.rules import RuleSet
from decision_engine.validation import request_from_object
from decision_engine.values import enumerated_values, kind, value_problem

SPLITS = ("train", "validation")
COUNT = 200
REQUIRED_DOMAINS = {
    "lease", "nda", "employment", "data_breach", "kyc_aml", "procurement", "insurance_claim", "uav_dispatch",
}


@pytest.fixture(scope="module")
def groups() -> dict[str, list[dict]]:
    return {split: generate_groups(split, COUNT, seed=11) for split in SPLITS}


@pytest.mark.parametrize("split", SPLITS)
def test_every_line_is_a_valid_request_with_valid_labels(groups, split):
    for line in groups[split]:
        request = request_from_object(line)
        ids = [q.id for q in request.questions]
        assert 4 <= len(ids) <= 8, line["id"]
        assert set(line["labels"]) == set(ids), line["id"]
        for question in request.questions:
            assert value_problem(question.schema, line["labels"][question.id]) is None, (line["id"], question.id)


@pytest.mark.parametrize("split", SPLITS)
def test_labels_satisfy_every_rule(groups, split):
    for line in groups[split]:
        request = request_from_object(line)
        assert 1 <= len(request.rules) <= 4, line["id"]
        ids = [q.id for q in request.questions]
        rules = RuleSet.compile([q.schema for q in request.questions], ids, request.rules)
        assert rules.violations([line["labels"][qid] for qid in ids]) == [], line["id"]


@pytest.mark.parametrize("split", SPLITS)
def test_compared_questions_name_two_values_whose_order_is_the_answer(groups, split):
    import datetime as dt

    def ordered(value):
        return dt.date.fromisoformat(value) if isinstance(value, str) else value

    named = Counter()
    for line in groups[split]:
        booleans = {q["id"] for q in line["questions"] if q["schema"]["type"] == "boolean"}
        assert set(line["compared"]) <= booleans, line["id"]
        for qid, (left, right) in line["compared"].items():
            assert type(ordered(left)) is type(ordered(right)), (line["id"], qid)
            assert line["labels"][qid] == (ordered(left) <= ordered(right)), (line["id"], qid)
            named[qid] += 1
    assert {"notice_in_time", "paid_on_time", "wind_within_limit", "id_check_current"} <= set(named)
    assert not {"gross_misconduct", "high_risk_customer", "peril_covered"} & set(named)  # read, not compared


def _outside(schema, allowed: list) -> object:
    """A value the schema admits that is not in `allowed`."""
    candidates = enumerated_values(schema)
    if candidates is None:
        candidates = [schema.minimum, schema.maximum] if kind(schema) == "integer" else ["2000-01-01", "2099-12-31"]
    return next(v for v in candidates if all(type(v) is not type(a) or v != a for a in allowed))


def test_rule_check_catches_labels_that_break_a_rule(groups):
    """The check above can fail: labels meeting a rule's premise but not its conclusion are reported."""
    for line in groups["train"][:50]:
        request = request_from_object(line)
        ids = [q.id for q in request.questions]
        schemas = {q.id: q.schema for q in request.questions}
        rules = RuleSet.compile(list(schemas.values()), ids, request.rules)
        rule = request.rules[0]
        values = dict(line["labels"])
        values.update({qid: allowed[0] for qid, allowed in rule.if_.items()})
        qid, allowed = next(iter(rule.then.items()))
        values[qid] = _outside(schemas[qid], allowed)
        assert 0 in rules.violations([values[q] for q in ids]), line["id"]


@pytest.mark.parametrize("split", SPLITS)
def test_all_domains_and_answer_types_occur(groups, split):
    assert REQUIRED_DOMAINS <= set(DOMAINS)
    assert {line["domain"] for line in groups[split]} == set(DOMAINS)
    kinds = {kind(q.schema) for line in groups[split] for q in request_from_object(line).questions}
    assert kinds == {"enum", "boolean", "integer", "date"}


@pytest.mark.parametrize("split", SPLITS)
def test_documents_fit_the_length_limits(groups, split):
    for line in groups[split]:
        assert 400 <= len(line["document"]["text"]) <= 1800, line["id"]


@pytest.mark.parametrize("split", SPLITS)
def test_schemas_stay_in_the_agreed_ranges(groups, split):
    for line in groups[split]:
        for question in line["questions"]:
            schema = question["schema"]
            if schema["type"] == "integer":
                assert 0 <= schema["minimum"] <= schema["maximum"] <= 100000
            if "enum" in schema:
                choices = schema["enum"]
                assert all(c == c.lower() for c in choices)
                assert len({c.casefold() for c in choices}) == len(choices)
            if schema.get("format") == "date":
                assert "2000-01-01" <= line["labels"][question["id"]] <= "2099-12-31"


def test_ids_are_unique():
    ids = [g["id"] for split in SPLITS for seed in (1, 2) for g in generate_groups(split, 50, seed)]
    assert len(ids) == len(set(ids))


def test_generation_is_deterministic():
    assert generate_groups("train", 30, seed=5) == generate_groups("train", 30, seed=5)
    assert generate_groups("train", 30, seed=5) != generate_groups("train", 30, seed=6)
    assert generate_groups("validation", 30, seed=5) != generate_groups("train", 30, seed=5)


def test_bad_split_is_rejected():
    with pytest.raises(ValueError):
        generate_groups("test", 1, seed=0)


def test_splits_use_disjoint_templates(groups):
    train, validation = template_names("train"), template_names("validation")
    assert set(train) == set(validation) == set(DOMAINS)
    for domain in DOMAINS:
        assert train[domain] and validation[domain]
        assert not set(train[domain]) & set(validation[domain])
    for split, names in (("train", train), ("validation", validation)):
        for line in groups[split]:
            assert line["template"] in names[line["domain"]], line["id"]


@pytest.mark.parametrize("domain", ALL, ids=lambda domain: domain.name)
def test_every_phrasing_states_the_same_facts(domain):
    """The same draw phrased each of the four ways has the same answers and rules, in different words."""
    for seed in range(20):
        cases = [domain.build(random.Random(seed), Wording(variant, False, "")) for variant in range(4)]
        assert all(case.labels == cases[0].labels and case.rules == cases[0].rules for case in cases)
        texts = [render("agreement", case, random.Random(seed)) for case in cases]
        assert len(set(texts)) == 4
    for spec in domain.questions.values():
        assert len(set(spec.texts)) == 4


def test_training_uses_every_phrasing_but_the_held_out_one(groups):
    used = {line["template"][-1] for line in groups["train"]}
    assert used == set("abcd") - {"abcd"[HELD_OUT]}


def test_splits_use_disjoint_question_wordings(groups):
    """Questions are asked with different paraphrases in the two splits (names filled in aside)."""
    texts = {
        split: {(g["domain"], q["id"], q["text"]) for g in groups[split] for q in g["questions"]} for split in SPLITS
    }
    assert not texts["train"] & texts["validation"]


def test_label_balance(groups):
    booleans: Counter = Counter()
    enums: dict[tuple[str, str], set] = defaultdict(set)
    for line in groups["train"] + groups["validation"]:
        for question in line["questions"]:
            value = line["labels"][question["id"]]
            if question["schema"]["type"] == "boolean":
                booleans[value] += 1
            elif "enum" in question["schema"]:
                enums[(line["domain"], question["id"])].add(value)
    total = booleans[True] + booleans[False]
    assert booleans[True] >= 0.2 * total and booleans[False] >= 0.2 * total, booleans
    for key, seen in enums.items():
        assert len(seen) >= 2, key


@pytest.mark.parametrize("domain", ["lease", "nda", "kyc_aml", "insurance_claim", "uav_dispatch"])
def test_answers_depend_on_the_document(domain):
    def labels(seed: int) -> dict:
        return next(g["labels"] for g in generate_groups("train", 8, seed) if g["domain"] == domain)

    first = labels(1)
    assert any(
        any(first[q] != other[q] for q in set(first) & set(other)) for other in (labels(seed) for seed in range(2, 6))
    )
    # Over many seeds, no question of the domain always gets the same answer.
    seen: dict[str, set] = defaultdict(set)
    for seed in range(20):
        for line in generate_groups("train", 8, seed):
            if line["domain"] == domain:
                for qid, value in line["labels"].items():
                    seen[qid].add((type(value).__name__, value))
    assert all(len(values) >= 2 for values in seen.values()), seen
