"""The choice reader: boolean and enum slots weighed by a head over the document's sentence vectors."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
import torch

from conftest import FakeModel
from decision_engine.decoding.grounded_space import CHOICE_BASE, GroundedSpace
from decision_engine.decoding.layout import LeadingContext
from decision_engine.engine import DecisionEngine
from decision_engine.reader.choice_reader import DIM, ChoiceReader, choice_text, reads_choices
from decision_engine.training.choice_fit import ChoiceExample, choice_accuracy, train_choice_reader
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question

sys.path.insert(0, str(Path(__file__).parent))
from test_absence_gate import NLI, leaning_logits  # noqa: E402

BOOLEAN = AnswerSchema(type="boolean")
ENUM = AnswerSchema(type="string", enum=["approve", "escalate", "hold"])


@pytest.mark.parametrize(
    "choices, read",
    [([False, True], True), (["approve", "hold"], True), (["yes", "no", "not mentioned"], True), (NLI, False), (["only"], False)],
)
def test_booleans_and_enums_are_read_but_hypotheses_are_left_to_the_verdict_reader(choices, read):
    assert reads_choices(choices) is read


def test_choices_are_read_as_their_words():
    assert [choice_text(c) for c in (True, False, "open tender")] == ["yes", "no", "open tender"]


def test_log_probs_cover_each_questions_own_choices_and_nothing_to_read_means_no_opinion():
    torch.manual_seed(0)
    reader = ChoiceReader().eval()
    questions, spans = torch.randn(2, DIM), torch.randn(5, DIM)
    read = reader.log_probs(questions, spans, [torch.randn(2, DIM), torch.randn(3, DIM)])
    assert [len(r) for r in read] == [2, 3]
    assert all(sum(torch.tensor(r).exp()) == pytest.approx(1.0, abs=1e-5) for r in read)
    assert reader.log_probs(questions, torch.zeros(0, DIM), [torch.randn(2, DIM), torch.randn(3, DIM)]) == [[0.0] * 2, [0.0] * 3]


class FakeEmbedder:
    """Fixed vectors per text, and a record of the documents whose spans were asked for."""

    def __init__(self):
        self.documents = []

    @staticmethod
    def _vector(text: str) -> torch.Tensor:
        return torch.randn(DIM, generator=torch.Generator().manual_seed(sum(map(ord, text))))

    def embed_spans(self, document, spans):
        self.documents.append(document)
        return torch.stack([self._vector(document[s.start : s.end]) for s in spans])

    def embed_questions(self, texts):
        return torch.stack([self._vector(t) for t in texts])

    embed_words = embed_questions


class EmbeddingContext(LeadingContext):
    """The leading context with an embedder, as a span pointer's context has."""

    def __init__(self, vocab):
        super().__init__(vocab)
        self.embedder = FakeEmbedder()


class SureOf:
    """A choice reader stand-in sure of each question's first or last choice; records how many it read."""

    def __init__(self, last: bool = True):
        self.last, self.asked = last, []

    def log_probs(self, questions, spans, choices):
        self.asked.append(len(questions))
        sure = [[-12.0] * (len(c) - 1) + [0.0] for c in choices]
        return sure if self.last else [row[::-1] for row in sure]


def mixed_request(mode: str) -> DecisionRequest:
    questions = [
        Question(id="flag", text="Was the file encrypted?", schema=BOOLEAN),
        Question(id="outcome", text="What should the bank decide?", schema=ENUM),
        Question(id="h", text="Hypothesis.", schema=AnswerSchema(type="string", enum=NLI)),
    ]
    return DecisionRequest(document=Document(text="The file was encrypted. Onboarding is on hold."), questions=questions, mode=mode)


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_a_sure_choice_reader_turns_boolean_and_enum_answers_and_leaves_hypotheses_alone(vocab, mode):
    answers = {}
    for last in (False, True):
        model = FakeModel(vocab, leaning_logits(vocab))  # leans to "entailment", no opinion elsewhere
        model.choice_reader = SureOf(last)
        context = EmbeddingContext(vocab)
        response = DecisionEngine(model, context=context).decide(mixed_request(mode))
        answers[last] = [a.value for a in response.answers]
        assert sum(model.choice_reader.asked) == 2  # the boolean and the enum, never the hypothesis
        assert set(context.embedder.documents) == {mixed_request(mode).document.text}
    assert answers[False] == [True, "approve", "entailment"]  # booleans are (true, false)
    assert answers[True] == [False, "hold", "entailment"]


def test_a_compared_boolean_takes_the_bias_only_once_its_comparison_hands_it_to_the_reader(vocab):
    from decision_engine.decoding.slot_space import build_space
    from decision_engine.rules import RuleSet

    rules = RuleSet.compile([BOOLEAN], ["flag"], [])
    inner = build_space(BOOLEAN, vocab, rules.classes[0], "flag")
    grounded = GroundedSpace(inner, [False, True], torch.zeros(3))
    assert grounded.choice_bias is None and grounded.token_bias([None, None], 1) == {}
    inner.choice_bias = [-3.0, 1.0]
    assert grounded.choice_bias == [-3.0, 1.0]
    assert grounded.token_bias([None, None], 0) == {}  # the choice position is the comparison's
    assert grounded.token_bias([CHOICE_BASE, None], 1) == {}  # a compared value was chosen
    written = grounded.token_bias([grounded.write_id, None], 1)
    assert written == inner.token_bias([None], 0) and sorted(written.values()) == [-3.0, 1.0]


@pytest.mark.parametrize("alone", [False, True])
def test_a_comparison_that_answers_alone_keeps_its_own_odds_and_the_reader_weighs_only_the_handover(vocab, alone):
    from decision_engine.decoding.layout import _add_choice_read
    from decision_engine.decoding.slot_space import build_space
    from decision_engine.rules import RuleSet

    rules = RuleSet.compile([BOOLEAN], ["flag"], [])
    inner = build_space(BOOLEAN, vocab, rules.classes[0], "flag")
    odds = torch.tensor([-2.0, -0.5, -1.0])  # the comparison's false, true, then "write"
    grounded = GroundedSpace(inner, [False, True], odds.clone(), alone=alone)
    read = [-0.1, -3.0]  # the reader's log-probabilities of (true, false)
    _add_choice_read(grounded, read)
    assert grounded.choice_bias == read  # the written answer always weighs the reader
    expected = odds if alone else odds + torch.tensor([read[1], read[0], 0.0])  # false takes the reader's false
    assert torch.allclose(grounded.choice_logits, expected)


def test_a_biased_enum_keeps_its_own_calibration_map(vocab):
    from decision_engine.engine import calibration_kind

    model = FakeModel(vocab, leaning_logits(vocab))
    model.choice_reader = SureOf()
    engine = DecisionEngine(model, context=EmbeddingContext(vocab))
    layout = engine.prepare(mixed_request("joint"), "joint")
    assert [calibration_kind(layout, i) for i in range(2)] == ["boolean", "enum"]


def toy_examples(count: int, seed: int) -> list[ChoiceExample]:
    """One question whose answer is the choice whose vector one of the document's spans carries."""
    fixed = torch.Generator().manual_seed(0)
    choices = torch.nn.functional.normalize(torch.randn(3, DIM, generator=fixed), dim=-1)
    question = torch.nn.functional.normalize(torch.randn(DIM, generator=fixed), dim=-1)
    generator = torch.Generator().manual_seed(seed)
    draw = random.Random(seed)
    out = []
    for _ in range(count):
        answer = draw.randrange(3)
        spans = 0.3 * torch.randn(4, DIM, generator=generator) / DIM**0.5
        spans[draw.randrange(4)] += choices[answer]
        out.append(ChoiceExample(question, spans, choices, answer))
    return out


def test_training_learns_to_read_the_answer_from_the_spans():
    torch.manual_seed(0)
    reader = ChoiceReader()
    fitted = train_choice_reader(reader, toy_examples(400, 0), epochs=15, seed=0, log=lambda line: None)
    assert fitted["before"]["accuracy"] < 0.6
    held_out = toy_examples(200, 1)
    assert fitted["after"]["accuracy"] > 0.9 and choice_accuracy(reader, held_out)["accuracy"] > 0.9


def test_question_variants_add_rewordings_of_each_question_with_its_own_answer():
    from decision_engine.datasets.linked_groups import generate_groups
    from decision_engine.training.choice_fit import choice_examples

    lines = generate_groups("train", 2, seed=3)
    embedder = FakeEmbedder()
    embedder.embed = lambda texts: torch.stack([FakeEmbedder._vector(t) for t in texts])
    plain = choice_examples(lines, embedder)
    varied = choice_examples(lines, embedder, variants=2, seed=0)
    assert len(varied) == 3 * len(plain) > 0
    reworded = 0
    for i, example in enumerate(plain):
        copies = varied[3 * i : 3 * i + 3]
        assert torch.equal(copies[0].question, example.question)
        assert all(c.answer == example.answer and torch.equal(c.choices, example.choices) for c in copies)
        reworded += sum(not torch.equal(c.question, example.question) for c in copies[1:])
    assert reworded > 1.5 * len(plain)  # a short question may keep every word by chance


def test_reworded_documents_give_each_question_copy_spans_read_with_words_left_out():
    from decision_engine.datasets.linked_groups import generate_groups
    from decision_engine.training.choice_fit import choice_examples

    lines = generate_groups("train", 2, seed=3)
    embedder = FakeEmbedder()
    embedder.embed = lambda texts: torch.stack([FakeEmbedder._vector(t) for t in texts])
    same = choice_examples(lines, embedder, variants=2, seed=0)
    varied = choice_examples(lines, embedder, variants=2, seed=0, reword_documents=True)
    assert len(varied) == len(same) > 0
    for i in range(0, len(varied), 3):
        original, *copies = varied[i : i + 3]
        assert torch.equal(original.spans, same[i].spans)  # the question as asked reads the document as written
        assert all(c.spans.shape == original.spans.shape and c.answer == original.answer for c in copies)
        assert not any(torch.equal(c.spans, original.spans) for c in copies)
    assert not torch.equal(varied[1].spans, varied[2].spans)  # each copy a rewording of its own


def test_training_without_questions_is_refused():
    with pytest.raises(ValueError, match="no boolean or enum questions"):
        train_choice_reader(ChoiceReader(), [], epochs=1, seed=0)


def test_fit_choices_fits_a_reader_the_loaded_model_uses_and_leaves_the_rest_alone(tmp_path, capsys):
    from decision_engine.cli import main
    from decision_engine.factory import build_engine
    from decision_engine.model.loader import load_checkpoint
    from decision_engine.models import BUNDLED_WEIGHTS, open_model

    out = tmp_path / "choices"
    assert main(["fit-choices", "--out", str(out), "--groups", "0"]) == 2
    assert "--groups" in capsys.readouterr().err
    assert main(["fit-choices", "--out", str(out), "--groups", "2", "--epochs", "1", "--int8", "no_such_part"]) == 2
    assert "no part 'no_such_part'" in capsys.readouterr().err
    assert main(["fit-choices", "--out", str(out), "--groups", "2", "--readers", "0"]) == 2
    assert "--readers" in capsys.readouterr().err
    assert main(["fit-choices", "--out", str(out), "--groups", "2", "--question-variants", "-1"]) == 2
    assert "--question-variants" in capsys.readouterr().err
    assert main(["fit-choices", "--out", str(out), "--groups", "2", "--question-variants", "0", "--reword-documents"]) == 2
    assert "--reword-documents" in capsys.readouterr().err
    assert main(["fit-chooser", "--out", str(out), "--groups", "2", "--reword-documents"]) == 2
    assert "give --question-variants" in capsys.readouterr().err
    assert main(["fit-choices", "--out", str(out), "--groups", "3", "--epochs", "2", "--readers", "2", "--int8", "comparison_chooser"]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["examples"] > 0 and fitted["epochs"] == 2 and fitted["groups"] == 3
    before, _ = load_checkpoint(BUNDLED_WEIGHTS)
    after, meta = load_checkpoint(out)
    assert meta["config"]["reads_choices"] and meta["config"]["choice_readers"] == 2
    assert "comparison_chooser" in meta["stored_in_int8"] and len(fitted["members"]) == 2
    assert meta["training"]["choice_reader"]["examples"] == fitted["examples"]
    assert fitted["question_variants"] == 2 and fitted["examples"] % 3 == 0  # each question and two rewordings
    kept = {k: v for k, v in after.state_dict().items() if not k.startswith(("choice_reader.", "comparison_chooser."))}
    assert all(torch.equal(v, before.state_dict()[k]) for k, v in kept.items())
    request = DecisionRequest(
        document=Document(text="The file was not encrypted. Screening found no politically exposed person."),
        questions=[
            Question(id="encrypted", text="Was the file encrypted?", schema=BOOLEAN),
            Question(id="pep", text="Did screening find a PEP?", schema=AnswerSchema(type="string", enum=["yes", "no", "not mentioned"])),
        ],
    )
    model = open_model(out)
    assert model.choice_reader is not None
    response = build_engine(model=model).decide(request)
    assert response.answers[0].value in (True, False) and response.answers[1].value in ("yes", "no", "not mentioned")


def test_an_ensemble_reads_as_the_mean_of_its_members_log_probabilities():
    from decision_engine.reader.choice_reader import ChoiceReaderEnsemble, choice_reader

    torch.manual_seed(0)
    ensemble = choice_reader(2).eval()
    assert isinstance(ensemble, ChoiceReaderEnsemble) and isinstance(choice_reader(1), ChoiceReader)
    questions, spans, choices = torch.randn(2, DIM), torch.randn(4, DIM), [torch.randn(2, DIM), torch.randn(3, DIM)]
    each = [m.log_probs(questions, spans, choices) for m in ensemble.members]
    for row, read in enumerate(ensemble.log_probs(questions, spans, choices)):
        mean = (torch.tensor(each[0][row]) + torch.tensor(each[1][row])) / 2
        assert torch.allclose(torch.tensor(read), torch.log_softmax(mean, dim=-1), atol=1e-5)
    with pytest.raises(ValueError, match="at least one"):
        choice_reader(0)


def test_an_ensembles_members_are_fitted_from_their_own_seeds():
    from decision_engine.reader.choice_reader import choice_reader
    from decision_engine.training.choice_fit import train_choice_readers

    torch.manual_seed(0)
    ensemble = choice_reader(2)
    fitted = train_choice_readers(ensemble, toy_examples(200, 0), epochs=5, seed=0, log=lambda line: None)
    assert len(fitted["members"]) == 2 and fitted["after"]["accuracy"] > fitted["before"]["accuracy"]
    first, second = (dict(m.named_parameters())["query.weight"] for m in ensemble.members)
    assert not torch.equal(first, second)
