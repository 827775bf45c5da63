"""A date question asking when something happened, and the candidates that cannot answer it."""

from __future__ import annotations

import pytest

from decision_engine.grounding.asked_date import asks_when_it_happened, cannot_have_happened
from decision_engine.grounding.candidates import date_candidates
from decision_engine.grounding.grounder import _ruled_out
from decision_engine.grounding.mentions import find_mentions
from decision_engine.types import AnswerSchema, Question

DOCUMENT = (
    "The policyholder found the damage on 19 January 2025 and telephoned the insurer on 6 February 2025.\n"
    "Claims must be reported within 30 days of discovery."
)


@pytest.mark.parametrize("question, happened", [
    ("On what date did the policyholder discover the water damage?", True),
    ("When did the employee's continuous service begin?", True),
    ("On which date was the load actually collected from the works?", True),
    ("When were the goods delivered?", True),
    ("By what date did the policy require the claim to be reported?", False),  # follows from a rule
    ("On what date does the agreement expire?", False),
    ("On what date is the landlord deemed to have received the notice?", False),
    ("When did the notice period end?", False),
    ("On what date did the cancellation take effect?", False),
    ("When was the payment due?", False),
    ("What is the Effective Date of the agreement?", False),  # asks for a defined date, not an event
])
def test_a_question_asks_when_something_happened(question, happened):
    assert asks_when_it_happened(question) is happened


def test_only_copies_can_say_when_something_happened():
    mentions = find_mentions(DOCUMENT)
    candidates = date_candidates(mentions, derivations=3)
    out = dict(zip([c.describe() for c in candidates], cannot_have_happened(candidates)))
    assert out["copy 2025-01-19"] is False
    assert out["copy 2025-02-06"] is False
    assert out["2025-01-19 + 30 days"] is True


def test_the_grounder_rules_out_steps_for_such_a_question_only():
    mentions = find_mentions(DOCUMENT)
    candidates = date_candidates(mentions, derivations=3)
    date = AnswerSchema(type="string", format="date")
    found = Question(id="found", text="On what date did the policyholder discover the damage?", schema=date)
    deadline = Question(id="deadline", text="By what date did the claim have to be reported?", schema=date)
    described = [c.describe() for c in candidates]
    out = _ruled_out(found, candidates, mentions, DOCUMENT)
    assert out[described.index("2025-01-19 + 30 days")] and not out[described.index("copy 2025-01-19")]
    assert _ruled_out(deadline, candidates, mentions, DOCUMENT) is None
