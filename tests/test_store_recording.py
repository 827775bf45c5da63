"""Recording decisions: round trip, document dedup, stored text, idempotency, concurrent writers."""

from __future__ import annotations

import datetime as dt
import hashlib
import threading

import pytest
from sqlalchemy import func, select

from decision_engine.store import schema as db
from decision_engine.store.keys import create_key
from decision_engine.store.recording import (
    DecisionNotFound,
    IdempotencyConflict,
    find_idempotent,
    load_decision,
    record_decision,
    request_fingerprint,
)
from store_fixtures import QUESTIONS, TEXT, VALUES, make_request, make_response


def _count(session, model) -> int:
    return session.scalar(select(func.count()).select_from(model))


def test_round_trip(store_session):
    request, response = make_request(), make_response(VALUES, mode="independent")
    before = dt.datetime.now(dt.UTC)
    decision_id, created = record_decision(
        store_session, request, response, run="nightly", dataset="cuad", external_id="doc-7", model_version="v2"
    )
    assert created and len(decision_id) == 32

    stored = load_decision(store_session, decision_id)
    assert stored.id == decision_id
    assert before - dt.timedelta(seconds=1) <= stored.created_at <= dt.datetime.now(dt.UTC)
    assert stored.created_at.utcoffset() == dt.timedelta(0)
    assert (stored.run, stored.dataset, stored.external_id) == ("nightly", "cuad", "doc-7")
    assert (stored.mode, stored.model, stored.model_version) == ("independent", "tiny", "v2")
    assert stored.document.sha256 == hashlib.sha256(TEXT.encode()).hexdigest()
    assert (stored.document.chars, stored.document.text, stored.document.title) == (len(TEXT), TEXT, "NDA")
    assert stored.questions == request.questions
    assert stored.rules == request.rules
    assert stored.answers == response.answers
    assert [type(a.value) for a in stored.answers] == [str, bool, int, str]  # True must not come back as 1
    assert (stored.steps, stored.timings_ms, stored.labels) == (3, {"total": 12.5}, {})


def test_load_of_an_unknown_id_raises(store_session):
    with pytest.raises(DecisionNotFound):
        load_decision(store_session, "0" * 32)


def test_run_defaults_and_reuse(store_session):
    first, _ = record_decision(store_session, make_request(), make_response(VALUES))
    second, _ = record_decision(store_session, make_request(), make_response(VALUES))
    stored = load_decision(store_session, first)
    assert (stored.run, stored.dataset, stored.external_id, stored.model_version) == ("api", None, None, "")
    assert first != second and _count(store_session, db.Run) == 1
    record_decision(store_session, make_request(), make_response(VALUES, model="other"))
    assert _count(store_session, db.Run) == 2


def test_documents_are_deduplicated_by_sha256(store_session):
    a, _ = record_decision(store_session, make_request(), make_response(VALUES))
    b, _ = record_decision(store_session, make_request(title="Another title"), make_response(VALUES))
    c, _ = record_decision(store_session, make_request(text=TEXT + " Amended."), make_response(VALUES))
    assert _count(store_session, db.Document) == 2
    assert load_decision(store_session, a).document == load_decision(store_session, b).document
    assert load_decision(store_session, c).document.text.endswith("Amended.")


def test_store_text_false_keeps_only_the_fingerprint_until_text_may_be_stored(store_session):
    hidden, _ = record_decision(store_session, make_request(), make_response(VALUES), store_text=False)
    document = load_decision(store_session, hidden).document
    assert (document.text, document.title, document.chars) == (None, None, len(TEXT))
    assert document.sha256 == hashlib.sha256(TEXT.encode()).hexdigest()

    record_decision(store_session, make_request(), make_response(VALUES), store_text=True)
    assert load_decision(store_session, hidden).document.text == TEXT  # filled in by the later write
    record_decision(store_session, make_request(), make_response(VALUES), store_text=False)
    assert load_decision(store_session, hidden).document.text == TEXT  # never erased
    assert _count(store_session, db.Document) == 1


def test_a_response_missing_an_answer_is_refused(store_session):
    values = dict(VALUES)
    del values["q3"]
    with pytest.raises(ValueError, match="q3"):
        record_decision(store_session, make_request(), make_response(values))
    assert _count(store_session, db.DecisionGroup) == 0


def test_idempotency_key_returns_the_first_decision(store_session):
    request, response = make_request(), make_response(VALUES)
    first, created = record_decision(store_session, request, response, idempotency_key="abc")
    retried = make_response(VALUES, steps=9)
    again, created_again = record_decision(store_session, request, retried, idempotency_key="abc")
    assert (created, created_again) == (True, False)
    assert again == first == find_idempotent(store_session, "abc", None)
    assert load_decision(store_session, first).steps == 3
    assert _count(store_session, db.DecisionGroup) == 1
    assert find_idempotent(store_session, "other", None) is None


def test_idempotency_key_with_another_body_conflicts(store_session):
    record_decision(store_session, make_request(), make_response(VALUES), idempotency_key="abc")
    with pytest.raises(IdempotencyConflict):
        record_decision(store_session, make_request(title="changed"), make_response(VALUES), idempotency_key="abc")
    assert _count(store_session, db.DecisionGroup) == 1


def test_idempotency_keys_are_scoped_per_api_key(store_session):
    alice, _ = create_key(store_session, "decide")
    bob, _ = create_key(store_session, "decide")
    request, response = make_request(), make_response(VALUES)
    a, _ = record_decision(store_session, request, response, idempotency_key="same", api_key_id=alice)
    b, created = record_decision(store_session, request, response, idempotency_key="same", api_key_id=bob)
    assert created and a != b
    assert find_idempotent(store_session, "same", alice) == a and find_idempotent(store_session, "same", bob) == b
    assert find_idempotent(store_session, "same", None) is None


def test_fingerprint_follows_the_body():
    assert request_fingerprint(make_request()) == request_fingerprint(make_request())
    assert request_fingerprint(make_request()) != request_fingerprint(make_request(questions=QUESTIONS[:2]))


def _in_threads(count: int, work) -> list:
    """Run `work(i)` in `count` threads released together; returns results, re-raising any error."""
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list[BaseException] = []

    def target(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as error:  # noqa: BLE001 - re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    if errors:
        raise errors[0]
    return results


def test_concurrent_requests_with_one_idempotency_key_store_one_group(store_sessions):
    request, response = make_request(), make_response(VALUES)

    def work(_):
        with store_sessions() as session:
            return record_decision(session, request, response, idempotency_key="retry-1")

    results = _in_threads(8, work)
    assert len({decision_id for decision_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    with store_sessions() as session:
        assert _count(session, db.DecisionGroup) == 1
        assert _count(session, db.Question) == len(QUESTIONS)


def test_concurrent_writers_share_one_run_and_one_document(store_sessions):
    request, response = make_request(), make_response(VALUES)

    def work(i):
        with store_sessions() as session:
            return record_decision(session, request, response, run="shared", external_id=str(i))

    results = _in_threads(8, work)
    assert all(created for _, created in results) and len({i for i, _ in results}) == 8
    with store_sessions() as session:
        assert (_count(session, db.Run), _count(session, db.Document), _count(session, db.DecisionGroup)) == (1, 1, 8)
