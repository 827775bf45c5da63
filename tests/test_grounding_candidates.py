"""Candidate values for integer and date slots: copies and one-step arithmetic over mentions."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decision_engine.grounding.candidates import (
    MAX_COUNTED,
    percent_lists,
    MAX_CANDIDATES,
    Candidate,
    covers,
    date_candidates,
    integer_candidates,
    list_runs,
)
from decision_engine.grounding.date_math import add_business_days, shift
from decision_engine.grounding.mentions import Mention, find_mentions

D = dt.date


def _derivation(candidates: list[Candidate], value) -> str | None:
    return next((c.describe() for c in candidates if c.value == value), None)


@pytest.mark.parametrize(
    ("text", "expected", "derivation"),
    [
        ("from 2024-03-08 for 30 days", D(2024, 4, 7), "2024-03-08 + 30 days"),
        ("from 2024-03-08 for two weeks", D(2024, 3, 22), "2024-03-08 + 2 weeks"),
        ("from 30 November 2023 for 3 months", D(2024, 2, 29), "2023-11-30 + 3 months"),  # clamped, leap year
        ("from 31 January 2023 for one (1) month", D(2023, 2, 28), "2023-01-31 + 1 month"),
        ("from February 29, 2024 for one year", D(2025, 2, 28), "2024-02-29 + 1 year"),
        ("from 2024-03-08 for 10 business days", D(2024, 3, 22), "2024-03-08 + 10 business days"),  # a Friday
        ("from 2024-03-08 for 30 days", D(2024, 2, 7), "2024-03-08 - 30 days"),
        ("from 31 March 2024 for 1 month", D(2024, 2, 29), "2024-03-31 - 1 month"),
        ("from 2024-03-11 for 5 business days", D(2024, 3, 4), "2024-03-11 - 5 business days"),
    ],
    ids=["plus-30-days", "plus-2-weeks", "plus-3-months-clamp", "plus-1-month-clamp", "plus-1-year-from-feb-29",
         "plus-10-business-days", "minus-30-days", "minus-1-month-clamp", "minus-5-business-days"],
)  # fmt: skip
def test_date_arithmetic(text, expected, derivation):
    candidates = date_candidates(find_mentions(text))
    assert covers(candidates, expected)
    assert _derivation(candidates, expected) == derivation


def test_business_days_skip_weekends_only():
    friday, saturday = D(2024, 3, 8), D(2024, 3, 9)
    assert add_business_days(friday, 1) == D(2024, 3, 11)
    assert add_business_days(saturday, 5) == D(2024, 3, 15)
    assert add_business_days(saturday, -1) == friday
    assert add_business_days(D(2024, 3, 11), -1) == friday
    assert shift(D(2024, 12, 23), 3, "days", business=True) == D(2024, 12, 26)  # no holidays
    assert shift(D(2024, 1, 31), 13, "months") == D(2025, 2, 28)


@pytest.mark.parametrize(
    ("text", "expected", "derivation"),
    [
        ("from 1 March 2024 to 2024-03-31", 30, "days from 2024-03-01 to 2024-03-31"),
        ("until 2024-03-31, since 1 March 2024", 30, "days from 2024-03-01 to 2024-03-31"),  # later one first
        ("1,450 units, 450 shipped", 1000, "1450 - 450"),
        ("450 shipped of 1,450 units", 1000, "1450 - 450"),
        ("12 units and 30 units", 42, "12 + 30"),
        ("fees of $100, $250 and $1,000", 1350, "100 + 250 + 1000"),
        ("fees of 1, 2, 4 and 8", 15, "1 + 2 + 4 + 8"),
        ("5% of $16,000", 800, "5% of 16000"),
        ("5% of $1,450", 73, "5% of 1450"),  # 72.5 rounds half up
        ("within thirty (30) days", 30, "copy 30 days"),
        ("30 days and 15 days", 45, "30 days + 15 days"),
    ],
    ids=["days-between", "days-between-reversed", "a-minus-b", "a-minus-b-reversed", "a-plus-b", "sum-of-3",
         "sum-of-4", "percent-of", "percent-rounds-half-up", "duration-count", "durations-add"],
)  # fmt: skip
def test_integer_arithmetic(text, expected, derivation):
    candidates = integer_candidates(find_mentions(text), 0, 10**9)
    assert covers(candidates, expected)
    assert _derivation(candidates, expected) == derivation


def test_unlike_amounts_do_not_mix():
    candidates = integer_candidates(find_mentions("30 days or two weeks or 10 business days, fee $5, rate 7%"), 0, 1000)
    assert not covers(candidates, 32)  # 30 days + 2 weeks
    assert not covers(candidates, 40)  # 30 days + 10 business days
    assert not covers(candidates, 35)  # 30 days + $5
    assert not covers(candidates, 12)  # 7% is a rate, not an amount
    assert covers(candidates, 7)  # but it can be copied


def test_two_readings_of_one_date_are_not_a_span():
    mentions = find_mentions("signed 08/03/2024")
    assert [m.ambiguous for m in mentions] == [True, True]
    assert [c.operation for c in integer_candidates(mentions, 0, 10**6)] == ["zero"]  # no days between them
    assert [c.value for c in date_candidates(mentions)] == [D(2024, 3, 8), D(2024, 8, 3)]


def test_zero_is_a_candidate_of_its_own_where_the_bounds_allow_it():
    mentions = find_mentions("Rent 1,400, deposit 2,100.")
    candidates = integer_candidates(mentions, 0, 10**6)
    assert [(c.value, c.operation, c.operands) for c in candidates[:3]] == [(1400, "copy", (0,)), (2100, "copy", (1,)), (0, "zero", ())]
    assert _derivation(candidates, 0) == "0 (nothing written to count)"
    assert not covers(integer_candidates(mentions, 1, 10**6), 0)
    assert not covers(integer_candidates(mentions, 0, 10**6, zero=False), 0)
    written = integer_candidates(find_mentions("0 days late, fee 40"), 0, 100)
    assert [c.operation for c in written if c.value == 0] == ["copy"]  # a written 0 keeps its mention


def test_a_written_list_adds_up_wherever_it_stands():
    text = (
        "Budgets 5,000 and 10,000 and 40,000; 3 quotes, 2 bids, 1 waiver, 60,000 cap, 91,000 approved.\n"
        "Award covering pumps USD 860; tyres USD 110; cleaning USD 380.\n"
        "Fee 12 and 13."
    )
    mentions = find_mentions(text)
    candidates = integer_candidates(mentions, 0, 10**6)
    assert _derivation(candidates, 1350) == "860 + 110 + 380"  # past the first 8 distinct amounts
    assert covers(candidates, 490)  # 110 + 380, two items of the list
    assert list_runs(mentions)[-1] == (len(mentions) - 2, len(mentions) - 1)  # 12 and 13
    assert all(len({mentions[k].line for k in run}) == 1 for run in list_runs(mentions))  # one line each
    assert (len(mentions) - 3, len(mentions) - 2) not in list_runs(mentions)  # 380 and 12: two lines


def test_bounds_drop_candidates():
    mentions = find_mentions("1,450 units, 450 shipped, on 2024-03-08 for 30 days")
    values = [c.value for c in integer_candidates(mentions, 100, 1500)]
    assert values == [1450, 450, 1000]  # 30 and 1900 (1450 + 450) are out of bounds
    dates = [c.value for c in date_candidates(mentions, D(2024, 3, 1), D(2024, 3, 31))]
    assert dates == [D(2024, 3, 8)]


def test_first_derivation_wins():
    mentions = find_mentions("100 and 200 and 300")
    candidates = integer_candidates(mentions, 0, 10**6)
    assert [c.describe() for c in candidates if c.value == 300] == ["copy 300"]  # not "100 + 200"
    assert len({c.value for c in candidates}) == len(candidates)


def test_order_is_copies_then_steps_by_latest_operand():
    mentions = find_mentions("5% of 16,000 and 300, from 2024-03-08 to 2024-04-08")
    candidates = integer_candidates(mentions, 0, 10**6)
    steps = ["percent_of", "add", "subtract", "percent_of", "days_between"]
    assert [c.operation for c in candidates] == ["copy"] * 3 + ["zero"] + steps
    assert candidates[4].operands == (0, 1)


def test_the_cap_keeps_a_deterministic_prefix():
    text = " ".join(f"{n**3:,} units" for n in range(2, 40)) + " and 3%"
    mentions = find_mentions(text)
    capped = integer_candidates(mentions, 0, 10**6)
    assert len(capped) == MAX_CANDIDATES
    assert capped == integer_candidates(mentions, 0, 10**6)
    assert integer_candidates(mentions, 0, 10**6, limit=10 * MAX_CANDIDATES)[:MAX_CANDIDATES] == capped
    assert integer_candidates(mentions, 0, 10**6, limit=20) == capped[:20]


def test_calendar_ends_do_not_break_dates():
    candidates = date_candidates(find_mentions("until 9999-12-01 and 0001-01-05 plus 2 months"))
    assert [c.describe() for c in candidates] == [
        "copy 9999-12-01",
        "copy 0001-01-05",
        "0001-01-05 + 2 months",  # same latest operand: date_plus before date_minus
        "9999-12-01 - 2 months",
    ]


def test_covers_needs_the_exact_type():
    candidates = [Candidate(D(2024, 3, 8), "copy", (0,), ("2024-03-08",)), Candidate(1, "copy", (1,), ("1",))]
    assert covers(candidates, D(2024, 3, 8))
    assert not covers(candidates, dt.datetime(2024, 3, 8))
    assert not covers(candidates, True)
    assert not covers(candidates, 2)


# Properties over arbitrary mention lists.

_DATES = st.dates(D(1, 1, 1), D(9999, 12, 31))
_MENTION = st.one_of(
    st.builds(lambda v: Mention("date", 0, 1, v, "d"), _DATES),
    st.builds(lambda v, pct: Mention("number", 0, 1, v, "n", unit="percent" if pct else None),
              st.integers(0, 10**7), st.booleans()),
    st.builds(lambda v, unit, b: Mention("duration", 0, 1, v, "t", unit=unit, business=b and unit == "days"),
              st.integers(0, 400), st.sampled_from(["days", "weeks", "months", "years"]), st.booleans()),
)  # fmt: skip


@given(st.lists(_MENTION, max_size=40), st.integers(-5, 10**6), st.integers(0, 10**7))
def test_integer_candidates_are_well_formed(mentions, low, span):
    candidates = integer_candidates(mentions, low, low + span)
    assert len(candidates) <= MAX_CANDIDATES
    # one derivation of each value, and a count of it apart
    assert len({(c.value, c.operation == "count_at_least") for c in candidates}) == len(candidates)
    for c in candidates:
        assert low <= c.value <= low + span and isinstance(c.value, int)
        if c.operation == "copy":
            assert c.value == mentions[c.operands[0]].value
        if c.operation == "count_at_least":
            threshold, first, last = (mentions[i] for i in c.operands)
            assert threshold.unit == first.unit == last.unit == "percent" and 0 <= c.value <= MAX_COUNTED
    assert candidates == integer_candidates(list(mentions), low, low + span)


@given(st.lists(_MENTION, max_size=40), _DATES, st.integers(0, 10**6))
def test_date_candidates_are_well_formed(mentions, low, span):
    high = D.fromordinal(min(low.toordinal() + span, D(9999, 12, 31).toordinal()))
    candidates = date_candidates(mentions, low, high)
    assert len(candidates) <= MAX_CANDIDATES
    for c in candidates:
        assert low <= c.value <= high
        if c.operation == "copy":
            assert c.value == mentions[c.operands[0]].value
        else:
            day, duration = (mentions[i] for i in c.operands)
            sign = 1 if c.operation == "date_plus" else -1
            assert c.value == shift(day.value, sign * duration.value, duration.unit, duration.business)


@given(st.dates(D(1990, 1, 1), D(2100, 12, 31)), st.integers(1, 365))
def test_a_written_date_plus_written_days_is_covered(day, days):
    text = f"Starting {day.day} {day.strftime('%B')} {day.year}, within {days} days."
    assert covers(date_candidates(find_mentions(text)), day + dt.timedelta(days=days))


BREACH = (
    "The register is updated within 5 business days. The regulator is told within 4 calendar days.\n"
    "Exposure found on 2029-10-13. Confirmed by the Privacy Office on 2029-10-15."
)


def test_a_value_reached_several_ways_keeps_up_to_that_many_derivations_in_order():
    mentions = find_mentions(BREACH)
    once = [c.describe() for c in date_candidates(mentions) if c.value == D(2029, 10, 19)]
    assert once == ["2029-10-13 + 5 business days"]  # the first derivation hides the one meant
    kept = [c.describe() for c in date_candidates(mentions, derivations=3) if c.value == D(2029, 10, 19)]
    assert kept == ["2029-10-13 + 5 business days", "2029-10-15 + 4 days"]
    values = [c.value for c in date_candidates(mentions, derivations=3)]
    assert set(values) == {c.value for c in date_candidates(mentions)}  # the same values, more ways to each
    assert max(values.count(v) for v in values) <= 3


def test_a_grounded_slot_offers_each_value_once_summing_its_derivations():
    import torch

    from decision_engine.grounding.slot_candidates import merge_derivations, slot_candidates
    from decision_engine.types import AnswerSchema

    mentions = find_mentions(BREACH)
    candidates = slot_candidates(AnswerSchema(type="string", format="date"), mentions)
    ways = [k for k, c in enumerate(candidates) if c.value == D(2029, 10, 19)]
    assert len(ways) == 2
    logits = torch.zeros(len(candidates) + 1)
    logits[ways[1]] = 2.0  # the chooser favours "2029-10-15 + 4 days"
    kept, merged = merge_derivations(candidates, logits)
    assert [c.value for c in kept] == list(dict.fromkeys(c.value for c in candidates))
    assert len(merged) == len(kept) + 1 and merged[-1] == logits[-1]  # "write" stays last
    k = next(i for i, c in enumerate(kept) if c.value == D(2029, 10, 19))
    assert kept[k].describe() == "2029-10-15 + 4 days"  # the likelier derivation stands for the value
    assert torch.isclose(merged[k], torch.logsumexp(logits[ways], dim=0))
    assert torch.isclose(merged.softmax(-1).sum(), torch.tensor(1.0))
    assert torch.isclose(merged.softmax(-1)[k], logits.softmax(-1)[ways].sum())


REGISTER = (
    "Owners of 25% or more are beneficial owners; for high-risk customers the threshold is 10%.\n"
    "Register: A 6,000 shares (60%); B 1,800 shares (18%); C 900 shares (9%); others under 2% each.\n"
)


def test_a_list_of_percentages_runs_along_its_line_through_other_values():
    mentions = find_mentions(REGISTER)
    percents = [m.value for m in mentions if m.unit == "percent"]
    assert percents == [25, 10, 60, 18, 9, 2]
    runs = [tuple(mentions[i].value for i in run) for run in percent_lists(mentions)]
    assert (60, 18, 9) in runs and (60, 18, 9, 2) in runs and (25, 10) in runs
    assert not any(25 in run and 60 in run for run in runs)  # not across lines


def test_counts_of_listed_percentages_at_or_above_a_threshold_match_hand_counts():
    mentions = find_mentions(REGISTER)
    counts = {c.describe(): c.value for c in integer_candidates(mentions, 0, 10, derivations=50)
              if c.operation == "count_at_least"}
    assert counts["how many of the percentages 60% to 9% are at least 25%"] == 1
    assert counts["how many of the percentages 60% to 9% are at least 10%"] == 2
    assert counts["how many of the percentages 60% to 2% are at least 10%"] == 2
    assert counts["how many of the percentages 18% to 2% are at least 60%"] == 0
    assert not any(key.endswith("at least 60%") and "60% to" in key for key in counts)  # never its own item
    assert not [c for c in integer_candidates(mentions, 0, 10, counts=False) if c.operation == "count_at_least"]
    level = find_mentions("Threshold: 18%.\nA 18%; B 5%; C 30%.")
    counted = [c for c in integer_candidates(level, 0, 10) if c.operation == "count_at_least"]
    assert [(c.describe(), c.value) for c in counted][:1] == [("how many of the percentages 18% to 5% are at least 18%", 1)]


def test_a_count_keeps_its_own_derivations_beside_other_ways_to_its_value():
    mentions = find_mentions(REGISTER)
    candidates = integer_candidates(mentions, 0, 10)  # one derivation of each value
    twos = [c.operation for c in candidates if c.value == 2]
    assert twos.count("count_at_least") == 1 and len(twos) == 2  # "2%" copied, and a count
