"""The unit an integer question counts in, and the candidates that cannot count in it."""

from __future__ import annotations

import pytest

from decision_engine.grounding.asked_unit import asked_unit, asks_for_percentage, cannot_count_in
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


def test_a_count_of_listed_percentages_is_no_count_of_days():
    mentions = find_mentions("Threshold 25%.\nA 30%; B 12%; C 41%.\nNotice of 30 days was given.")
    candidates = integer_candidates(mentions, 0, 100, derivations=3)
    counts = [c.operation == "count_at_least" for c in candidates]
    assert any(counts)
    for unit, expected in (("days", True), (None, False)):
        excluded = cannot_count_in(candidates, mentions, unit)
        assert all(x is expected for x, is_count in zip(excluded, counts) if is_count)


@pytest.mark.parametrize("question, asks", [
    ("What ownership percentage makes a person a beneficial owner?", True),
    ("Which shareholding threshold, in percent, applies to this customer?", True),
    ("What is the late-payment interest rate per cent?", True),
    ("How many owners hold 10 per cent or more?", False),  # a count, whatever it names
    ("How many beneficial owners must be identified?", False),
    ("What is the percent_of step?", False),  # not the word
])
def test_a_question_asks_for_a_percentage(question, asks):
    assert asks_for_percentage(question) is asks


def test_a_question_asking_for_a_percentage_is_never_answered_by_a_count():
    mentions = find_mentions("Threshold 25%.\nA 30%; B 12%; C 41%.")
    candidates = integer_candidates(mentions, 0, 100, derivations=3)
    excluded = cannot_count_in(candidates, mentions, None, percentage=True)
    assert [x for x in excluded] == [c.operation == "count_at_least" for c in candidates] and any(excluded)
