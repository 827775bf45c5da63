"""What settled each answer: the model, a declared rule or the schema; a rule-fixed answer claims no more
confidence than the answers that triggered its rule."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FakeModel, random_logits
from decision_engine.decoding.provenance import fixed_by, rule_bounded
from decision_engine.engine import DecisionEngine
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question, Rule

BOOLEAN = AnswerSchema(type="boolean")
CHOICE = AnswerSchema(type="string", enum=["full", "partial", "none"])
ONE_DAY = AnswerSchema(type="string", format="date", formatMinimum="2024-03-01", formatMaximum="2024-03-01")
FIXED_INTEGER = AnswerSchema(type="integer", minimum=7, maximum=7)


def _request(schemas, rules, mode="joint") -> DecisionRequest:
    return DecisionRequest(
        document=Document(text="The deposit is returned in full when the tenant gave notice in time."),
        questions=[Question(id=f"q{i}", text=f"Question {i}?", schema=s) for i, s in enumerate(schemas)],
        rules=list(rules),
        mode=mode,
    )


# Whatever q0 is, the rules leave q1 one value (and, read backwards, q1's value leaves q0 one value):
# the model chooses one of the two and the rules force the other.
LINKED = [Rule(if_={"q0": [True]}, then={"q1": ["none"]}), Rule(if_={"q0": [False]}, then={"q1": ["full"]})]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), mode=st.sampled_from(["joint", "independent", "sequential"]))
def test_a_rule_forced_answer_is_no_surer_than_its_trigger(vocab, seed, mode):
    model = FakeModel(vocab, random_logits(seed, scale=1.0))
    response = DecisionEngine(model).decide(_request([BOOLEAN, CHOICE, ONE_DAY, FIXED_INTEGER], LINKED, mode))
    q0, q1, day, seven = response.answers
    assert (day.fixed_by, day.step, day.confidence, day.value) == ("schema", 0, 1.0, "2024-03-01")
    assert (seven.fixed_by, seven.step, seven.value) == ("schema", 0, 7)
    assert sorted([q0.fixed_by, q1.fixed_by]) == ["model", "rule"], (q0, q1)
    chosen, forced = (q0, q1) if q0.fixed_by == "model" else (q1, q0)
    assert chosen.confidence < 1.0  # random logits over several tokens are never certain
    assert forced.confidence == pytest.approx(chosen.confidence, abs=1e-6)  # capped by its trigger, not 1.0


def test_answers_no_rule_touches_are_the_models(vocab):
    model = FakeModel(vocab, random_logits(3))
    response = DecisionEngine(model).decide(_request([BOOLEAN, CHOICE], []))
    assert [a.fixed_by for a in response.answers] == ["model", "model"]
    assert all(a.step >= 1 for a in response.answers)


def test_fixed_by_tells_schema_from_rule_from_model():
    request = _request([BOOLEAN, CHOICE, FIXED_INTEGER, BOOLEAN], [Rule(if_={"q0": [True]}, then={"q3": [False]})])
    assert fixed_by(request, [1, 0, 0, 0]) == ["model", "schema", "schema", "rule"]
    assert fixed_by(request, [2, 1, 0, 1]) == ["model", "model", "schema", "model"]


def test_the_bound_follows_a_chain_of_rules_and_a_rule_read_backwards():
    rules = [Rule(if_={"q0": [True]}, then={"q1": [False]}), Rule(if_={"q1": [False]}, then={"q2": ["none"]})]
    request = _request([BOOLEAN, BOOLEAN, CHOICE], rules)
    bounded = rule_bounded(request, [True, False, "none"], ["model", "rule", "rule"], [0.6, 1.0, 1.0])
    assert bounded == [0.6, 0.6, 0.6]
    # q1 = True was chosen; `if q0 then not q1` read backwards forced q0 = False
    backwards = _request([BOOLEAN, BOOLEAN], [Rule(if_={"q0": [True]}, then={"q1": [False]})])
    assert rule_bounded(backwards, [False, True], ["rule", "model"], [1.0, 0.7]) == [0.7, 0.7]
    # a model answer keeps its own confidence whatever the rules say
    assert rule_bounded(backwards, [False, True], ["model", "model"], [0.9, 0.7]) == [0.9, 0.7]
