"""Finding and removing stored decisions on both stores: filtered cursor pages, runs with counts, delete
and prune, with the report's counts before and after."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select, update

from decision_engine.errors import RequestError
from decision_engine.store import schema as db
from decision_engine.store.listing import list_decisions, list_runs
from decision_engine.store.recording import DecisionNotFound, apply_labels, load_decision, record_decision
from decision_engine.store.records import DecisionFilters, ReportFilters
from decision_engine.store.reports import accuracy_report
from decision_engine.store.retention import delete_decision, prune
from decision_engine.types import Document
from store_fixtures import VALUES, make_request, make_response

UTC = dt.UTC
DAY = dt.datetime(2024, 6, 1, tzinfo=UTC)
# (run, dataset, external id, document id, mode, days after DAY, text); two share a time, two share a text
DECISIONS = [
    ("r1", "leases", "c-1", "doc-a", "joint", 0, "Text A."),
    ("r1", "leases", "c-2", "doc-b", "joint", 1, "Text B."),
    ("r1", None, "c-3", None, "joint", 2, "Text C."),
    ("r2", "ndas", "c-4", "doc-a", "independent", 2, "Text A."),
    ("r2", "ndas", "c-5", None, "independent", 3, "Text D."),
    ("r1", "leases", "c-6", "doc-e", "joint", 4, "Text E."),
    ("r1", "leases", "c-7", None, "joint", 5, "Text F."),
]


@pytest.fixture
def stored(store_session) -> list[str]:
    """The decisions of DECISIONS, recorded and dated; the first two labelled. Their ids, in order."""
    ids = []
    for run, dataset, external_id, document_id, mode, days, text in DECISIONS:
        request = make_request(text=text)
        request.document = Document(text=text, title="T", id=document_id)
        decision_id, _ = record_decision(
            store_session, request, make_response(VALUES, mode=mode), run=run, dataset=dataset, external_id=external_id
        )
        store_session.execute(
            update(db.DecisionGroup)
            .where(db.DecisionGroup.id == decision_id)
            .values(created_at=DAY + dt.timedelta(days=days))
        )
        ids.append(decision_id)
    store_session.commit()
    apply_labels(store_session, ids[0], dict(VALUES))
    apply_labels(store_session, ids[1], {"q1": "Contradiction"})
    return ids


def _all_pages(session, filters=DecisionFilters(), limit=3) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = list_decisions(session, filters, limit, cursor)
        pages.append([item.id for item in page.items])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def test_pages_run_newest_first_and_a_cursor_resumes_exactly(store_session, stored):
    pages = _all_pages(store_session)
    assert [len(p) for p in pages] == [3, 3, 1]
    flat = [i for page in pages for i in page]
    days = {decision_id: row[5] for decision_id, row in zip(stored, DECISIONS)}
    expected = sorted(stored, key=lambda i: (days[i], i), reverse=True)  # ties (day 2) broken by id
    assert flat == expected
    exact = list_decisions(store_session, DecisionFilters(), limit=7)
    assert [i.id for i in exact.items] == expected and exact.next_cursor is None


def test_items_carry_answers_labels_and_the_clients_document_id(store_session, stored):
    items = {i.id: i for i in list_decisions(store_session, DecisionFilters(), limit=10).items}
    first = items[stored[0]]
    assert (first.run, first.dataset, first.external_id, first.mode) == ("r1", "leases", "c-1", "joint")
    assert first.document.id == "doc-a" and first.document.text is None and first.document.chars == len("Text A.")
    assert [a.id for a in first.answers] == list(VALUES) and [a.fixed_by for a in first.answers] == ["model"] * 4
    assert first.labels == VALUES
    assert items[stored[1]].labels == {"q1": "Contradiction"}
    assert items[stored[2]].document.id is None and items[stored[2]].dataset is None
    assert load_decision(store_session, stored[3]).document.id == "doc-a"


@pytest.mark.parametrize(
    ("filters", "rows"),
    [
        (DecisionFilters(run="r2"), [3, 4]),
        (DecisionFilters(dataset="leases"), [0, 1, 5, 6]),
        (DecisionFilters(external_id="c-3"), [2]),
        (DecisionFilters(document_id="doc-a"), [0, 3]),
        (DecisionFilters(mode="independent"), [3, 4]),
        (DecisionFilters(since=DAY + dt.timedelta(days=2), until=DAY + dt.timedelta(days=4)), [2, 3, 4]),
        (DecisionFilters(run="r1", since=DAY + dt.timedelta(days=2)), [2, 5, 6]),
        (DecisionFilters(run="nobody"), []),
    ],
    ids=["run", "dataset", "external_id", "document_id", "mode", "since-until", "run-since", "none"],
)
def test_filters(store_session, stored, filters, rows):
    found = {i for page in _all_pages(store_session, filters, limit=2) for i in page}
    assert found == {stored[r] for r in rows}


def test_bad_limits_and_cursors_name_their_field(store_session, stored):
    for limit in (0, 1001):
        with pytest.raises(RequestError) as error:
            list_decisions(store_session, DecisionFilters(), limit)
        assert error.value.field == "limit"
    for cursor in ("nonsense", "W10", "WyJ4IiwgInkiXQ"):  # not base64 JSON; []; ["x", "y"]
        with pytest.raises(RequestError) as error:
            list_decisions(store_session, DecisionFilters(), 5, cursor)
        assert error.value.field == "cursor"


def test_runs_are_listed_with_their_counts(store_session, stored):
    runs = {(r.name, r.dataset): r for r in list_runs(store_session).items}  # a run row per name and dataset
    assert set(runs) == {("r1", "leases"), ("r1", None), ("r2", "ndas")}
    leases = runs[("r1", "leases")]
    assert (leases.decisions, leases.questions, leases.labelled, leases.mode) == (4, 16, 5, "joint")
    assert leases.last_decision_at == DAY + dt.timedelta(days=5)
    assert (runs[("r2", "ndas")].decisions, runs[("r2", "ndas")].labelled) == (2, 0)


def _count(session, table) -> int:
    return session.scalar(select(func.count()).select_from(table))


def test_delete_removes_the_decision_its_answers_and_labels_and_reports_follow(store_session, stored):
    before = accuracy_report(store_session, ReportFilters(run="r1"))
    assert (before.groups, before.questions_labelled) == (5, 5)
    answers, documents = _count(store_session, db.Answer), _count(store_session, db.Document)
    removed = delete_decision(store_session, stored[0])
    assert (removed.decisions, removed.questions, removed.answers, removed.labels) == (1, 4, 4, 4)
    assert removed.documents == 0  # "Text A." is also the document of stored[3]
    after = accuracy_report(store_session, ReportFilters(run="r1"))
    assert (after.groups, after.questions_labelled) == (4, 1)
    assert _count(store_session, db.Answer) == answers - 4 and _count(store_session, db.Document) == documents
    assert _count(store_session, db.LabelHistory) == 1  # only stored[1]'s label is left
    with pytest.raises(DecisionNotFound):
        load_decision(store_session, stored[0])
    with pytest.raises(DecisionNotFound):
        delete_decision(store_session, stored[0])
    assert delete_decision(store_session, stored[3]).documents == 1  # now nothing refers to "Text A."
    assert _count(store_session, db.Document) == documents - 1


def test_prune_removes_what_is_older_and_a_dry_run_only_counts(store_session, stored):
    cut = DAY + dt.timedelta(days=2)  # days 0 and 1 are older
    assert accuracy_report(store_session, ReportFilters()).groups == 7
    would = prune(store_session, cut, dry_run=True)
    assert accuracy_report(store_session, ReportFilters()).groups == 7
    removed = prune(store_session, cut)
    assert removed == would
    assert (removed.decisions, removed.questions, removed.answers, removed.labels) == (2, 8, 8, 5)
    assert removed.documents == 1  # "Text B."; "Text A." is still the document of stored[3]
    report = accuracy_report(store_session, ReportFilters())
    assert (report.groups, report.questions_labelled) == (5, 0)
    assert {i for page in _all_pages(store_session) for i in page} == set(stored[2:])
    assert sum(r.decisions for r in list_runs(store_session).items) == 5  # the runs themselves stay


def test_prune_of_one_run(store_session, stored):
    removed = prune(store_session, DAY + dt.timedelta(days=10), run="r2")
    assert removed.decisions == 2
    assert accuracy_report(store_session, ReportFilters(run="r2")).groups == 0
    assert accuracy_report(store_session, ReportFilters(run="r1")).groups == 5
    assert prune(store_session, DAY + dt.timedelta(days=10), run="r2").decisions == 0
