"""Paraphrase drills: a document's own clauses and notes asked in another of the generator's phrasings."""

from __future__ import annotations

import collections
import random

import pytest

from decision_engine.datasets.hypothesis_drills import ABSENT, CONTRADICTION, ENTAILMENT, FRAMED_SHARE
from decision_engine.datasets.domains import ALL
from decision_engine.datasets.domains.statements import STATEMENTS
from decision_engine.datasets.linked_groups import HELD_OUT, generate_groups, reworded_cases
from decision_engine.datasets.paraphrase_drills import SEED, VARIANTS, answer_said, paraphrase_drills


def _bare(question: str) -> str:
    """The hypothesis without the "Hypothesis: ... Does the document entail ...?" frame."""
    if question.startswith("Hypothesis: "):
        return question[len("Hypothesis: "):].rsplit(". Does the ", 1)[0]
    return question.rstrip(".")


def test_a_group_rebuilt_in_another_phrasing_keeps_its_facts_and_changes_its_words():
    line = generate_groups("train", 4, 7)[3]
    domain, text, case, reworded = reworded_cases("train", 7, 3, VARIANTS)
    assert text == line["document"]["text"] and domain == line["domain"]
    assert sorted(reworded) == sorted(VARIANTS) and HELD_OUT not in reworded
    own = [v for v, other in reworded.items() if other.clauses == case.clauses]
    assert len(own) == 1  # the document's own phrasing is among them, the others differ
    for variant, other in reworded.items():
        assert other.labels == case.labels
        if variant != own[0]:
            assert [t for _, t in other.clauses] != [t for _, t in case.clauses]


def test_drills_take_turns_over_the_three_verdicts_and_repeat_with_their_seed():
    lines = paraphrase_drills(60, seed=3)
    assert [line["labels"]["drill"] for line in lines[:3]] == [ENTAILMENT, CONTRADICTION, ABSENT]
    counts = collections.Counter(line["labels"]["drill"] for line in lines)
    assert counts == {ENTAILMENT: 20, CONTRADICTION: 20, ABSENT: 20}
    assert paraphrase_drills(60, seed=3) == lines
    assert paraphrase_drills(60, seed=4) != lines
    framed = sum(line["questions"][0]["text"].startswith("Hypothesis: ") for line in lines) / len(lines)
    assert abs(framed - FRAMED_SHARE) < 0.25


def test_an_entailed_drill_says_in_other_words_what_its_document_says():
    lines = [line for line in paraphrase_drills(90, seed=0) if line["labels"]["drill"] == ENTAILMENT]
    copied = [line for line in lines if _bare(line["questions"][0]["text"]) in line["document"]["text"]]
    # a few short sentences read the same in two phrasings; most do not
    assert len(copied) < len(lines) / 3


def test_drills_read_only_training_documents():
    lines = paraphrase_drills(30, seed=0)
    trained = {line["document"]["text"] for line in generate_groups("train", 30 * 20, SEED)}
    assert all(line["document"]["text"] in trained for line in lines)


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="count"):
        paraphrase_drills(-1)


def test_a_drill_not_mentioned_asks_what_its_document_does_not_say():
    lines = [line for line in paraphrase_drills(90, seed=1) if line["labels"]["drill"] == ABSENT]
    assert lines and all(_bare(line["questions"][0]["text"]) not in line["document"]["text"] for line in lines)


def _a_case_of(domain_name: str):
    for index in range(40):
        name, _, case, _ = reworded_cases("train", 5, index, ())
        if name == domain_name:
            return case
    raise AssertionError(f"no {domain_name} case among the first 40 groups")


def test_every_yes_or_no_question_is_said_both_ways_with_the_names_its_cases_have():
    for domain in ALL:
        booleans = {q for q, spec in domain.questions.items() if spec.schema.get("type") == "boolean"}
        assert set(STATEMENTS[domain.name]) == booleans, domain.name
        slots = _a_case_of(domain.name).slots
        for said in STATEMENTS[domain.name].values():
            for text in said.yes + said.no:
                assert text.format_map(slots).endswith(".")
            assert set(said.yes).isdisjoint(said.no)


def test_an_answer_is_said_as_what_is_true_of_its_case_or_as_what_is_false():
    rng = random.Random(0)
    for domain in ALL:
        case = _a_case_of(domain.name)
        for _ in range(10):
            for true in (True, False):
                text = answer_said(rng, domain.name, case, true)
                question, = [q for q, s in STATEMENTS[domain.name].items()
                             if text in {f.format_map(case.slots) for f in s.yes + s.no}]
                said = STATEMENTS[domain.name][question]
                forms = said.yes if case.labels[question] == true else said.no
                assert text in {f.format_map(case.slots) for f in forms}
