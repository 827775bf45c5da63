"""decide_many: one outcome per request, in order; a bad request costs only its own answer."""

from __future__ import annotations

import pytest

from conftest import FakeModel, random_logits
from decision_engine import engine as engine_module
from decision_engine.engine import DecisionEngine
from decision_engine.errors import EngineFailure, RequestError
from decision_engine.types import AnswerSchema, DecisionRequest, DecisionResponse, Document, Question

SCHEMAS = [AnswerSchema(type="boolean"), AnswerSchema(type="integer", minimum=0, maximum=99)]


def _request(text: str) -> DecisionRequest:
    questions = [Question(id=f"q{i}", text=f"Question number {i}?", schema=s) for i, s in enumerate(SCHEMAS)]
    return DecisionRequest(document=Document(text=text), questions=questions)


class PoisonedModel(FakeModel):
    """A fake model whose prefix encoding fails whenever a batch holds a prefix with the poison token."""

    def __init__(self, vocab, poison: str):
        super().__init__(vocab, random_logits(seed=3))
        self.poison = vocab.encode(poison)[0]
        self.encoded_batches: list[int] = []

    def encode_prefix(self, prefixes):
        self.encoded_batches.append(len(prefixes))
        if any(self.poison in p.token_ids for p in prefixes):
            raise RuntimeError("the kernel fell over")
        return super().encode_prefix(prefixes)


def test_a_request_that_breaks_the_shared_run_costs_only_its_own_answer(vocab):
    model = PoisonedModel(vocab, "zanzibar")
    requests = [_request("The deposit was returned."), _request("A zanzibar clause."), _request("Notice was given.")]
    outcomes = DecisionEngine(model).decide_many(requests)
    assert model.encoded_batches[0] == 3  # the shared run was tried first, then each request alone
    assert isinstance(outcomes[0], DecisionResponse) and isinstance(outcomes[2], DecisionResponse)
    assert isinstance(outcomes[1], EngineFailure)
    assert "RuntimeError: the kernel fell over" in outcomes[1].reason
    assert isinstance(outcomes[1].error, RuntimeError)
    assert [a.id for a in outcomes[0].answers] == ["q0", "q1"]


def test_alone_the_same_requests_decide_as_in_the_shared_run(vocab):
    requests = [_request("The deposit was returned."), _request("Notice was given.")]
    shared = DecisionEngine(FakeModel(vocab, random_logits(seed=4))).decide_many(requests)
    raised = DecisionEngine(FakeModel(vocab, random_logits(seed=4))).decide_batch(requests)
    assert [[a.value for a in r.answers] for r in shared] == [[a.value for a in r.answers] for r in raised]


def test_a_refused_request_gets_its_request_error_and_the_others_decide(vocab):
    requests = [_request("The deposit was returned."), _request("   "), _request("Notice was given.")]
    outcomes = DecisionEngine(FakeModel(vocab, random_logits(seed=5))).decide_many(requests)
    assert isinstance(outcomes[1], RequestError) and outcomes[1].field == "document.text"
    assert all(isinstance(outcomes[i], DecisionResponse) for i in (0, 2))
    assert outcomes[0].timings_ms["batch_size"] == 2  # the two laid-out requests shared one run


def test_an_invalid_output_becomes_an_engine_failure_of_that_request_alone(vocab, monkeypatch):
    real = engine_module.value_problem

    def value_problem(schema, value):  # the check the engine runs on every answer it gives
        return "flagged for the test" if schema.description == "flagged" else real(schema, value)

    monkeypatch.setattr(engine_module, "value_problem", value_problem)
    flagged = _request("Second text.")
    flagged.questions[1].schema = AnswerSchema(type="integer", minimum=0, maximum=99, description="flagged")
    engine = DecisionEngine(FakeModel(vocab, random_logits(seed=6)))
    outcomes = engine.decide_many([_request("First text."), flagged, _request("Third text.")])
    assert isinstance(outcomes[1], EngineFailure)
    assert outcomes[1].reason.startswith("engine failure: InvalidOutputError: question 'q1'")
    assert isinstance(outcomes[0], DecisionResponse) and isinstance(outcomes[2], DecisionResponse)
    with pytest.raises(engine_module.InvalidOutputError):  # the raising path still raises
        engine.decide_batch([flagged])


def test_nothing_to_decide_gives_nothing(vocab):
    assert DecisionEngine(FakeModel(vocab, random_logits(seed=7))).decide_many([]) == []
