"""Hypothesis drills: statements asked back of their own document, turned, changed, or of another one."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest

from decision_engine.datasets.hypothesis_drills import (
    ABSENT,
    CONTRADICTION,
    ENTAILMENT,
    SourceDocument,
    changed_number,
    contradicted,
    hypothesis_drills,
    moved_date,
    statement,
    turned_polarity,
)


@pytest.mark.parametrize(("span", "expected"), [
    ("3.5 Brightvale collects goods for warranty repair at its own cost.", "Brightvale collects goods for warranty repair at its own cost."),
    ("[Leaving] An Employee who resigns owes 14 days' notice.", "An Employee who resigns owes 14 days' notice."),
    ("(b) the Receiving Party shall keep the information secret;", "the Receiving Party shall keep the information secret"),
    ("- On 6 April 2026 the budget was set at 62,000.", "On 6 April 2026 the budget was set at 62,000."),
    ("Start date: 2019-01-10", None),  # too short to be a statement
    ("SCHEDULE 1 DEFINITIONS AND INTERPRETATION OF TERMS", None),  # a heading
])
def test_a_span_becomes_a_statement_without_its_numbering(span, expected):
    assert statement(span) == expected


@pytest.mark.parametrize(("text", "turned"), [
    ("We will not pay for replacing the failed pipe.", "We will pay for replacing the failed pipe."),
    ("The Recipient cannot disclose it to anyone.", "The Recipient can disclose it to anyone."),
    ("The Supplier shall not be liable for delay.", "The Supplier shall be liable for delay."),
    ("The notice is never deemed received.", "The notice is always deemed received."),
    ("The Customer may terminate on notice.", "The Customer may not terminate on notice."),
    ("The Buyer can recover general damages.", "The Buyer cannot recover general damages."),
    # the main clause's auxiliary, not the leading condition's
    ("Where rent is paid late, a fee is payable.", "Where rent is paid late, a fee is not payable."),
    ("Brightvale collects goods at its own cost.", None),
])
def test_polarity_turns_on_the_main_clause(text, turned):
    assert turned_polarity(text) == turned


def test_a_changed_number_differs_and_keeps_its_form_and_the_dates():
    rng = random.Random(0)
    for _ in range(20):
        changed = changed_number("On 13 October 2029 the fee of 1,450 was paid on 2029-10-14.", rng)
        assert changed is not None and "13 October 2029" in changed and "2029-10-14" in changed
        [amount] = re.findall(r"of (\S+) was", changed)
        assert amount != "1,450" and ("," in amount or int(amount) < 1000)
    assert changed_number("No figures here at all.", rng) is None


@pytest.mark.parametrize(("text", "form"), [
    ("Notice was given on 2024-03-08 by email.", "%Y-%m-%d"),
    ("Notice was given on 8 March 2024 by email.", "%d %B %Y"),
    ("Notice was given on March 8, 2024 by email.", "%B %d, %Y"),
])
def test_a_moved_date_is_another_real_date_written_alike(text, form):
    rng = random.Random(1)
    for _ in range(10):
        moved = moved_date(text, rng)
        written = moved.removeprefix("Notice was given on ").removesuffix(" by email.")
        assert written not in text
        assert dt.datetime.strptime(written, form)  # a real date, in the form it had
    assert moved_date("Notice was given on 31 February 2024.", rng) is None


def test_contradicted_never_returns_the_statement_itself():
    rng = random.Random(2)
    for text in ("The Supplier shall deliver 12 units.", "Payment is due on 2024-03-08.", "It ends 30 days later."):
        for _ in range(10):
            changed = contradicted(text, rng)
            assert changed is not None and changed != text
    assert contradicted("Brightvale collects goods at its own cost.", rng) is None


LEASE = "1. The Tenant shall pay rent of 1,200 on the first day of each month.\n2. The deposit will not be kept by the Landlord."
NDA = "1. The Recipient shall keep the Confidential Information secret for 5 years.\n2. Copies of the information may not be made by anyone."


def test_drills_take_turns_and_ask_each_verdict_as_it_should():
    sources = [SourceDocument("lease", LEASE), SourceDocument("nda", NDA)]
    lines = hypothesis_drills(sources, 30, seed=4)
    assert [line["labels"]["drill"] for line in lines] == [ENTAILMENT, CONTRADICTION, ABSENT] * 10
    statements = {text: [statement(s) for s in text.split("\n")] for text in (LEASE, NDA)}
    for line in lines:
        document, [question] = line["document"]["text"], line["questions"]
        asked = question["text"].removeprefix("Hypothesis: ").split(". Does the ")[0].rstrip(".")
        own = [s.rstrip(".") for s in statements[document]]
        other = [s.rstrip(".") for t, said in statements.items() if t != document for s in said]
        label = line["labels"]["drill"]
        assert question["schema"]["enum"] == [ENTAILMENT, CONTRADICTION, ABSENT]
        assert (asked in own) == (label == ENTAILMENT)
        assert (asked in other) == (label == ABSENT)
    assert hypothesis_drills(sources, 30, seed=4) == lines
    assert hypothesis_drills(sources, 30, seed=5) != lines


def test_drills_need_two_subjects_and_statements_they_can_contradict():
    with pytest.raises(ValueError, match="two subjects"):
        hypothesis_drills([SourceDocument("nda", NDA), SourceDocument("nda", LEASE)], 3)
    with pytest.raises(ValueError, match="count"):
        hypothesis_drills([SourceDocument("nda", NDA), SourceDocument("lease", LEASE)], -1)
    plain = "Brightvale collects goods for repair at its own cost today."
    with pytest.raises(ValueError, match="could be made"):
        hypothesis_drills([SourceDocument("a", plain), SourceDocument("b", plain.replace("goods", "parcels"))], 3)
    assert hypothesis_drills([], 0) == []
