"""The absence gate: the pointer's best span score shifts the odds of "not mentioned" answers."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch

from conftest import FakeModel
from decision_engine.decoding.layout import ContextChoice, LeadingContext
from decision_engine.decoding.slot_space import choice_space
from decision_engine.engine import DecisionEngine
from decision_engine.reader.absence_gate import AbsenceGate, PassageStrength, is_absence_choice, is_hypothesis_slot
from decision_engine.rules import RuleSet
from decision_engine.training.absence_fit import StrengthRow, fit_gate, with_novel_gate
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question

NLI = ["entailment", "contradiction", "not mentioned"]


@pytest.mark.parametrize(
    "text, absent",
    [("not mentioned", True), ("Not_Mentioned", True), ("  not   stated ", True), ("n/a", True), ("unknown", True),
     ("no", False), ("none", False), ("mentioned", False), ("not compliant", False), ("entailment", False)],
)
def test_absence_choices_are_recognised_by_their_words_not_their_spelling(text, absent):
    assert is_absence_choice(text) is absent


def test_only_nli_verdicts_are_hypothesis_slots():
    assert is_hypothesis_slot(NLI) and is_hypothesis_slot(["Entailment", "Not_Mentioned"])
    assert not is_hypothesis_slot(["yes", "no", "not mentioned"])  # a fact question, not a verdict
    assert not is_hypothesis_slot(["entailment", "contradiction"]) and not is_hypothesis_slot([True, False])


def test_the_gate_shifts_only_the_absence_choice_of_a_hypothesis_slot():
    gate = AbsenceGate(weight=-0.5, centre=20.0)
    assert gate.choice_bias(NLI, PassageStrength(24.0, 50)) == [0.0, 0.0, -2.0]  # a strong passage: less likely absent
    assert gate.choice_bias(NLI, PassageStrength(16.0, 50)) == [0.0, 0.0, 2.0]
    assert gate.choice_bias(["yes", "no", "not mentioned"], PassageStrength(30.0, 50)) is None
    assert gate.choice_bias([True, False], PassageStrength(30.0, 50)) is None
    assert AbsenceGate.from_dict(gate.to_dict()) == gate
    assert AbsenceGate.from_dict({"weight": -0.5, "centre": 20.0}) == gate  # a gate fitted without the span count
    assert AbsenceGate.from_dict(None) is None and AbsenceGate.from_dict({}) is None


def test_a_long_documents_best_score_counts_for_less():
    gate = AbsenceGate(weight=-0.5, centre=20.0, spans_weight=0.7, spans_centre=4.0)
    short, long = gate.shift(PassageStrength(22.0, 20)), gate.shift(PassageStrength(22.0, 400))
    assert long > short  # the same best score among more spans leaves "not mentioned" likelier
    assert gate.shift(PassageStrength(20.0, 0)) == pytest.approx(0.7 * (0.0 - 4.0))  # no spans: log of 1


def test_token_bias_favours_the_tokens_that_lead_to_the_biased_choice(vocab):
    classes = RuleSet.compile([AnswerSchema(type="string", enum=NLI)], ["q"], []).classes[0]
    space = choice_space(NLI, NLI, vocab, classes, "enum")
    space.choice_bias = [0.0, 0.0, -1.5]
    pattern = [None] * space.length
    first = space.token_bias(pattern, 0)
    assert first == {vocab.encode("not mentioned")[0]: -1.5}
    committed = list(pattern)
    committed[0] = vocab.encode("entailment")[0]
    assert all(position_bias == {} for position_bias in (space.token_bias(committed, p) for p in range(1, space.length)))


class StrengthContext:
    """A context builder that reports a fixed strength for every question (as a span pointer would)."""

    def __init__(self, vocab, strength: float):
        self.leading, self.strength = LeadingContext(vocab), strength

    def __call__(self, document, questions, budget) -> ContextChoice:
        choice = self.leading(document, questions, budget)
        choice.strength = [PassageStrength(self.strength, 10)] * len(questions)
        return choice


def leaning_logits(vocab):
    """A reader with no opinion, except a slight lean towards the tokens of "entailment"."""
    tokens = vocab.encode("entailment")

    def fn(call, rows, block_ids):
        logits = torch.zeros(block_ids.shape[0], block_ids.shape[1], 30522)
        logits[..., tokens] = 0.3
        return logits

    return fn


def nli_request(mode: str = "joint") -> DecisionRequest:
    schema = AnswerSchema(type="string", enum=NLI)
    questions = [Question(id=f"h{i}", text=f"Hypothesis {i}.", schema=schema) for i in range(2)]
    return DecisionRequest(document=Document(text="The recipient shall return all materials."), questions=questions, mode=mode)


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_a_weak_passage_turns_the_answer_to_not_mentioned_and_a_strong_one_away_from_it(vocab, mode):
    gate = AbsenceGate(weight=-1.0, centre=10.0)
    answers = {}
    for strength in (2.0, 18.0):
        model = FakeModel(vocab, leaning_logits(vocab))
        model.absence_gate = gate
        engine = DecisionEngine(model, context=StrengthContext(vocab, strength))
        answers[strength] = [a.value for a in engine.decide(nli_request(mode)).answers]
    assert answers[2.0] == ["not mentioned"] * 2
    assert answers[18.0] == ["entailment"] * 2
    plain = DecisionEngine(FakeModel(vocab, leaning_logits(vocab)), context=StrengthContext(vocab, 2.0))
    assert [a.value for a in plain.decide(nli_request(mode)).answers] == ["entailment"] * 2  # no gate, no shift


def test_the_fitted_gate_finds_the_slope_that_separates_absent_answers():
    rng = random.Random(0)
    rows = []
    for question, usual in (("q1", 0.0), ("q2", 3.0)):  # q2's passages always score higher
        for _ in range(400):
            absent = rng.random() < 0.5
            spans = rng.choice((20, 200))
            strength = usual + rng.gauss(8.0 if absent else 12.0, 1.5) + (2.0 if spans == 200 else 0.0)
            rows.append(StrengthRow(question, PassageStrength(strength, spans), absent))
    gate = fit_gate(rows)
    assert gate.weight < -0.8  # about -(12 - 8) / 1.5**2 = -1.8 for two equal-variance classes
    assert gate.spans_weight > 0.5  # long documents score 2 higher by chance: about 1.8 * 2 / log(10) = 1.5
    assert gate.centre == pytest.approx(sum(r.strength.best for r in rows) / len(rows), abs=1e-5)
    with pytest.raises(ValueError, match="both"):
        fit_gate([StrengthRow("q", PassageStrength(1.0, 5), True), StrengthRow("q", PassageStrength(2.0, 5), True)])


def test_fit_gate_names_what_it_cannot_use(tmp_path, capsys):
    from contractnli_fit_checks import check_names_what_it_cannot_use

    from decision_engine.cli import main

    check_names_what_it_cannot_use("fit-gate", tmp_path, capsys)
    with pytest.raises(SystemExit):
        main(["fit-gate", "--out", str(tmp_path / "o")])  # --contractnli is required
    assert "--contractnli" in capsys.readouterr().err


def test_fit_gate_writes_a_gate_the_loaded_model_applies(tmp_path, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_pointed_evidence import trained_pointed_model

    from decision_engine.cli import main
    from decision_engine.models import open_model

    data = trained_pointed_model(tmp_path)
    capsys.readouterr()
    out = tmp_path / "gated"
    assert main(["fit-gate", "--model", str(tmp_path / "model"), "--out", str(out), "--contractnli", str(data)]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["questions"] > 0 and 0 < fitted["absent"] < fitted["questions"]
    meta = json.loads((out / "config.json").read_text())
    assert meta["absence_gate"] == fitted["gate"] and meta["training"]["absence_gate"]["questions"] == fitted["questions"]
    assert (out / "model.safetensors").read_bytes() == (tmp_path / "model" / "model.safetensors").read_bytes()
    assert open_model(out).absence_gate == AbsenceGate.from_dict(fitted["gate"])
    assert open_model(tmp_path / "model").absence_gate is None


def test_strength_is_the_layout_pointers_best_raw_score_whatever_orders_the_citations(vocab):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_evidence_pointer import QUESTION, pointer_towards
    from test_pointed_evidence import DOCUMENT, WordEmbedder

    from decision_engine.reader.span_pointer import SpanPointer
    from decision_engine.retrieval.pointed import PointedContext, pointer_features

    layout = SpanPointer()
    context = PointedContext(vocab, layout, WordEmbedder(), evidence_tokens=80, evidence_pointer=pointer_towards("ohio"))
    features = pointer_features(WordEmbedder(), DOCUMENT, [QUESTION])
    with torch.no_grad():
        expected = layout(features.question_vectors, features.span_vectors, features.lexical).max().item()
    (found,) = context.strengths(DOCUMENT, [QUESTION])
    assert found.best == pytest.approx(expected, abs=1e-5) and found.spans == len(features.spans)
    assert context(DOCUMENT, [QUESTION], 300).strength == [found]
    assert context.strengths("", [QUESTION]) is None  # no spans, no strength


def test_a_novel_gate_reads_the_hypotheses_the_gate_was_not_fitted_on():
    novel = AbsenceGate(weight=-1.0, centre=1.0, reads="top")
    gate = AbsenceGate(weight=-0.5, centre=20.0, known=frozenset({"Known hypothesis."}), novel=novel)
    weak_scale = PassageStrength(14.0, 1, top=0.95)  # low raw score, yet the best span stands out
    assert gate.choice_bias(NLI, weak_scale, "Known hypothesis.") == [0.0, 0.0, 3.0]  # -0.5 * (14 - 20)
    stands_out = math.log(0.95 / 0.05)
    assert gate.choice_bias(NLI, weak_scale, "New words.") == pytest.approx([0.0, 0.0, -(stands_out - 1.0)])
    assert gate.choice_bias(NLI, weak_scale) == [0.0, 0.0, 3.0]  # no question text: the gate itself
    plain = AbsenceGate(weight=-0.5, centre=20.0)
    assert plain.for_question("New words.") is plain  # without a novel gate every hypothesis reads the one
    assert AbsenceGate.from_dict(gate.to_dict()) == gate
    assert "known" not in plain.to_dict() and "reads" not in plain.to_dict()  # older checkpoints read as before


def test_the_top_probability_is_read_as_bounded_log_odds():
    assert PassageStrength(5.0, 10, top=0.5).read("top") == pytest.approx(0.0)
    assert PassageStrength(5.0, 10, top=1.0).read("top") == pytest.approx(math.log((1 - 1e-4) / 1e-4))
    assert PassageStrength(5.0, 10, top=0.2).read("best") == 5.0


def test_the_novel_gate_is_fitted_on_the_top_probability_beside_the_kept_gate():
    rng = random.Random(1)
    rows = []
    for question, scale in (("q1", 0.0), ("q2", 6.0)):  # one hypothesis scores 6 higher throughout
        for _ in range(300):
            absent = rng.random() < 0.5
            top = min(max(rng.gauss(0.55 if absent else 0.85, 0.1), 0.01), 0.999)
            rows.append(StrengthRow(question, PassageStrength(scale + (8.0 if absent else 12.0), 40, top), absent))
    kept = fit_gate(rows)
    gate = with_novel_gate(kept, rows)
    assert gate.known == {"q1", "q2"} and gate.for_question("q1") is gate
    assert gate.novel.reads == "top" and gate.novel.weight < -0.5
    assert gate.weight == kept.weight and gate.centre == kept.centre
    with pytest.raises(ValueError, match="reads"):
        fit_gate(rows, reads="middle")


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_a_hypothesis_in_new_words_is_read_by_the_novel_gate_in_a_decision(vocab, mode):
    novel = AbsenceGate(weight=-1.0, centre=0.0, reads="top")  # the best span stands out (top 1.0): present
    answers = {}
    for known in (frozenset({"Hypothesis 0.", "Hypothesis 1."}), frozenset()):
        model = FakeModel(vocab, leaning_logits(vocab))
        model.absence_gate = AbsenceGate(weight=-1.0, centre=10.0, known=known, novel=novel)
        engine = DecisionEngine(model, context=StrengthContext(vocab, 2.0))  # a weak raw score
        answers[bool(known)] = [a.value for a in engine.decide(nli_request(mode)).answers]
    assert answers[True] == ["not mentioned"] * 2  # fitted on these texts: the raw score decides
    assert answers[False] == ["entailment"] * 2  # new words: how far the best span stands out decides
