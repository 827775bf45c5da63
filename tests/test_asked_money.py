"""A question asking for an amount of money, and the candidates that cannot be one."""

from __future__ import annotations

import pytest

from decision_engine.grounding.asked_money import asks_for_money, cannot_be_money, physical
from decision_engine.grounding.candidates import integer_candidates
from decision_engine.grounding.grounder import _ruled_out
from decision_engine.grounding.mentions import find_mentions
from decision_engine.types import AnswerSchema, Question

DOCUMENT = (
    "The Tenant paid a deposit of 1,800.\n"
    "His employer moved him to its office 240 km away, with a van carrying 35 kg of files.\n"
    "The Landlord kept 1,800 and asked for 250 more; the flat has 3 rooms."
)


@pytest.mark.parametrize("question, money", [
    ("How much of the deposit did the landlord actually retain?", True),
    ("In total, how much is the contract worth?", True),
    ("What total amount did the landlord deduct from the deposit?", True),
    ("What sum is payable under the policy?", True),
    ("How much notice did the tenant give?", False),  # time, not money
    ("How much does the parcel weigh?", False),
    ("How much wind may the drone fly in, in km/h?", False),
    ("How much of the file, in percent, was encrypted?", False),
    ("How many rooms does the flat have?", False),  # a count, not an amount
])
def test_a_question_asks_for_money(question, money):
    assert asks_for_money(question) is money


def test_numbers_with_a_physical_unit_after_them():
    mentions = find_mentions(DOCUMENT)
    read = {m.text: physical(DOCUMENT, m) for m in mentions}
    assert read["240"] is True
    assert read["35"] is True
    assert read["1,800"] is False
    assert read["250"] is False
    assert read["3"] is False  # "3 rooms": rooms are counted, not measured


def test_a_money_question_rules_out_every_candidate_reading_a_measured_number():
    mentions = find_mentions(DOCUMENT)
    candidates = integer_candidates(mentions, 0, 100000, derivations=3)
    out = {}
    for c, excluded in zip(candidates, cannot_be_money(candidates, mentions, DOCUMENT)):
        out.setdefault(c.describe(), excluded)
    assert out["copy 1800"] is False
    assert out["copy 240"] is True
    assert out["copy 35"] is True
    assert out["1800 - 240"] is True  # arithmetic on it
    assert out["1800 - 250"] is False
    assert out["copy 250"] is False


def test_the_grounder_rules_them_out_for_a_money_question_only():
    mentions = find_mentions(DOCUMENT)
    candidates = integer_candidates(mentions, 0, 100000, derivations=3)
    amount = AnswerSchema(type="integer", minimum=0, maximum=100000)
    kept = Question(id="kept", text="How much of the deposit did the landlord retain?", schema=amount)
    rooms = Question(id="rooms", text="How many rooms does the flat have?", schema=amount)
    described = [c.describe() for c in candidates]
    out = _ruled_out(kept, candidates, mentions, DOCUMENT)
    assert out[described.index("copy 240")] and not out[described.index("copy 1800")]
    assert _ruled_out(rooms, candidates, mentions, DOCUMENT) is None
