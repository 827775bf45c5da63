"""Fact questions whose subject the document never names lean to "not mentioned"."""

from __future__ import annotations

import pytest

from decision_engine.reader.unmentioned_terms import ABSENT_BIAS, absence_bias, missing_terms, unnamed

DOCUMENT = (
    "The employee was dismissed on 12 February 2025 after a disciplinary hearing held on 10 February.\n"
    "The hearing found that he had deliberately falsified his timesheets. The trailer was loaded at the works "
    "and left at 14:00; the insurance certificate for the vehicle was checked."
)
YES_NO = ["yes", "no", "not mentioned"]


def test_missing_terms_compare_words_by_their_stem():
    assert missing_terms("Were the timesheets falsified?", DOCUMENT) == (0, 2)
    # "insulated" and "lagged" are nowhere; "pipes" neither
    assert missing_terms("Were the pipes insulated (lagged)?", DOCUMENT) == (3, 3)
    assert missing_terms("Was a hearing held?", DOCUMENT) == (0, 2)  # "held" and "hearing" are there


@pytest.mark.parametrize("question, absent", [
    ("Was the employee accompanied at the hearing by a colleague or a trade union representative?", True),
    ("Did the company hold event cancellation insurance for the trip?", True),  # "insurance" alone is there
    ("Was the vehicle's insurance certificate checked before the trip?", False),  # only "trip" is missing
    ("Was the trailer sealed?", False),  # one word missing is not enough
    ("Did the hearing find that the employee falsified his timesheets?", False),
])
def test_a_question_is_unnamed_when_most_of_its_words_are_missing(question, absent):
    assert unnamed(question, DOCUMENT) is absent


def test_the_bias_goes_to_the_absence_choice_of_fact_questions_only():
    asked = "Was the employee accompanied at the hearing by a colleague or a trade union representative?"
    assert absence_bias(YES_NO, asked, DOCUMENT) == [0.0, 0.0, ABSENT_BIAS]
    assert absence_bias(["yes", "no"], asked, DOCUMENT) is None  # nothing says absent
    assert absence_bias(["entailment", "contradiction", "not_mentioned"], asked, DOCUMENT) is None  # the gate's
    assert absence_bias(YES_NO, "Was the employee dismissed after a hearing?", DOCUMENT) is None


def test_a_laid_out_request_carries_the_bias_on_the_unnamed_question_only(vocab):
    from decision_engine.decoding.layout import LeadingContext, lay_out
    from decision_engine.validation import request_from_object

    request = request_from_object({
        "document": {"text": DOCUMENT},
        "questions": [
            {"id": "accompanied", "text": "Was the employee accompanied at the hearing by a colleague or a trade "
             "union representative?", "schema": {"type": "string", "enum": YES_NO}},
            {"id": "dismissed", "text": "Was the employee dismissed after a hearing?", "schema": {"type": "string", "enum": YES_NO}},
        ],
    })
    layout = lay_out(request, "joint", vocab, LeadingContext(vocab), 512)
    accompanied, dismissed = layout.group.constraints.spaces
    assert accompanied.choice_bias == [0.0, 0.0, ABSENT_BIAS]
    assert dismissed.choice_bias is None


def test_choices_that_are_not_words_are_never_the_absence_choice():
    asked = "Was the employee accompanied at the hearing by a colleague or a trade union representative?"
    assert absence_bias([1, 2, True], asked, DOCUMENT) is None
    assert absence_bias([3, "not mentioned"], asked, DOCUMENT) == [0.0, ABSENT_BIAS]
