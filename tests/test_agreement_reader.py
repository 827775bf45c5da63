"""The agreement reader: a joint request's boolean and enum answers weighed again with the surer ones."""

from __future__ import annotations

import random

import pytest
import torch

from decision_engine.decoding.agreement import agreed_answers, decided_answers
from decision_engine.reader.agreement_reader import DIM, AgreementReader, Decided, surer_than, weigh_again
from decision_engine.rules import RuleSet
from decision_engine.training.agreement_fit import AgreementExample, agreement_accuracy, agreement_loss
from decision_engine.training.generated_fit import train_epochs
from decision_engine.types import AnswerSchema, Question, Rule

BOOLEAN = AnswerSchema(type="boolean")
RATING = AnswerSchema(type="string", enum=["compliant", "non-compliant"])


def vector(seed: int) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(DIM, generator=torch.Generator().manual_seed(seed)), dim=0)


class FakeEmbedder:
    """A fixed unit vector per text."""

    def embed_questions(self, texts):
        return torch.stack([vector(sum(map(ord, t))) for t in texts]) if texts else torch.zeros((0, DIM))

    embed_words = embed_questions


def decided(question: int, chosen: int, confidence: float, count: int = 2) -> Decided:
    return Decided(vector(question), torch.stack([vector(1000 + k) for k in range(count)]), chosen, confidence)


def test_only_surer_answers_weigh_and_the_surest_has_none():
    items = [decided(1, 0, 0.9), decided(2, 1, 0.6), decided(3, 0, 0.75)]
    assert surer_than(items, 0) == []
    assert surer_than(items, 1) == [0, 2]
    assert surer_than(items, 2) == [0]


def test_an_unfitted_reader_moves_no_answer():
    items = [decided(1, 0, 0.9), decided(2, 1, 0.6, count=3)]
    weighed = weigh_again(AgreementReader().eval(), items)
    assert weighed[0] is None  # nothing surer beside it
    assert weighed[1].tolist() == pytest.approx([0.2, 0.6, 0.2], abs=1e-6)


def test_a_fitted_reader_learns_that_one_answer_follows_a_surer_one():
    """Question 2's answer is question 1's; the model answers it at chance with confidence 0.6."""
    rng = random.Random(0)
    examples = []
    for _ in range(400):
        leader = rng.randrange(2)
        guess = rng.randrange(2)
        other = rng.randrange(2)  # a surer answer that says nothing about question 2
        examples.append(AgreementExample(decided(2, guess, 0.6), (decided(1, leader, 0.95), decided(3, other, 0.9)), leader))
    torch.manual_seed(0)
    reader = AgreementReader()
    fitted = train_epochs(
        reader, examples, 30, 0, what="agreement reader", loss_of=agreement_loss, accuracy=agreement_accuracy,
        batch=32, learning_rate=1e-2, log=lambda line: None,
    )
    assert fitted["before"]["accuracy"] == fitted["before"]["as_decided"] < 0.6
    assert fitted["after"]["accuracy"] > 0.95


class Pushing(AgreementReader):
    """A reader that always pushes an answer to its second choice."""

    def forward(self, choices, answers, present):
        scores = torch.zeros(choices.shape[:2])
        scores[:, 1] = 10.0
        return scores


def questions() -> list[Question]:
    return [
        Question(id="authority_in_time", text="Was the authority told in time?", schema=BOOLEAN),
        Question(id="rating", text="How should the audit rate this file?", schema=RATING),
        Question(id="days", text="How many days late?", schema=AnswerSchema(type="integer", minimum=0, maximum=9)),
    ]


def test_answers_are_weighed_again_and_only_the_models_own():
    asked = questions()
    rules = RuleSet.compile([q.schema for q in asked], [q.id for q in asked], [])
    values, confidences = agreed_answers(
        Pushing(), FakeEmbedder(), asked, [True, "compliant", 3], [0.95, 0.7, 0.9], ["model", "model", "model"],
        [False, False, False], rules,
    )
    assert values == [True, "non-compliant", 3]  # the surest keeps its answer; the integer is not weighed
    assert confidences[1] > 0.99 and confidences[0] == 0.95 and confidences[2] == 0.9
    kept, _ = agreed_answers(
        Pushing(), FakeEmbedder(), asked, [True, "compliant", 3], [0.95, 0.7, 0.9], ["model", "rule", "model"],
        [False, False, False], rules,
    )
    assert kept[1] == "compliant"  # a rule's answer is not the model's to weigh


def test_a_comparisons_answer_keeps_its_value_and_a_change_that_breaks_a_rule_is_not_made():
    asked = questions()
    values, _ = agreed_answers(
        Pushing(), FakeEmbedder(), asked, [False, "compliant", 3], [0.6, 0.95, 0.9], ["model"] * 3, [True, False, False],
        RuleSet.compile([q.schema for q in asked], [q.id for q in asked], []),
    )
    assert values[0] is False
    rule = Rule(if_={"authority_in_time": [True]}, then={"rating": ["compliant"]})
    values, confidences = agreed_answers(
        Pushing(), FakeEmbedder(), asked, [True, "compliant", 3], [0.95, 0.7, 0.9], ["model"] * 3, [False] * 3,
        RuleSet.compile([q.schema for q in asked], [q.id for q in asked], [rule]),
    )
    assert values[1] == "compliant"
    assert confidences[1] < 0.01  # it reports how little the weighing believes it


def test_decided_answers_read_booleans_and_enums_as_their_choices():
    asked = questions()
    picked = decided_answers(asked, [True, "non-compliant", 3], [0.9, 0.8, 0.7], ["model"] * 3, FakeEmbedder())
    assert [(slot, item.chosen, len(item.choices)) for slot, item in picked] == [(0, 1, 2), (1, 1, 2)]


def test_a_joint_request_weighs_its_answers_again_and_an_independent_one_does_not(tiny_backend):
    from decision_engine.decoding.layout import LeadingContext
    from decision_engine.engine import DecisionEngine
    from decision_engine.validation import request_from_object

    context = LeadingContext(tiny_backend.vocab)
    context.embedder = FakeEmbedder()
    request = request_from_object({
        "document": {"text": "The authority was told on 3 May 2024. The breach was found on 1 May 2024."},
        "questions": [
            {"id": f"q{i}", "text": text, "schema": {"type": "boolean"}}
            for i, text in enumerate(("Was the authority told in time?", "Was the breach high risk?", "Is the file compliant?"))
        ],
    })
    engine = DecisionEngine(tiny_backend, context=context)
    before = {mode: engine.decide(request, mode).answers for mode in ("joint", "independent")}
    assert tiny_backend.agreement_reader is None
    tiny_backend.agreement_reader = Pushing()
    try:
        after = {mode: engine.decide(request, mode).answers for mode in ("joint", "independent")}
    finally:
        tiny_backend.agreement_reader = None
    assert [(a.value, a.confidence) for a in after["independent"]] == [(a.value, a.confidence) for a in before["independent"]]
    surest = max(a.confidence for a in before["joint"])
    assert any(a.confidence < surest for a in before["joint"])  # something to weigh again
    for old, new in zip(before["joint"], after["joint"]):
        if old.confidence < surest:
            assert new.value is True and new.confidence > 0.99
        else:
            assert (new.value, new.confidence) == (old.value, old.confidence)


def test_agreement_readers_score_as_the_mean_of_their_members():
    from decision_engine.reader.agreement_reader import AgreementReaders, agreement_reader

    torch.manual_seed(0)
    heads = agreement_reader(3).eval()
    assert isinstance(heads, AgreementReaders) and isinstance(agreement_reader(1), AgreementReader)
    for member in heads.members:
        torch.nn.init.normal_(member.answer_words.weight)  # fitted-looking members that disagree
    choices, answers, present = torch.randn(2, 3, 2 * DIM), torch.randn(2, 4, 2 * DIM), torch.ones(2, 4)
    each = torch.stack([m(choices, answers, present) for m in heads.members])
    assert not torch.allclose(each[0], each[1])
    assert torch.allclose(heads(choices, answers, present), each.mean(dim=0))
    with pytest.raises(ValueError, match="at least one head"):
        agreement_reader(0)
