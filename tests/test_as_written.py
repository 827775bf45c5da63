"""Values asked as written: generated training documents asked for the dates, amounts and counts they state."""

from __future__ import annotations

import msgspec
import pytest

from decision_engine.cli import main
from decision_engine.datasets.as_written import as_written_groups, as_written_line, written_in
from decision_engine.datasets.domains import ALL
from decision_engine.datasets.linked_groups import generate_groups, reworded_cases
from decision_engine.grounding.mentions import find_mentions
from decision_engine.grounding.slot_candidates import slot_candidates
from decision_engine.training.value_choice import gold_value
from decision_engine.types import AnswerSchema


@pytest.mark.parametrize(("text", "value", "written"), [
    ("Moved out on 2024-03-08.", "2024-03-08", True),
    ("Moved out on 8 March 2024.", "2024-03-08", True),
    ("Moved out on 18 March 2024.", "2024-03-08", False),
    ("Moved out on 2024-03-18.", "2024-03-01", False),
    ("A deposit of $1,450 was paid.", 1450, True),
    ("A deposit of 1450 was paid.", 1450, True),
    ("A deposit of $11,450 was paid.", 1450, False),
    ("A deposit of $1,450.50 was paid.", 1450, False),
    ("Ref 14500.", 1450, False),
    ("Tender with 3 bids, budget 30,000.", 3, True),
    ("Budget 30,000.", 30, False),
])
def test_written_in_finds_a_whole_mention_only(text, value, written):
    assert written_in(text, value) is written


def test_every_domain_asks_values_as_written():
    for index, domain in enumerate(ALL):
        _, _, case, _ = reworded_cases("train", 0, index, ())
        assert case.as_written, domain.name
    asked = {line["domain"] for line in as_written_groups(40, seed=3)}
    assert asked == {domain.name for domain in ALL}


def test_each_question_is_answered_by_a_copy_of_a_mention_in_its_document():
    lines = as_written_groups(64, seed=5)
    assert len(lines) >= 60
    for line in lines:
        assert 1 <= len(line["questions"]) <= 3 and set(line["labels"]) == {q["id"] for q in line["questions"]}
        mentions = find_mentions(line["document"]["text"])
        for q in line["questions"]:
            schema = msgspec.convert(q["schema"], AnswerSchema)
            gold = gold_value(schema, line["labels"][q["id"]])
            assert written_in(line["document"]["text"], line["labels"][q["id"]]), q["text"]
            copies = [c for c in slot_candidates(schema, mentions) if c.operation == "copy" and c.value == gold]
            assert copies, (q["text"], gold)


def test_a_line_reads_the_document_of_the_same_generated_training_group():
    group = generate_groups("train", 3, seed=9)[2]
    line = as_written_line(9, 2)
    assert line["document"]["text"] == group["document"]["text"]
    assert not set(line["labels"]) & set(group["labels"])  # never one of the domain's own questions


def test_asking_as_written_leaves_the_generated_groups_as_they_were():
    before = generate_groups("train", 4, seed=2)
    as_written_groups(4, seed=2)
    assert generate_groups("train", 4, seed=2) == before
    assert all("as_written" not in line for line in before)


def test_the_same_arguments_give_the_same_lines_and_a_negative_count_is_refused():
    assert as_written_groups(5, seed=1) == as_written_groups(5, seed=1)
    with pytest.raises(ValueError, match="count"):
        as_written_groups(-1)


def test_fit_chooser_refuses_a_negative_number_of_groups_asked_as_written(tmp_path, capsys):
    assert main(["fit-chooser", "--out", str(tmp_path / "out"), "--as-written", "-1", "--groups", "1"]) == 2
    assert "--as-written" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_values_asked_as_written_train_the_chooser_beside_the_generated_groups():
    from decision_engine.reader.value_chooser import ValueChooser
    from decision_engine.training.value_choice import fit_value_chooser

    alone = fit_value_chooser(ValueChooser(), groups=2, epochs=1, seed=0, log=lambda _: None)
    asked = fit_value_chooser(ValueChooser(), groups=2, epochs=1, seed=0, log=lambda _: None, as_written=2)
    assert asked["as_written"] == 2 and "as_written" not in alone
    assert asked["examples"] >= alone["examples"] + 2
