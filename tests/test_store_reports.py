"""Accuracy reports over a hand-built set of labelled groups, with each filter."""

from __future__ import annotations

import datetime as dt

import msgspec
import pytest
from sqlalchemy import update

from decision_engine.store import schema as db
from decision_engine.store.recording import apply_labels, record_decision
from decision_engine.store.records import AccuracyReport, ReportFilters
from decision_engine.store.reports import accuracy_report, format_report
from store_fixtures import QUESTIONS, make_request, make_response

E, C, N = "Entailment", "Contradiction", "NotMentioned"
UTC = dt.UTC
# (run, dataset, model, mode, created_at, answers q1-q3, labels)
GROUPS = [
    ("r1", "d1", "m1", "joint", dt.datetime(2024, 1, 1, tzinfo=UTC), (E, True, 30), {"q1": E, "q2": True, "q3": 30}),
    ("r1", "d1", "m1", "joint", dt.datetime(2024, 2, 1, tzinfo=UTC), (C, True, 30), {"q1": E, "q2": True, "q3": 31}),
    ("r1", "d1", "m1", "joint", dt.datetime(2024, 3, 1, tzinfo=UTC), (E, False, 7), {"q1": E}),
    ("r2", "d2", "m2", "independent", dt.datetime(2024, 4, 1, tzinfo=UTC), (N, False, 7),
     {"q1": N, "q2": False, "q3": 7}),
    ("r1", None, "m1", "joint", dt.datetime(2024, 5, 1, tzinfo=UTC), (E, True, 1), {}),
]


@pytest.fixture
def labelled(store_session):
    """The five groups of GROUPS, recorded, labelled and dated."""
    for i, (run, dataset, model, mode, created_at, answers, labels) in enumerate(GROUPS):
        request = make_request(text=f"Document {i}.", questions=QUESTIONS[:3])
        response = make_response(dict(zip(("q1", "q2", "q3"), answers)), model=model, mode=mode)
        decision_id, _ = record_decision(store_session, request, response, run=run, dataset=dataset)
        if labels:
            apply_labels(store_session, decision_id, labels)
        store_session.execute(
            update(db.DecisionGroup).where(db.DecisionGroup.id == decision_id).values(created_at=created_at)
        )
    store_session.commit()
    return store_session


def test_report_over_everything(labelled):
    report = accuracy_report(labelled, ReportFilters())
    assert (report.groups, report.groups_labelled, report.questions_labelled) == (5, 3, 10)
    assert report.per_question_accuracy == pytest.approx(8 / 10)
    assert report.group_accuracy == pytest.approx(2 / 3)
    assert report.filters == {}
    q1, q2, q3 = (report.questions[q] for q in ("q1", "q2", "q3"))
    assert (q1.count, q1.labelled, q1.correct, q1.kind) == (5, 4, 3, "enum")
    assert q1.accuracy == pytest.approx(0.75)
    assert q1.confusion == {E: {E: 2, C: 1}, N: {N: 1}}
    assert (q2.count, q2.labelled, q2.correct, q2.accuracy, q2.kind) == (5, 3, 3, 1.0, "boolean")
    assert q2.confusion == {"true": {"true": 2}, "false": {"false": 1}}
    assert (q3.count, q3.labelled, q3.correct, q3.kind, q3.confusion) == (5, 3, 2, "integer", None)
    assert q3.accuracy == pytest.approx(2 / 3)


FILTER_CASES = {  # name: (filters, groups, fully labelled groups, per-question accuracy, group accuracy)
    "run": (ReportFilters(run="r1"), 4, 2, 5 / 7, 1 / 2),
    "dataset": (ReportFilters(dataset="d2"), 1, 1, 1.0, 1.0),
    "model": (ReportFilters(model="m2"), 1, 1, 1.0, 1.0),
    "mode": (ReportFilters(mode="joint"), 4, 2, 5 / 7, 1 / 2),
    "run+dataset": (ReportFilters(run="r1", dataset="d1"), 3, 2, 5 / 7, 1 / 2),
    "since-until": (
        ReportFilters(since=dt.datetime(2024, 2, 1, tzinfo=UTC), until=dt.datetime(2024, 3, 1, tzinfo=UTC)),
        1, 1, 1 / 3, 0.0,
    ),  # since inclusive, until exclusive
    "since-other-zone": (
        ReportFilters(since=dt.datetime(2024, 2, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))), 4, 2, 5 / 7, 1 / 2
    ),
    "until-naive-is-utc": (ReportFilters(until=dt.datetime(2024, 2, 1)), 1, 1, 1.0, 1.0),
    "no-match": (ReportFilters(run="nothing"), 0, 0, None, None),
    "unlabelled-only": (ReportFilters(since=dt.datetime(2024, 5, 1, tzinfo=UTC)), 1, 0, None, None),
}


def _approx(value: float | None):
    return None if value is None else pytest.approx(value)


def test_filters(labelled):
    # One test over all cases: building the labelled store is the slow part.
    for name, (filters, groups, labelled_groups, per_question, group_accuracy) in FILTER_CASES.items():
        report = accuracy_report(labelled, filters)
        got = (report.groups, report.groups_labelled, report.per_question_accuracy, report.group_accuracy)
        assert got == (groups, labelled_groups, _approx(per_question), _approx(group_accuracy)), name


def test_filters_are_echoed(labelled):
    since = dt.datetime(2024, 2, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    report = accuracy_report(labelled, ReportFilters(run="r1", mode="joint", since=since))
    assert report.filters == {"run": "r1", "mode": "joint", "since": "2024-02-01T00:00:00+00:00"}


def test_empty_store(store_session):
    report = accuracy_report(store_session, ReportFilters())
    assert report == AccuracyReport(0, 0, 0, None, None, {}, {})


def test_report_survives_json_and_formats_as_a_table(labelled):
    report = accuracy_report(labelled, ReportFilters(run="r1"))
    assert msgspec.json.decode(msgspec.json.encode(report), type=AccuracyReport) == report
    text = format_report(report)
    assert "groups: 4  fully labelled: 2  labelled questions: 7" in text
    assert "per-question accuracy: 0.714" in text
    lines = text.splitlines()
    q1 = next(line for line in lines if line.startswith("q1 "))
    assert q1.split() == ["q1", "enum", "4", "3", "2", "0.667"]
    assert "confusion of q1:" in text and "confusion of q3:" not in text
