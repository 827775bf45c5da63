"""Value drills: generic dated-act files whose integer and date answers a grounded slot can reach."""

from __future__ import annotations

import datetime as dt
import random

import msgspec
import pytest

from decision_engine.cli import main
from decision_engine.datasets.value_drills import SHARES, choose_questions, drill_group, drill_groups
from decision_engine.grounding.mentions import find_mentions
from decision_engine.grounding.slot_candidates import slot_candidates
from decision_engine.training.value_choice import gold_value
from decision_engine.types import AnswerSchema


def _reached(line: dict) -> list[tuple[str, list]]:
    """(question text, the candidates whose value is its gold answer) per question of a drill line."""
    mentions = find_mentions(line["document"]["text"])
    out = []
    for q in line["questions"]:
        schema = msgspec.convert(q["schema"], AnswerSchema)
        gold = gold_value(schema, line["labels"][q["id"]])
        hits = [c for c in slot_candidates(schema, mentions) if type(c.value) is type(gold) and c.value == gold]
        out.append((q["text"], hits))
    return out


def test_the_same_arguments_give_the_same_drills_and_others_differ():
    assert drill_groups(3, seed=4) == drill_groups(3, seed=4)
    assert drill_group(4, 0) != drill_group(5, 0)
    assert [line["id"] for line in drill_groups(3, seed=4)] == ["drill-4-0", "drill-4-1", "drill-4-2"]


def test_a_drill_asks_up_to_eight_labelled_integer_or_date_questions():
    for line in drill_groups(20, seed=1):
        ids = [q["id"] for q in line["questions"]]
        assert 5 <= len(ids) <= 8 and len(set(ids)) == len(ids)
        assert set(line["labels"]) == set(ids)
        assert all(q["schema"]["type"] == "integer" or q["schema"].get("format") == "date" for q in line["questions"])


def test_when_and_deadline_answers_are_reached_by_the_step_the_question_asks_for():
    asked = {"copy": 0, "step": 0}
    for line in drill_groups(40, seed=2):
        for text, hits in _reached(line):
            if text.startswith(("On what date", "When did", "On which day", "What was the date")):
                assert any(c.operation == "copy" for c in hits), text
                asked["copy"] += 1
            elif text.startswith(("By what date", "What is the last day", "What was the deadline")):
                assert any(c.operation in ("date_plus", "date_minus") for c in hits), text
                asked["step"] += 1
    assert asked["copy"] >= 40 and asked["step"] >= 40


def test_nearly_every_answer_is_reachable_from_the_documents_mentions():
    reached = [bool(hits) for line in drill_groups(60, seed=3) for _, hits in _reached(line)]
    # a few day counts between late acts fall past the slot's table of candidates, as in real documents
    assert sum(reached) / len(reached) >= 0.97


def test_a_when_answer_is_written_in_the_document():
    line = drill_group(0, 7)
    text = line["document"]["text"]
    months = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")
    for q in line["questions"]:
        if q["text"].startswith(("On what date", "When did", "On which day", "What was the date")):
            day = dt.date.fromisoformat(line["labels"][q["id"]])
            forms = (day.isoformat(), f"{day.day} {months[day.month - 1]} {day.year}",
                     f"{months[day.month - 1]} {day.day}, {day.year}")
            assert any(form in text for form in forms)


def test_questions_are_chosen_by_kind_first_then_from_the_rest():
    questions = [(kind, f"{kind} {i}", {}, i) for kind in ("when", "deadline", "interval", "amount") for i in range(5)]
    chosen = choose_questions(questions, random.Random(0))
    assert len(chosen) == 8
    for kind, share in SHARES.items():
        assert sum(q[0] == kind for q in chosen) >= share
    few = [q for q in questions if q[0] == "amount"][:3]
    assert sorted(choose_questions(few, random.Random(0))) == sorted(few)


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="count"):
        drill_groups(-1)


def test_fit_chooser_refuses_a_negative_number_of_drills(tmp_path, capsys):
    assert main(["fit-chooser", "--out", str(tmp_path / "out"), "--drills", "-1", "--groups", "1"]) == 2
    assert "--drills" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_drills_train_the_chooser_beside_the_generated_groups():
    from decision_engine.reader.value_chooser import ValueChooser
    from decision_engine.training.value_choice import fit_value_chooser

    seen = []
    alone = fit_value_chooser(ValueChooser(), groups=1, epochs=1, seed=0, log=seen.append)
    drilled = fit_value_chooser(ValueChooser(), groups=1, epochs=1, seed=0, log=seen.append, drills=2)
    assert drilled["drills"] == 2 and "drills" not in alone
    assert drilled["examples"] >= alone["examples"] + 10  # a drill asks at least five questions
    assert any("and 2 other lines" in message for message in seen)
