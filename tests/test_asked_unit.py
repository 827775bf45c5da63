"""The unit an integer question counts in, and the candidates that cannot count in it."""

from __future__ import annotations

import pytest

from decision_engine.grounding.asked_unit import asked_unit, cannot_count_in
from decision_engine.grounding.candidates import integer_candidates
from decision_engine.grounding.mentions import find_mentions

DOCUMENT = (
    "Made on 2024-09-03.\n"
    "For 12 months from that date the Investor shall not solicit employees.\n"
    "The agreement expires on the second anniversary of that date.\n"
    "On 2024-12-02 the Investor advertised on two job boards; notice takes 3 weeks."
)


@pytest.mark.parametrize("question, unit", [
    ("For how many months does the restriction apply?", "months"),
    ("How many days' notice did the tenant give?", "days"),
    ("How many business days does the processor have?", "days"),
    ("How long, in weeks, is the notice?", "weeks"),
    ("For how many years does confidentiality survive?", "years"),
    ("How much was the deposit?", None),
    ("How many days are there in the first month?", None),  # two units: any may answer
    ("What is the Monday rate?", None),  # a word that holds "day" is not a unit
    ("In which year was the company incorporated?", None),  # which year, not how many
    ("On what calendar day of the month is rent due?", None),
    ("How many hours after the day of awareness was the regulator told?", None),  # hours are not read
    ("How many hours passed?", None),
])
def test_a_question_names_the_unit_it_counts_in(question, unit):
    assert asked_unit(question) == unit


def _ruled_out(unit):
    mentions = find_mentions(DOCUMENT)
    candidates = integer_candidates(mentions, 0, 1000, derivations=3)
    out = {}
    for c, excluded in zip(candidates, cannot_count_in(candidates, mentions, unit)):
        out.setdefault(c.describe(), excluded)
    return out


def test_a_count_of_months_copies_only_a_duration_in_months():
    months = _ruled_out("months")
    assert months["copy 12 months"] is False
    assert months["copy 2 years"] is True  # "the second anniversary"
    assert months["copy 2"] is True  # "two job boards": a bare number is no count of months
    assert months["copy 3 weeks"] is True
    assert months["days from 2024-09-03 to 2024-12-02"] is True
    assert months["0 (nothing written to count)"] is False


def test_a_count_of_days_may_be_the_days_between_two_dates():
    days = _ruled_out("days")
    assert days["days from 2024-09-03 to 2024-12-02"] is False
    assert days["copy 12 months"] is True


def test_without_a_unit_nothing_is_ruled_out():
    assert not any(_ruled_out(None).values())
