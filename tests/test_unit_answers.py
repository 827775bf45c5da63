"""An integer slot weighs whether each candidate is in the unit its question asks for."""

from __future__ import annotations

import pytest
import torch

from decision_engine.decoding.grounded_space import GroundedSpace
from decision_engine.decoding.slot_space import build_space
from decision_engine.grounding.candidates import OPERATIONS
from decision_engine.grounding.grounder import Grounder
from decision_engine.grounding.mentions import find_mentions
from decision_engine.grounding.slot_candidates import slot_candidates
from decision_engine.grounding.units import asked_unit, candidate_unit, unit_features
from decision_engine.reader.value_chooser import ValueChooser
from decision_engine.rules import RuleSet
from decision_engine.training.unit_fit import _unit_loss, unit_accuracy, unit_examples
from decision_engine.training.sibling_fit import train_sibling_weights
from decision_engine.types import AnswerSchema
from decision_engine.validation import request_from_object

DOCUMENT = (
    "Non-solicitation.\n"
    "For 12 months from the Effective Date the Investor shall not solicit any employee.\n"
    "The agreement expires on the second anniversary of 3 September 2024.\n"
    "The Investor holds 25% of the shares and was notified on 10 October 2024."
)
COUNT = {"type": "integer", "minimum": 0, "maximum": 1000}
MONTHS = "For how many months does the non-solicitation restriction apply?"


@pytest.mark.parametrize(("question", "unit"), [
    ("For how many months does the restriction apply?", "months"),
    ("How many days' notice was given?", "days"),
    ("What notice period, in days, applied?", "days"),
    ("How long, in calendar weeks, is the cooling-off period?", "weeks"),
    ("For how many years do the obligations survive?", "years"),
    ("Within how many hours must the authority be told?", "hours"),
    ("What percentage of the shares makes an owner?", "percent"),
    ("From what stake, in percent, does an owner count?", "percent"),
    ("What share (%) is the threshold?", "percent"),
    ("How much may the landlord keep?", None),
    ("Daylight saving is irrelevant here: how many owners are there?", None),  # "Daylight" names no day
])
def test_the_unit_a_question_asks_for_is_the_first_unit_word_it_names(question, unit):
    assert asked_unit(question) == unit


def test_a_candidates_unit_is_its_first_operands_or_days_between_two_dates():
    mentions = find_mentions(DOCUMENT)
    units = {c.describe(): candidate_unit(c, mentions) for c in slot_candidates(AnswerSchema(**COUNT), mentions)}
    assert units["copy 12 months"] == "months"
    assert units["copy 2 years"] == "years"  # "second anniversary"
    assert units["copy 25%"] == "percent"
    assert units["days from 2024-09-03 to 2024-10-10"] == "days"
    assert units["0 (nothing written to count)"] is None


def test_unit_features_mark_the_asked_unit_and_any_other_and_nothing_for_dates_or_unnamed_units():
    mentions = find_mentions(DOCUMENT)
    schema = AnswerSchema(**COUNT)
    candidates = slot_candidates(schema, mentions)
    rows = {c.describe(): row for c, row in zip(candidates, unit_features(MONTHS, schema, candidates, mentions).tolist())}
    assert rows["copy 12 months"] == [1.0, 0.0]
    assert rows["copy 2 years"] == [0.0, 1.0]
    assert rows["copy 25%"] == [0.0, 1.0]
    assert rows["0 (nothing written to count)"] == [0.0, 0.0]
    assert unit_features("How many owners are there?", schema, candidates, mentions).abs().sum() == 0
    day = AnswerSchema(type="string", format="date")
    dates = slot_candidates(day, mentions)
    assert unit_features("On what date, counting 30 days, does it end?", day, dates, mentions).abs().sum() == 0


def _grounded(grounder, vocab):
    request = request_from_object({"document": {"text": DOCUMENT}, "questions": [
        {"id": "months", "text": MONTHS, "schema": COUNT},
    ]})
    rules = RuleSet.compile([q.schema for q in request.questions], ["months"], [])
    spaces = [build_space(request.questions[0].schema, vocab, rules.classes[0], "schema")]
    space = grounder(DOCUMENT, request.questions, spaces)[0]
    assert isinstance(space, GroundedSpace)
    return space


def test_zero_unit_weights_score_as_before_and_fitted_ones_move_only_candidates_with_a_unit(vocab):
    torch.manual_seed(0)
    chooser = ValueChooser().eval()
    grounder = Grounder(chooser)
    before = _grounded(grounder, vocab)
    mentions = find_mentions(DOCUMENT)
    candidates = slot_candidates(AnswerSchema(**COUNT), mentions)
    with torch.no_grad():
        plain = chooser(*_bare_inputs(grounder, candidates, mentions))[0]
        chooser.unit[:, 0] = 10.0  # in the asked unit
        chooser.unit[:, 1] = -10.0  # in another
    assert torch.equal(before.choice_logits, plain)  # unfitted: exactly the chooser without units
    after = _grounded(grounder, vocab)
    values = after.values
    best = int(after.choice_logits[:-1].argmax())
    assert values[best] == 12
    united = [candidate_unit(c, mentions) is not None for c in candidates]
    moved = ~torch.isclose(after.choice_logits[:-1], before.choice_logits[:-1])
    assert moved.tolist() == united


def _bare_inputs(grounder, candidates, mentions):
    from decision_engine.reader.value_chooser import CandidateTable, mention_features

    table = CandidateTable.of(candidates, mentions)
    features = mention_features(grounder.embedder, DOCUMENT, mentions)
    features = torch.cat([features, torch.zeros(len(mentions), 2)], dim=1)
    question = grounder.embedder.embed_questions([MONTHS])[0]
    return (question[None], features[None], table.operations[None], table.operands[None], table.features[None],
            torch.ones((1, len(candidates)), dtype=torch.bool))


def test_fitting_the_unit_weights_learns_the_asked_unit_and_changes_nothing_else():
    lines = [{
        "document": {"text": DOCUMENT},
        "questions": [
            {"id": "months", "text": MONTHS, "schema": COUNT},
            {"id": "years", "text": "For how many years does the agreement run?", "schema": COUNT},
        ],
        "labels": {"months": 12, "years": 2},
    }] * 4
    torch.manual_seed(0)
    chooser = ValueChooser().eval()
    examples = unit_examples(lines, Grounder(chooser).embedder)
    assert len(examples) == 8 and all(e.units.shape == (len(e.example.table.operations), 2) for e in examples)
    kept = {k: v.clone() for k, v in chooser.state_dict().items() if k != "unit"}
    fitted = train_sibling_weights(
        chooser, examples, epochs=30, log=lambda _: None, loss_of=_unit_loss, accuracy=unit_accuracy, named="unit"
    )
    assert fitted["after"] == 1.0 and fitted["after"] >= fitted["before"]
    copy = OPERATIONS.index("copy")
    assert chooser.unit[copy, 0] > 0 > chooser.unit[copy, 1]  # the asked unit gains, another loses
    assert all(torch.equal(chooser.state_dict()[k], v) for k, v in kept.items())


def test_a_chooser_saved_before_unit_weights_existed_loads_without_any():
    from decision_engine.model.loader import _fit_part_state

    saved = {f"value_chooser.{k}": v for k, v in ValueChooser().state_dict().items() if k != "unit"}
    state = {"embed.position.weight": torch.zeros(4, 8), **saved}
    _fit_part_state(state, "value_chooser", ValueChooser, False, None, "fit-chooser")
    assert torch.count_nonzero(state["value_chooser.unit"]) == 0


def test_fit_units_refuses_bad_arguments_in_one_line_and_fits_a_checkpoint(tmp_path, capsys):
    import json

    from decision_engine.cli import main
    from decision_engine.model.loader import load_checkpoint

    out = tmp_path / "out"
    assert main(["fit-units", "--out", str(out), "--epochs", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--groups and --epochs must be at least 1" in err[0]
    assert main(["fit-units", "--out", str(out), "--groups", "3", "--epochs", "1"]) == 0
    fitted = json.loads((out / "config.json").read_text())["training"]["value_chooser_units"]
    assert fitted["groups"] == 3 and fitted["epochs"] == 1
    model, _ = load_checkpoint(out)
    assert any(torch.count_nonzero(p) for n, p in model.value_chooser.named_parameters() if n.endswith("unit"))
