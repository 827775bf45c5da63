"""Grounded slots asked together weigh what the group's other questions answer."""

from __future__ import annotations

import datetime as dt

import pytest
import torch

from decision_engine.decoding.grounded_space import GroundedSpace
from decision_engine.decoding.slot_space import build_space
from decision_engine.grounding.candidates import OPERATIONS
from decision_engine.grounding.grounder import Grounder
from decision_engine.grounding.mentions import find_mentions
from decision_engine.grounding.siblings import answer_mass, group_sibling_features, sibling_features, value_key
from decision_engine.grounding.slot_candidates import slot_candidates
from decision_engine.reader.chooser_ensemble import value_chooser
from decision_engine.reader.value_chooser import ValueChooser
from decision_engine.rules import RuleSet
from decision_engine.training.sibling_fit import sibling_accuracy, sibling_examples, train_sibling_weights
from decision_engine.types import AnswerSchema
from decision_engine.validation import request_from_object

DOCUMENT = (
    "Tenancy record.\n"
    "The deposit of $1,450 was paid on 8 March 2024.\n"
    "The rent is 900 a month, and notice takes 30 days.\n"
    "The tenant gave notice on 2 May 2024."
)
AMOUNT = {"type": "integer", "minimum": 0, "maximum": 100000}
DAY = {"type": "string", "format": "date"}


def test_the_mass_of_a_value_is_the_most_any_one_other_slot_gives_it():
    mass = answer_mass([([1450, 900], torch.tensor([0.75, 0.25])), ([900, 30], torch.tensor([0.5, 0.125]))])
    assert mass == {value_key(1450): 0.75, value_key(900): 0.5, value_key(30): 0.125}
    assert value_key(30) != value_key(dt.date(2024, 3, 8))  # a count is not a date


def test_sibling_features_read_the_mass_at_a_candidates_value_and_operands():
    mentions = find_mentions(DOCUMENT)
    candidates = slot_candidates(AnswerSchema(type="string", format="date"), mentions)
    may = dt.date(2024, 5, 2)
    mass = {value_key(may): 0.75, value_key(30): 0.5}
    rows = {c.describe(): row for c, row in zip(candidates, sibling_features(candidates, mentions, mass).tolist())}
    assert rows["copy 2024-05-02"] == [0.75, 0.75, 0.0]  # its value and its one operand
    assert rows["2024-05-02 + 30 days"] == [0.0, 0.75, 0.5]  # the date it counts from, then the duration
    assert rows["2024-03-08 + 30 days"] == [0.0, 0.0, 0.5]
    assert sibling_features([], mentions, mass).shape == (0, 3)


def test_each_slot_reads_only_the_answers_of_slots_surer_of_theirs():
    mentions = find_mentions(DOCUMENT)
    candidates = slot_candidates(AnswerSchema(**AMOUNT), mentions)
    values = [c.value for c in candidates]
    sure, unsure = torch.zeros(len(candidates)), torch.full((len(candidates),), 1 / len(candidates))
    sure[values.index(1450)] = 1.0
    first, second = group_sibling_features([(candidates, mentions, unsure), (candidates, mentions, sure)])
    assert second.abs().sum() == 0  # the surest slot weighs nothing
    assert first[values.index(1450), 0] == 1.0 and first[:, 0].sum() == 1.0  # the other reads the surest one
    tied = group_sibling_features([(candidates, mentions, sure), (candidates, mentions, sure)])
    assert tied[0].abs().sum() == 0 and tied[1][values.index(1450), 0] == 1.0  # on a tie the earlier one goes first


def test_zero_sibling_weights_score_as_the_chooser_alone():
    torch.manual_seed(0)
    chooser = ValueChooser().eval()
    inputs, siblings = _inputs(chooser)
    with torch.no_grad():
        alone = chooser(*inputs)
        assert torch.equal(chooser(*inputs, siblings=siblings), alone)
        chooser.sibling[OPERATIONS.index("copy"), 0] = -5.0
        weighed = chooser(*inputs, siblings=siblings)
    copies = inputs[2][0] == OPERATIONS.index("copy")
    changed = ~torch.isclose(weighed[0, :-1], alone[0, :-1])
    assert changed.any() and not changed[~copies].any()  # only copies, the operation weighed


def _inputs(chooser):
    grounder = Grounder(chooser)
    mentions = find_mentions(DOCUMENT)
    candidates = slot_candidates(AnswerSchema(**AMOUNT), mentions)
    from decision_engine.reader.value_chooser import CandidateTable, mention_features

    table = CandidateTable.of(candidates, mentions)
    features = mention_features(grounder.embedder, DOCUMENT, mentions)
    features = torch.cat([features, torch.zeros(len(mentions), 2)], dim=1)
    question = grounder.embedder.embed_questions(["How much was the deposit?"])[0]
    inputs = (question[None], features[None], table.operations[None], table.operands[None], table.features[None],
              torch.ones((1, len(candidates)), dtype=torch.bool))
    mass = {value_key(1450): 0.9}
    return inputs, sibling_features(candidates, mentions, mass)[None]


def _grounded(grounder, vocab, joint):
    request = request_from_object({"document": {"text": DOCUMENT}, "questions": [
        {"id": "deposit", "text": "How much was the deposit?", "schema": AMOUNT},
        {"id": "held", "text": "How much of the deposit is held?", "schema": AMOUNT},
    ]})
    rules = RuleSet.compile([q.schema for q in request.questions], ["deposit", "held"], [])
    spaces = [build_space(q.schema, vocab, rules.classes[i], "schema") for i, q in enumerate(request.questions)]
    return grounder(DOCUMENT, request.questions, spaces, joint=joint)


@pytest.mark.parametrize("members", [1, 2])
def test_only_a_joint_request_weighs_its_siblings(vocab, members):
    torch.manual_seed(0)
    chooser = value_chooser(members).eval()
    grounder = Grounder(chooser)
    alone = _grounded(grounder, vocab, joint=True)  # sibling weights zero: nothing to weigh
    independent = _grounded(grounder, vocab, joint=False)
    with torch.no_grad():
        for member in getattr(chooser, "members", [chooser]):
            member.sibling[OPERATIONS.index("copy"), 0] = -20.0  # never copy what another question answers
    joint = _grounded(grounder, vocab, joint=True)
    apart = _grounded(grounder, vocab, joint=False)
    assert all(isinstance(s, GroundedSpace) for s in alone + joint)
    for before, kept in zip(alone, apart):
        assert torch.equal(kept.choice_logits, before.choice_logits)  # asked alone: as before
    changed = [not torch.equal(after.choice_logits, before.choice_logits) for before, after in zip(alone, joint)]
    assert sorted(changed) == [False, True]  # the surer slot as it was, the other weighing its answer
    assert all(torch.equal(a.choice_logits, b.choice_logits) for a, b in zip(alone, independent))


def test_fitting_the_sibling_weights_changes_nothing_else():
    lines = [{
        "document": {"text": DOCUMENT},
        "questions": [
            {"id": "deposit", "text": "How much was the deposit?", "schema": AMOUNT},
            {"id": "rent", "text": "What is the monthly rent?", "schema": AMOUNT},
            {"id": "notice_end", "text": "On what date does the notice period end?", "schema": DAY},
        ],
        "labels": {"deposit": 1450, "rent": 900, "notice_end": "2024-06-01"},
    }] * 4
    torch.manual_seed(0)
    chooser = ValueChooser().eval()
    grounder = Grounder(chooser)
    examples = sibling_examples(lines, chooser, grounder.embedder)
    assert len(examples) == 12 and all(e.siblings.shape == (len(e.example.table.operations), 3) for e in examples)
    kept = {k: v.clone() for k, v in chooser.state_dict().items() if k != "sibling"}
    before = sibling_accuracy(chooser, examples)
    fitted = train_sibling_weights(chooser, examples, epochs=20, log=lambda _: None)
    assert fitted["before"] == before and fitted["after"] >= before
    assert torch.count_nonzero(chooser.sibling) > 0
    assert all(torch.equal(chooser.state_dict()[k], v) for k, v in kept.items())
    assert not any(p.requires_grad for p in chooser.parameters())


def test_a_chooser_saved_before_sibling_weights_existed_loads_without_any():
    from decision_engine.model.loader import _fit_part_state

    saved = {f"value_chooser.{k}": v for k, v in ValueChooser().state_dict().items() if k != "sibling"}
    state = {"embed.position.weight": torch.zeros(4, 8), **saved}
    _fit_part_state(state, "value_chooser", ValueChooser, False, None, "fit-chooser")
    assert torch.count_nonzero(state["value_chooser.sibling"]) == 0
    assert torch.equal(state["value_chooser.key.weight"], saved["value_chooser.key.weight"])


def test_a_compared_boolean_weighs_what_the_grounded_slots_answer_only_when_asked_jointly(vocab):
    from decision_engine.reader.comparison_chooser import ComparisonChooser

    torch.manual_seed(0)
    comparer = ComparisonChooser().eval()
    grounder = Grounder(ValueChooser().eval(), comparer=comparer)
    request = request_from_object({"document": {"text": DOCUMENT}, "questions": [
        {"id": "notice_end", "text": "On what date does the notice period end?", "schema": DAY},
        {"id": "in_time", "text": "Did the tenant leave before the notice period ended?", "schema": {"type": "boolean"}},
    ]})
    rules = RuleSet.compile([q.schema for q in request.questions], ["notice_end", "in_time"], [])
    spaces = [build_space(q.schema, vocab, rules.classes[i], "schema") for i, q in enumerate(request.questions)]

    def compared(joint):
        space = grounder(DOCUMENT, request.questions, spaces, joint=joint)[1]
        assert isinstance(space, GroundedSpace)
        return space.choice_logits

    before = compared(True)
    with torch.no_grad():
        comparer.right.sibling[:, 0] = 20.0  # the right side takes what the grounded slot answers
    assert torch.equal(compared(False), before)
    assert not torch.equal(compared(True), before)


def test_fit_siblings_refuses_bad_arguments_in_one_line_and_fits_a_checkpoint(tmp_path, capsys):
    import json

    from decision_engine.cli import main
    from decision_engine.model.loader import load_checkpoint

    out = tmp_path / "out"
    assert main(["fit-siblings", "--out", str(out), "--groups", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--groups and --epochs must be at least 1" in err[0]
    assert main(["fit-siblings", "--model", str(tmp_path / "nothing"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a checkpoint" in err[0] and "Traceback" not in err[0]
    assert main(["fit-siblings", "--out", str(out), "--groups", "3", "--epochs", "1"]) == 0
    fitted = json.loads((out / "config.json").read_text())["training"]["value_chooser_siblings"]
    assert fitted["groups"] == 3 and fitted["epochs"] == 1 and "comparison_chooser" not in fitted
    model, _ = load_checkpoint(out)
    assert any(torch.count_nonzero(p) for n, p in model.value_chooser.named_parameters() if n.endswith("sibling"))
    assert not any(torch.count_nonzero(p) for n, p in model.comparison_chooser.named_parameters() if n.endswith("sibling"))


def test_a_slots_mass_on_a_value_sums_the_ways_it_reaches_it():
    mass = answer_mass([([30, 30, 14], torch.tensor([0.25, 0.5, 0.25])), ([14], torch.tensor([0.5]))])
    assert mass == {value_key(30): 0.75, value_key(14): 0.5}
