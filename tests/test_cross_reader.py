"""The cross reader: a boolean or enum question, its choices and its evidence read as one text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from conftest import FakeModel
from decision_engine.decoding.layout import ContextChoice, LeadingContext
from decision_engine.engine import DecisionEngine
from decision_engine.reader.cross_reader import (
    MAX_CHOICES, CrossReader, first_segment, reads_across, tokenize_choices,
)
from decision_engine.reader.verdict_reader import MAX_TOKENS, load_base_encoder
from decision_engine.training.cross_fit import CrossExample, cross_accuracy, train_cross_reader
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Evidence, Question

sys.path.insert(0, str(Path(__file__).parent))
from test_absence_gate import NLI, leaning_logits  # noqa: E402
from test_choice_reader import mixed_request  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return load_base_encoder()[1]


def test_the_first_segment_names_each_choice_where_it_stands():
    text, ranges = first_segment("  Was the   file encrypted? ", [False, True])
    assert text == "Was the file encrypted? Answer: no / yes"
    assert [text[a:b] for a, b in ranges] == ["no", "yes"]
    text, ranges = first_segment("What next?", ["approve", "open tender", "hold"])
    assert [text[a:b] for a, b in ranges] == ["approve", "open tender", "hold"]


@pytest.mark.parametrize(
    "choices, read",
    [
        ([False, True], True), (["yes", "no", "not mentioned"], True), (NLI, False), (["only"], False),
        ([f"choice {i}" for i in range(MAX_CHOICES + 1)], False), (["a" * 100, "b" * 30], False),
    ],
)
def test_booleans_and_short_enums_are_read_but_not_hypotheses_or_choices_that_do_not_fit(choices, read):
    assert reads_across(choices) is read


def test_each_choice_is_marked_on_its_own_tokens_even_when_the_evidence_is_cut(tokenizer):
    long_evidence = ["The deposit has not been placed in a protection scheme. " * 60]
    encoded, marks = tokenize_choices(
        tokenizer, ["Is the deposit protected?", "What share comes back?"],
        [["yes", "no", "not mentioned"], ["full", "partial"]], [long_evidence, ["The tenant owes nothing."]],
    )
    assert encoded["input_ids"].shape[1] <= MAX_TOKENS and marks.shape == (2, 3, encoded["input_ids"].shape[1])
    words = [[tokenizer.decode(encoded["input_ids"][row][marks[row, k] > 0]) for k in range(3)] for row in range(2)]
    assert words == [["yes", "no", "not mentioned"], ["full", "partial", ""]]


def test_a_question_too_long_to_sit_beside_its_choices_is_cut_and_every_choice_kept(tokenizer):
    question = "何" * 400  # one token per character: far more than the pair holds
    choices = [["长" * 9 + str(i % 10) for i in range(MAX_CHOICES - 1)] + ["x" * 10]]  # as many and as long as read
    assert reads_across(choices[0])
    encoded, marks = tokenize_choices(tokenizer, [question], choices, [["Some evidence."]])
    assert encoded["input_ids"].shape[1] <= MAX_TOKENS
    assert bool((marks[0].sum(-1) > 0).all())  # no choice lost its tokens


def test_an_untrained_reader_gives_each_question_a_distribution_over_its_own_choices():
    torch.manual_seed(0)
    reader = CrossReader().eval()
    read = reader.choice_log_probs(
        ["Was the file encrypted?", "What should the bank decide?"], [[False, True], ["approve", "escalate", "hold"]],
        [["The file was encrypted."], []],
    )
    assert [len(r) for r in read] == [2, 3]
    assert all(torch.tensor(r).exp().sum() == pytest.approx(1.0, abs=1e-5) for r in read)
    assert reader.choice_log_probs([], [], []) == []


class EvidenceContext(LeadingContext):
    """The leading context, reporting the whole document as each question's one piece of evidence."""

    def __call__(self, document, questions, budget) -> ContextChoice:
        choice = super().__call__(document, questions, budget)
        choice.evidence = [[Evidence(0, len(document), document)] for _ in questions]
        return choice


class SureOf:
    """A cross reader stand-in sure of each question's first or last choice; records what it read."""

    def __init__(self, last: bool):
        self.last, self.asked = last, []

    def choice_log_probs(self, questions, choices, evidence):
        self.asked.append((list(questions), [list(e) for e in evidence]))
        sure = [[-12.0] * (len(c) - 1) + [0.0] for c in choices]
        return sure if self.last else [row[::-1] for row in sure]


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_a_sure_cross_reader_turns_boolean_and_enum_answers_from_their_evidence(vocab, mode):
    answers = {}
    for last in (False, True):
        model = FakeModel(vocab, leaning_logits(vocab))  # leans to "entailment", no opinion elsewhere
        model.cross_reader = SureOf(last)
        response = DecisionEngine(model, context=EvidenceContext(vocab)).decide(mixed_request(mode))
        answers[last] = [a.value for a in response.answers]
        asked = [q for questions, _ in model.cross_reader.asked for q in questions]
        assert sorted(asked) == ["Was the file encrypted?", "What should the bank decide?"]  # never the hypothesis
        document = mixed_request(mode).document.text
        assert all(e == [document] for _, evidence in model.cross_reader.asked for e in evidence)
    assert answers[False] == [True, "approve", "entailment"]  # booleans are (true, false)
    assert answers[True] == [False, "hold", "entailment"]


def toy_examples() -> list[CrossExample]:
    """Whether a colour is named, answered by the one sentence of evidence, in several wordings."""
    out = []
    for colour, other in (("red", "blue"), ("green", "yellow"), ("black", "white"), ("orange", "purple")):
        for question in (f"Is the car {colour}?", f"Was the car painted {colour}?"):
            out.append(CrossExample(question, (False, True), (f"The car is {colour}.",), 1))
            out.append(CrossExample(question, (False, True), (f"The car is {other}.",), 0))
    return out


def test_training_learns_to_read_the_answer_from_the_evidence():
    torch.manual_seed(0)
    reader = CrossReader(rank=4)
    examples = toy_examples()
    losses = train_cross_reader(reader, examples * 6, epochs=6, seed=0, log=lambda line: None)
    assert losses[-1] < losses[0]
    assert cross_accuracy(reader, examples) >= 0.85


def test_fit_cross_fits_a_reader_the_loaded_model_uses_and_leaves_the_rest_alone(tmp_path, capsys):
    from decision_engine.cli import main
    from decision_engine.factory import build_engine
    from decision_engine.model.loader import load_checkpoint
    from decision_engine.models import BUNDLED_WEIGHTS, open_model

    out = tmp_path / "cross"
    assert main(["fit-cross", "--out", str(out), "--rank", "0"]) == 2
    assert "--rank" in capsys.readouterr().err
    assert main(["fit-cross", "--out", str(out), "--groups", "0"]) == 2
    assert "--groups" in capsys.readouterr().err
    assert main(["fit-cross", "--out", str(out), "--groups", "2", "--epochs", "1", "--rank", "2"]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["questions"] > 0 and fitted["epochs"] == 1 and fitted["groups"] == 2
    before, _ = load_checkpoint(BUNDLED_WEIGHTS)
    after, meta = load_checkpoint(out)
    assert meta["config"]["reads_across"] and meta["config"]["cross_rank"] == 2
    assert meta["training"]["cross_reader"]["questions"] == fitted["questions"]
    kept = {k: v for k, v in after.state_dict().items() if not k.startswith("cross_reader.")}
    assert all(torch.equal(v, before.state_dict()[k]) for k, v in kept.items())
    assert any(k.startswith("cross_reader.") for k in after.state_dict())
    request = DecisionRequest(
        document=Document(text="The file was not encrypted. Screening found no politically exposed person."),
        questions=[
            Question(id="encrypted", text="Was the file encrypted?", schema=AnswerSchema(type="boolean")),
            Question(id="pep", text="Did screening find a PEP?", schema=AnswerSchema(type="string", enum=["yes", "no", "not mentioned"])),
        ],
    )
    model = open_model(out)
    assert model.cross_reader is not None
    response = build_engine(model=model).decide(request)
    assert response.answers[0].value in (True, False) and response.answers[1].value in ("yes", "no", "not mentioned")
