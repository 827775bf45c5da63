"""Labels: validated against each question's schema, all or nothing, last write wins, history kept."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from decision_engine.errors import RequestError
from decision_engine.store import schema as db
from decision_engine.store.keys import create_key
from decision_engine.store.recording import DecisionNotFound, apply_labels, load_decision, record_decision
from store_fixtures import VALUES, make_request, make_response


@pytest.fixture
def decision_id(store_session) -> str:
    decision_id, _ = record_decision(store_session, make_request(), make_response(VALUES))
    return decision_id


def _history(session, decision_id: str) -> list[tuple[str, str, int | None]]:
    return [
        tuple(row)
        for row in session.execute(
            select(db.Question.question_id, db.LabelHistory.value_json, db.LabelHistory.api_key_id)
            .join(db.Question, db.Question.id == db.LabelHistory.question_pk)
            .where(db.Question.group_id == decision_id)
            .order_by(db.LabelHistory.id)
        )
    ]


def test_labels_are_stored_with_their_types(store_session, decision_id):
    labels = {"q1": "Contradiction", "q2": False, "q3": 0, "q4": "2030-12-31"}
    stored = apply_labels(store_session, decision_id, labels)
    assert stored.labels == labels
    assert type(stored.labels["q2"]) is bool and type(stored.labels["q3"]) is int
    assert load_decision(store_session, decision_id).labels == labels


@pytest.mark.parametrize(
    ("labels", "field", "problem"),
    [
        ({"nope": True}, "labels.nope", "no question with this id in decision"),
        ({"q1": "Maybe"}, "labels.q1", "not one of the choices"),
        ({"q1": True}, "labels.q1", "not a string"),
        ({"q2": 1}, "labels.q2", "not a boolean"),
        ({"q2": "true"}, "labels.q2", "not a boolean"),
        ({"q3": True}, "labels.q3", "not an integer"),  # bool is a subclass of int, yet not a count
        ({"q3": 30.0}, "labels.q3", "not an integer"),
        ({"q3": 366}, "labels.q3", "outside [0, 365]"),
        ({"q4": "2024-02-30"}, "labels.q4", "not an ISO date"),
        ({"q4": "31/01/2024"}, "labels.q4", "not an ISO date"),
        ({"q4": "1999-12-31"}, "labels.q4", "outside [2000-01-01, 2030-12-31]"),
        ({}, "labels", "at least one label"),
    ],
    ids=lambda v: None if isinstance(v, dict) else str(v),
)
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # validation happens before any SQL write
def test_bad_labels_name_the_field(store_session, decision_id, labels, field, problem):
    with pytest.raises(RequestError) as caught:
        apply_labels(store_session, decision_id, labels)
    assert caught.value.field == field
    assert problem in caught.value.problem
    if field == "labels.nope":
        assert decision_id in caught.value.problem


def test_one_bad_label_writes_nothing(store_session, decision_id):
    with pytest.raises(RequestError) as caught:
        apply_labels(store_session, decision_id, {"q1": "Entailment", "q2": "yes", "q3": 5})
    assert caught.value.field == "labels.q2"
    assert load_decision(store_session, decision_id).labels == {}
    assert store_session.scalar(select(func.count()).select_from(db.LabelHistory)) == 0


def test_last_write_wins_and_history_is_kept(store_session, decision_id):
    key_id, _ = create_key(store_session, "label")
    apply_labels(store_session, decision_id, {"q1": "Entailment", "q2": True})
    stored = apply_labels(store_session, decision_id, {"q1": "Contradiction"}, api_key_id=key_id)
    assert stored.labels == {"q1": "Contradiction", "q2": True}
    assert _history(store_session, decision_id) == [
        ("q1", '"Entailment"', None),
        ("q2", "true", None),
        ("q1", '"Contradiction"', key_id),
    ]
    assert store_session.scalar(select(func.count()).select_from(db.Label)) == 2


def test_labels_of_an_unknown_decision(store_session):
    with pytest.raises(DecisionNotFound):
        apply_labels(store_session, "f" * 32, {"q1": "Entailment"})


def test_labels_given_when_recording(store_session):
    decision_id, _ = record_decision(store_session, make_request(), make_response(VALUES), labels={"q3": 31})
    assert load_decision(store_session, decision_id).labels == {"q3": 31}
    assert _history(store_session, decision_id) == [("q3", "31", None)]


def test_bad_labels_when_recording_store_nothing(store_session):
    with pytest.raises(RequestError) as caught:
        record_decision(store_session, make_request(), make_response(VALUES), labels={"q3": 31, "q9": 1})
    assert caught.value.field == "labels.q9"
    assert store_session.scalar(select(func.count()).select_from(db.DecisionGroup)) == 0
