"""Compared boolean slots: the comparison table, the pair arithmetic, the loss, and a boolean answered
by comparing two dates end to end with a tiny model."""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
import torch
from torch import nn

from decision_engine.calibration import Calibration
from decision_engine.decoding.grounded_space import GroundedSpace
from decision_engine.decoding.slot_space import build_space
from decision_engine.engine import DecisionEngine
from decision_engine.grounding.candidates import COUNT, Candidate, measure
from decision_engine.grounding.grounder import Grounder
from decision_engine.grounding.mentions import find_mentions
from decision_engine.reader.comparison_chooser import (
    ComparisonChooser, ComparisonTable, comparison_candidates, comparison_loss, side_loss,
)
from decision_engine.reader.chooser_ensemble import ChooserEnsemble, chooser_state_with_operations
from decision_engine.reader.value_chooser import ValueChooser, with_operations
from decision_engine.rules import RuleSet
from decision_engine.training.comparison_choice import (
    collate, comparison_accuracy, comparison_examples, train_comparer,
)
from decision_engine.types import AnswerSchema
from decision_engine.validation import request_from_object

QUESTION = {"id": "in_time", "text": "Was the report sent on or before the deadline?", "schema": {"type": "boolean"}}


def _document(deadline: dt.date, sent: dt.date) -> str:
    return (
        "Reporting record.\n"
        f"The authority set a reporting deadline of {deadline.day} {deadline.strftime('%B')} {deadline.year}.\n"
        f"The fee was 300 and the file ran to 12 pages.\n"
        f"The report was sent on {sent.isoformat()}."
    )


def _lines(count: int, seed: int, named: bool = False) -> list[dict]:
    """Labelled lines of one compared question; `named`: each also says which two values it compares,
    with a second question that is no comparison (a coin toss the document does not settle)."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        deadline = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 300))
        sent = deadline + dt.timedelta(days=rng.choice((-9, -3, -1, 0, 1, 4, 12)))
        line = {
            "document": {"text": _document(deadline, sent)},
            "questions": [QUESTION],
            "labels": {"in_time": sent <= deadline},
        }
        if named:
            line["questions"] = [QUESTION, SIGNED]
            line["labels"]["signed"] = rng.random() < 0.5
            line["compared"] = {"in_time": [sent.isoformat(), deadline.isoformat()]}
        lines.append(line)
    return lines


SIGNED = {"id": "signed", "text": "Did the author sign the report by hand?", "schema": {"type": "boolean"}}


def test_the_table_compares_integers_with_integers_and_dates_with_dates():
    candidates = [
        Candidate(5, "copy", (0,), ("5",)),
        Candidate(9, "copy", (1,), ("9",)),
        Candidate(dt.date(2024, 3, 8), "copy", (2,), ("2024-03-08",)),
        Candidate(dt.date(2024, 3, 1), "copy", (3,), ("2024-03-01",)),
    ]
    mentions = find_mentions("5 and 9 on 2024-03-08 and 2024-03-01")
    table = ComparisonTable.of(candidates, mentions)
    assert table.comparable.tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    assert table.less_equal[0, 1] and not table.less_equal[1, 0] and table.less_equal[0, 0]
    assert table.less[0, 1] and not table.less[0, 0]
    assert table.less_equal[3, 2] and not table.less_equal[2, 3]
    assert not table.less_equal[0, 2] and not table.less_equal[2, 0]  # 5 and a date do not compare


def test_the_table_compares_only_values_that_count_the_same_thing():
    mentions = find_mentions(
        "Sent on 2024-03-01, received on 2024-03-11. Notice of 30 days, or 2 months, or 10 business days; "
        "a fee of 300; a 5% surcharge."
    )
    candidates = comparison_candidates(mentions)
    table = ComparisonTable.of(candidates, mentions)

    def at(operation: str, value) -> int:
        return next(i for i, c in enumerate(candidates) if c.operation == operation and c.value == value)

    between, days, months = at("days_between", 10), at("copy", 30), at("copy", 2)
    business, fee, percent = at("copy", 10), at("copy", 300), at("copy", 5)
    assert [measure(candidates[i], mentions) for i in (between, days, months, business, fee, percent)] == [
        "days", "days", "months", "days business", "number", "percent",
    ]
    assert table.comparable[between, days] and table.less_equal[between, days]  # 10 days against 30 days
    for other in (months, business, fee, percent):  # never 10 days against 2 months, 10 business days, 300 or 5%
        assert not table.comparable[between, other] and not table.less_equal[other, between]


def test_weeks_compare_with_days_as_seven_days_each():
    mentions = find_mentions("Sent on 2024-03-01, received on 2024-03-11. Reply within 2 weeks, or 9 days.")
    candidates = comparison_candidates(mentions)
    table = ComparisonTable.of(candidates, mentions)
    between = next(i for i, c in enumerate(candidates) if c.operation == "days_between")
    weeks = next(i for i, c in enumerate(candidates) if c.operation == "copy" and c.value == 2)
    nine = next(i for i, c in enumerate(candidates) if c.operation == "copy" and c.value == 9)
    assert measure(candidates[weeks], mentions) == "weeks"
    assert table.comparable[between, weeks] and table.less_equal[between, weeks]  # 10 days <= 14 days
    assert table.less[nine, weeks] and not table.less_equal[weeks, nine]  # 9 days < 2 weeks
    assert not table.less_equal[between, nine]  # 10 days > 9 days


def test_candidates_hold_both_kinds_of_value():
    mentions = find_mentions(_document(dt.date(2024, 5, 1), dt.date(2024, 4, 28)))
    values = [c.value for c in comparison_candidates(mentions)]
    assert 300 in values and dt.date(2024, 5, 1) in values and dt.date(2024, 4, 28) in values
    assert 3 in values  # days between the two dates: a step, as integer slots have


class _Fixed(nn.Module):
    """A stand-in side chooser with fixed logits over (candidates, write)."""

    def __init__(self, logits: list[float]):
        super().__init__()
        self.logits = torch.tensor([logits])

    def forward(self, *inputs, siblings=None):
        return self.logits


def _inputs(values: list[int]) -> tuple[torch.Tensor, ...]:
    k = len(values)
    v = torch.tensor(values)
    ones = torch.ones((1, k, k), dtype=torch.bool)
    return (
        torch.zeros(1, 384), torch.zeros(1, 1, 1), torch.zeros(1, k, dtype=torch.long), torch.zeros(1, k, 4, dtype=torch.long),
        torch.zeros(1, k, 5), torch.ones(1, k, dtype=torch.bool),
        (v[:, None] <= v[None, :])[None] & ones, (v[:, None] < v[None, :])[None] & ones, ones,
    )


def test_true_is_the_chance_that_the_left_value_is_at_most_the_right_one():
    chooser = ComparisonChooser()
    chooser.left = _Fixed([0.0, 0.0, -50.0, 0.0])  # left: 1 or 5, evenly
    chooser.right = _Fixed([-50.0, -50.0, 0.0, 0.0])  # right: 3 for certain
    nn.init.constant_(chooser.strict.weight, 0.0)
    nn.init.constant_(chooser.strict.bias, -50.0)  # "<=" for certain
    true, _ = chooser.probabilities(*_inputs([1, 5, 3]))
    assert true.item() == pytest.approx(0.5)  # 1 <= 3 but not 5 <= 3
    chooser.left = _Fixed([-50.0, -50.0, 0.0, 0.0])  # left 3 as well: a tie
    assert chooser.probabilities(*_inputs([1, 5, 3]))[0].item() == pytest.approx(1.0)
    nn.init.constant_(chooser.strict.bias, 50.0)  # "<": a tie is false
    assert chooser.probabilities(*_inputs([1, 5, 3]))[0].item() == pytest.approx(0.0, abs=1e-6)


def test_each_side_starts_as_the_value_chooser_whole_or_as_an_ensembles_first_member():
    torch.manual_seed(0)
    ensemble = ChooserEnsemble(2)
    sided = ComparisonChooser(sides=2)
    sided.start_from(ensemble)
    # the sides have forms for every operation but counts, which comparisons never offer
    compared = chooser_state_with_operations(ensemble.state_dict(), COUNT)
    for side in (sided.left, sided.right):
        assert isinstance(side, ChooserEnsemble)
        for name, p in compared.items():
            assert torch.equal(side.state_dict()[name], p), name
        assert side.members[1].around_cue.item() == 1.0  # the second member still reads the cue around
    assert ensemble.members[0].query.weight.shape[0] > sided.left.members[0].query.weight.shape[0]
    single = ComparisonChooser()
    single.start_from(ensemble)
    for name, p in with_operations(ensemble.members[0].state_dict(), COUNT).items():
        assert torch.equal(single.left.state_dict()[name], p) and torch.equal(single.right.state_dict()[name], p), name


def test_the_three_columns_are_false_true_and_write():
    chooser = ComparisonChooser()
    chooser.left = _Fixed([0.0, -50.0, 0.0])
    chooser.right = _Fixed([-50.0, 0.0, 0.0])
    nn.init.constant_(chooser.gate.weight, 0.0)
    nn.init.constant_(chooser.gate.bias, 0.0)  # a comparison half the time
    p = chooser(*_inputs([1, 5])).exp()[0]
    assert p.tolist() == pytest.approx([0.0, 0.5, 0.5], abs=1e-5)  # 1 <= 5: true, or the reader answers


@pytest.mark.parametrize("gate", [-1.0, 1.0])
def test_a_comparer_that_answers_alone_lets_its_gate_decide_and_the_comparison_answer(gate):
    chooser = ComparisonChooser(answers_alone=True)
    chooser.left = _Fixed([0.0, 0.0, 0.0])  # left: 1 or 5, evenly
    chooser.right = _Fixed([-50.0, 0.0, 0.0])  # right: 5
    nn.init.constant_(chooser.strict.weight, 0.0)
    nn.init.constant_(chooser.strict.bias, -50.0)
    nn.init.constant_(chooser.gate.weight, 0.0)
    nn.init.constant_(chooser.gate.bias, gate)
    soft = chooser(*_inputs([1, 5])).exp()[0]  # what training sees: the gate's odds weigh every column
    assert soft[2].item() == pytest.approx(1 / (1 + math.exp(gate)), abs=1e-5)
    logits, _ = chooser.decide(*_inputs([1, 5]))
    expected = [0.0, 1.0, 0.0] if gate > 0 else [0.0, 0.0, 1.0]  # 1 <= 5 and 5 <= 5: true; else handed over
    assert logits.exp()[0].tolist() == pytest.approx(expected, abs=1e-5)
    chooser.answers_alone = False
    assert chooser.decide(*_inputs([1, 5]))[0].exp()[0].tolist() == pytest.approx(soft.tolist(), abs=1e-6)


def test_the_loss_counts_write_as_the_reader_answering_from_habit():
    logits = torch.tensor([[0.1, 0.6, 0.3], [0.1, 0.6, 0.3]]).log()
    loss = comparison_loss(logits, torch.tensor([True, False]), torch.tensor([0.8, 0.8]))
    expected = -(torch.tensor(0.6 + 0.3 * 0.8).log() + torch.tensor(0.1 + 0.3 * 0.2).log()) / 2
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_the_side_loss_is_minus_the_log_of_the_known_values_summed_chance_and_skips_unknown_rows():
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    known = torch.tensor([[True, True, False, False], [False, False, False, False]])
    assert side_loss(logits, known).item() == pytest.approx(-math.log(0.5), rel=1e-6)  # row 2 says nothing
    assert side_loss(logits, torch.zeros_like(known)).item() == 0.0


def test_named_sides_mark_the_candidates_holding_each_value_and_the_gate_knows_which_question_compares():
    grounder = Grounder(ValueChooser())
    line = _lines(1, seed=3, named=True)[0]
    examples = {e.question_id: e for e in comparison_examples([line], grounder.embedder)}
    candidates = comparison_candidates(find_mentions(line["document"]["text"]))
    sent, deadline = (dt.date.fromisoformat(v) for v in line["compared"]["in_time"])
    compared = examples["in_time"]
    assert compared.is_comparison is True and examples["signed"].is_comparison is False
    assert {candidates[i].value for i in compared.left.nonzero().flatten().tolist()} == {sent}
    assert {candidates[i].value for i in compared.right.nonzero().flatten().tolist()} == {deadline}
    assert examples["signed"].left is None and examples["signed"].right is None
    unnamed = comparison_examples(_lines(1, seed=3), grounder.embedder)[0]  # a line that says nothing
    assert unnamed.left is None and unnamed.is_comparison is None


def test_named_sides_and_comparisons_are_learnt():
    torch.manual_seed(0)
    comparer = ComparisonChooser()
    grounder = Grounder(ValueChooser(), comparer=comparer)
    fitted = train_comparer(comparer, comparison_examples(_lines(24, seed=0, named=True), grounder.embedder),
                            epochs=40, learning_rate=3e-3, log=lambda _: None)
    comparer.eval()
    assert fitted["before"]["side_accuracy"] < 0.9
    held_out = comparison_examples(_lines(8, seed=5, named=True), grounder.embedder)
    measured = comparison_accuracy(comparer, held_out)
    assert measured["sides_known"] == 16 and measured["side_accuracy"] == 1.0
    compared = [e for e in held_out if e.is_comparison]
    with torch.no_grad():
        gates = {e.question_id: torch.sigmoid(comparer.gate(e.question[None])).item() for e in held_out}
    assert gates["in_time"] > 0.5 > gates["signed"]  # the coin toss is left to the reader
    assert comparison_accuracy(comparer, compared)["accuracy"] == 1.0


def test_collate_pads_each_document_table_with_pairs_that_never_compare():
    grounder = Grounder(ValueChooser())
    small, large = _lines(2, seed=1)
    large["document"]["text"] += "\nIt named 7 annexes, 41 witnesses and a 2 May 2024 hearing."
    examples = comparison_examples([small, large], grounder.embedder)
    n = len(examples[0].table.table.operations)
    inputs, answers = collate(examples)
    k = inputs[2].shape[1]
    assert k == len(examples[1].table.table.operations) > n
    assert inputs[-1].shape == (2, k, k) and not inputs[-1][0, n:].any() and not inputs[-1][0, :, n:].any()
    assert inputs[5][0, :n].all() and not inputs[5][0, n:].any()
    assert answers.dtype == torch.bool and answers.shape == (2,)


@pytest.mark.parametrize("sides", [1, 2])
def test_a_boolean_is_answered_by_comparing_two_dates_end_to_end_with_a_tiny_model(tiny_backend, sides):
    comparer = ComparisonChooser(sides=sides)
    grounder = Grounder(ValueChooser(), comparer=comparer)
    training = comparison_examples(_lines(24, seed=0), grounder.embedder)
    torch.manual_seed(0)
    train_comparer(comparer, training, epochs=60, learning_rate=3e-3, log=lambda _: None)
    comparer.eval()
    held_out = _lines(8, seed=5)
    assert comparison_accuracy(comparer, comparison_examples(held_out, grounder.embedder))["accuracy"] == 1.0
    engine = DecisionEngine(tiny_backend, grounder=grounder)
    for line in held_out[:4]:
        request = request_from_object({"document": line["document"], "questions": line["questions"]})
        for mode in ("joint", "independent", "sequential"):
            (answer,) = engine.decide(request, mode).answers
            assert answer.value is line["labels"]["in_time"]
            assert answer.fixed_by == "model" and 0 < answer.confidence <= 1
            assert answer.evidence and all(e.text in line["document"]["text"] for e in answer.evidence)


def test_a_compared_boolean_keeps_the_comparison_confidence_under_the_readers_boolean_map(tiny_backend):
    comparer = ComparisonChooser()
    grounder = Grounder(ValueChooser(), comparer=comparer)
    torch.manual_seed(0)
    train_comparer(comparer, comparison_examples(_lines(24, seed=0), grounder.embedder), epochs=60,
                   learning_rate=3e-3, log=lambda _: None)
    comparer.eval()
    line = _lines(1, seed=5)[0]
    request = request_from_object({"document": line["document"], "questions": line["questions"]})
    raw = DecisionEngine(tiny_backend, grounder=grounder).decide(request, "joint").answers[0]
    before = tiny_backend.calibration
    tiny_backend.calibration = Calibration({"joint:boolean": (0.0, 0.0), "joint:compared": (0.0, 3.0)})
    try:
        mapped = DecisionEngine(tiny_backend, grounder=grounder).decide(request, "joint").answers[0]
    finally:
        tiny_backend.calibration = before
    assert mapped.value is raw.value
    assert mapped.confidence == pytest.approx(1 / (1 + math.exp(-3.0)), abs=1e-6)  # its own map, not the reader's


def test_the_grounder_leaves_booleans_alone_without_a_comparison_chooser_or_values(vocab):
    schema = AnswerSchema(type="boolean")
    rules = RuleSet.compile([schema], ["in_time"], [])
    spaces = [build_space(schema, vocab, rules.classes[0], "schema")]
    request = request_from_object({"document": {"text": "x"}, "questions": [QUESTION]})
    document = _document(dt.date(2024, 5, 1), dt.date(2024, 4, 28))
    assert Grounder(ValueChooser())(document, request.questions, spaces)[0] is spaces[0]
    with_comparer = Grounder(ValueChooser(), comparer=ComparisonChooser())
    assert isinstance(with_comparer(document, request.questions, spaces)[0], GroundedSpace)
    assert with_comparer("No values are written here.", request.questions, spaces)[0] is spaces[0]


def test_reworded_copies_of_a_question_keep_its_answer_sides_and_gate_and_read_their_own_words():
    grounder = Grounder(ValueChooser())
    lines = _lines(2, seed=3, named=True)
    plain = comparison_examples(lines, grounder.embedder)
    copied = comparison_examples(lines, grounder.embedder, variants=2, seed=1, reword_documents=True)
    assert len(copied) == 3 * len(plain)
    for i, example in enumerate(plain):
        first, *copies = copied[3 * i : 3 * i + 3]
        assert torch.equal(first.question, example.question) and torch.equal(first.mentions, example.mentions)
        for copy in copies:
            assert (copy.answer, copy.question_id, copy.is_comparison) == (example.answer, example.question_id, example.is_comparison)
            assert (copy.left is None) == (example.left is None)
            if example.left is not None:
                assert torch.equal(copy.left, example.left) and torch.equal(copy.right, example.right)
            assert copy.table is first.table
        assert not torch.equal(copies[0].question, example.question)  # words were left out of the question
        assert not torch.equal(copies[0].mentions, example.mentions)  # and its mentions read in a reworded document
