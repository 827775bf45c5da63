"""Dashboard page contexts over two hand-built runs: the numbers match the SQL report, and text is escaped."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import update

from decision_engine.dashboard import context
from decision_engine.dashboard.routes import template_config
from decision_engine.store import schema as db
from decision_engine.store.recording import apply_labels, record_decision
from decision_engine.store.records import ReportFilters
from decision_engine.store.reports import accuracy_report
from decision_engine.types import Answer, DecisionResponse, Evidence, Question
from store_fixtures import QUESTIONS, make_request

E, C, N = "Entailment", "Contradiction", "NotMentioned"
UTC = dt.UTC
SCRIPT_QUESTION = "Is <script>window.__pwned=1</script> kept confidential?"
SCRIPT_DOCUMENT = "<script>alert('x')</script> The Recipient shall keep the Information confidential."
# run, answers (q1, q2, q3), confidences, labels, timings, created_at; q3 = 400 is outside its schema (0-365).
GROUPS = [
    ("alpha", (E, True, 30), (0.95, 0.85, 0.35), {"q1": E, "q2": True, "q3": 30}, {"total": 100.0}, 1),
    ("alpha", (C, True, 30), (0.92, 0.15, 0.55), {"q1": E, "q2": True, "q3": 31}, {"total": 200.0}, 2),
    ("alpha", (E, False, 400), (0.65, 0.75, 0.05), {"q1": E}, {"total": 300.0}, 3),
    ("alpha", (N, False, 7), (0.45, 0.99, 1.0), {"q1": N, "q2": True, "q3": 7}, {"prepare": 4.0}, 4),
    ("beta <i>b</i>", (E, True, 30), (0.5, 0.5, 0.5), {"q1": E, "q2": True, "q3": 30}, {"total": 250.0}, 5),
    ("beta <i>b</i>", (N, False, 7), (0.5, 0.5, 0.5), {"q1": C, "q2": False, "q3": 7}, {"total": 250.0}, 6),
]
SCRIPT_GROUP = 3  # its first question's text and its document hold a <script> element
EVIDENCE = {"q1": [(0, 27), (29, 42)], "q2": [(35, 60)]}  # character offsets into SCRIPT_DOCUMENT


def _response(values, confidences, timings, *, model, mode, evidence=None, text=SCRIPT_DOCUMENT) -> DecisionResponse:
    answers = []
    for (question_id, value), confidence in zip(zip(("q1", "q2", "q3"), values), confidences):
        spans = (evidence or {}).get(question_id)
        answers.append(
            Answer(
                id=question_id,
                value=value,
                confidence=confidence,
                step=1,
                fixed_by="model",
                evidence=None if spans is None else [Evidence(s, e, text[s:e]) for s, e in spans],
            )
        )
    return DecisionResponse(answers=answers, mode=mode, steps=2, passes=2, model=model, timings_ms=timings)


@pytest.fixture
def stored(store_session):
    """GROUPS recorded and labelled; returns (session, run ids by name, group ids in GROUPS order)."""
    group_ids = []
    for i, (run, values, confidences, labels, timings, day) in enumerate(GROUPS):
        questions = list(QUESTIONS[:3])
        text = f"Document {i}: The Recipient shall keep the Information confidential."
        evidence = None
        if i == SCRIPT_GROUP:
            questions[0] = Question(id="q1", text=SCRIPT_QUESTION, schema=questions[0].schema)
            text, evidence = SCRIPT_DOCUMENT, EVIDENCE
        first = run == "alpha"
        response = _response(
            values, confidences, timings, model="m1" if first else "m2", mode="joint" if first else "independent",
            evidence=evidence,
        )
        decision_id, _ = record_decision(
            store_session, make_request(text=text, questions=questions), response, run=run,
            dataset="d1" if first else None,
        )
        apply_labels(store_session, decision_id, labels)
        store_session.execute(
            update(db.DecisionGroup)
            .where(db.DecisionGroup.id == decision_id)
            .values(created_at=dt.datetime(2024, 1, day, 12, tzinfo=UTC))
        )
        group_ids.append(decision_id)
    store_session.commit()
    runs = {run.name: run.id for run in store_session.query(db.Run)}
    return store_session, runs, group_ids


def test_overview_matches_the_report(stored):
    session, runs, _ = stored
    page = context.overview(session)
    rows = {row["id"]: row for row in page["runs"]}
    assert set(rows) == set(runs.values())
    for run_id in runs.values():
        report = accuracy_report(session, ReportFilters(run_id=run_id))
        row = rows[run_id]
        assert row["groups"] == report.groups
        assert row["per_question_accuracy"] == pytest.approx(report.per_question_accuracy)
        assert row["group_accuracy"] == pytest.approx(report.group_accuracy)
    alpha, beta = rows[runs["alpha"]], rows[runs["beta <i>b</i>"]]
    assert (alpha["groups"], alpha["questions_labelled"], alpha["groups_labelled"]) == (4, 10, 3)
    assert alpha["per_question_accuracy"] == pytest.approx(7 / 10)
    assert alpha["group_accuracy"] == pytest.approx(1 / 3)
    assert (alpha["model"], alpha["mode"], alpha["dataset"]) == ("m1", "joint", "d1")
    assert (alpha["invalid"], alpha["rule_violations"]) == (1, 1)  # q3 = 400; Contradiction with q2 true
    assert (beta["invalid"], beta["rule_violations"]) == (0, 0)
    assert alpha["decisions_per_s"] == pytest.approx(3 / 0.6)  # the group without a total is left out
    assert beta["decisions_per_s"] == pytest.approx(2 / 0.5)
    assert alpha["first"] == dt.datetime(2024, 1, 1, 12, tzinfo=UTC)
    assert alpha["last"] == dt.datetime(2024, 1, 4, 12, tzinfo=UTC)
    bars = {g["full_label"]: [b.width for b in g["bars"]] for g in page["chart"]["groups"]}
    assert bars[f"#{alpha['id']} alpha"][0] > bars[f"#{alpha['id']} alpha"][1] > 0  # 0.7 against 0.333


def test_report_by_run_id_is_one_run(stored):
    session, runs, _ = stored
    by_id = accuracy_report(session, ReportFilters(run_id=runs["alpha"]))
    by_name = accuracy_report(session, ReportFilters(run="alpha"))
    assert (by_id.groups, by_id.per_question_accuracy, by_id.questions) == (
        by_name.groups,
        by_name.per_question_accuracy,
        by_name.questions,
    )
    assert by_id.filters == {"run_id": str(runs["alpha"])}


def test_comparison_differences(stored):
    session, runs, _ = stored
    a, b = runs["alpha"], runs["beta <i>b</i>"]
    page = context.compare_page(session, a, b)
    report_a, report_b = (accuracy_report(session, ReportFilters(run_id=r)) for r in (a, b))
    rows = {row["question_id"]: row for row in page["comparison"]["questions"]}
    assert set(rows) == {"q1", "q2", "q3"}
    for question_id, row in rows.items():
        expected = report_b.questions[question_id].accuracy - report_a.questions[question_id].accuracy
        assert row["difference"] == pytest.approx(expected)
    assert rows["q1"]["difference"] == pytest.approx(1 / 2 - 3 / 4)
    group = page["comparison"]["group_accuracy"]
    assert (group["a"], group["b"]) == (pytest.approx(1 / 3), pytest.approx(1 / 2))
    assert group["difference"] == pytest.approx(1 / 2 - 1 / 3)
    assert context.compare_page(session, a, 999)["problem"] == "no run with id 999"
    assert context.compare_page(session, None, None)["comparison"] is None


def test_confusion_and_wrong_answers(stored):
    session, runs, group_ids = stored
    page = context.question_page(session, runs["alpha"], "q1")
    matrix = page["confusion"]
    assert matrix["answers"] == [E, C, N]  # the schema's order, with the choice never given
    cells = {row["label"]: [c["count"] for c in row["cells"]] for row in matrix["rows"]}
    assert cells == {E: [2, 1, 0], C: [0, 0, 0], N: [0, 0, 1]}
    report = accuracy_report(session, ReportFilters(run_id=runs["alpha"]))
    for label, row in report.questions["q1"].confusion.items():
        for answer, count in row.items():
            assert cells[label][matrix["answers"].index(answer)] == count
    assert page["errors_total"] == 1
    assert [(e["group_id"], e["answer"], e["label"]) for e in page["errors"]] == [(group_ids[1], C, E)]
    assert context.question_page(session, runs["alpha"], "q3")["confusion"] is None  # integers get no matrix
    boolean = context.question_page(session, runs["alpha"], "q2")["confusion"]
    assert boolean["answers"] == ["true", "false"]
    with pytest.raises(context.PageNotFound):
        context.question_page(session, runs["alpha"], "q9")


def test_calibration_bins(stored):
    session, runs, _ = stored
    page = context.calibration_page(session, runs["alpha"])
    expected = [[0, 0, []] for _ in range(10)]
    for run, values, confidences, labels, _, _ in GROUPS:
        if run != "alpha":
            continue
        for question_id, value, confidence in zip(("q1", "q2", "q3"), values, confidences):
            if question_id in labels:
                b = expected[min(int(confidence * 10), 9)]
                b[0] += 1
                b[1] += labels[question_id] == value
                b[2].append(confidence)
    assert [(b["count"], b["correct"]) for b in page["bins"]] == [(n, right) for n, right, _ in expected]
    assert page["bins"][9]["count"] == 4  # 0.92, 0.95, 0.99 and exactly 1.0
    for b, (n, right, seen) in zip(page["bins"], expected):
        assert b["mean_confidence"] == (pytest.approx(sum(seen) / n) if n else None)
    assert page["labelled"] == 10
    ece = sum(n * abs(right / n - sum(seen) / n) for n, right, seen in expected if n) / 10
    assert page["expected_calibration_error"] == pytest.approx(ece)
    chart = page["chart"]
    heights = [bar["height"] for bar in chart["bars"]]
    plot = chart["base"] - chart["top"]
    assert heights == [pytest.approx(right / n * plot) for n, right, _ in expected if n]


def test_highlight_pieces():
    text = "abcdefghij"
    pieces = context.highlight(text, [(2, 5, "q1"), (4, 8, "q2"), (-3, 1, "q3"), (9, 99, "q1"), (6, 6, "q4")])
    assert "".join(p["text"] for p in pieces) == text
    assert [(p["text"], p["questions"]) for p in pieces] == [
        ("a", ["q3"]),
        ("b", []),
        ("cd", ["q1"]),
        ("e", ["q1", "q2"]),
        ("fgh", ["q2"]),
        ("i", []),
        ("j", ["q1"]),
    ]


def _rows(*evidence: tuple[str, list[tuple[int, int]]]) -> list[dict]:
    """Question rows as the decision page builds them: id, text, colour in question order, evidence."""
    return [
        {
            "id": qid,
            "text": f"question {qid}?",
            "colour": context.EVIDENCE_COLOURS[i],
            "evidence": [{"start": s, "end": e, "text": ""} for s, e in spans],
        }
        for i, (qid, spans) in enumerate(evidence)
    ]


def test_evidence_view_overlapping_and_adjacent_spans():
    text = "0123456789abcdef"
    # zeta comes first in the decision, so it keeps the first colour and leads each piece it shares.
    rows = _rows(("zeta", [(0, 4), (4, 6)]), ("alpha", [(6, 9)]), ("mid", [(2, 8)]), ("none", []))
    zeta, alpha, mid, none = (r["colour"] for r in rows)
    view = context.evidence_view(text, rows)
    pieces = view["pieces"]
    assert "".join(p["text"] for p in pieces) == text
    assert [(p["start"], p["end"], p["questions"]) for p in pieces] == [
        (0, 2, ["zeta"]),
        (2, 6, ["zeta", "mid"]),  # zeta's adjacent spans (0, 4) and (4, 6) join: no piece ends at 4
        (6, 8, ["alpha", "mid"]),  # alpha starts where zeta ends: pieces meet without a gap or an overlap
        (8, 9, ["alpha"]),
        (9, 16, []),
    ]
    assert [p["colours"] for p in pieces] == [[zeta], [zeta, mid], [alpha, mid], [alpha], []]
    assert pieces[0]["background"] == zeta and pieces[3]["background"] == alpha and pieces[4]["background"] is None
    striped = pieces[1]["background"]
    assert striped.startswith("repeating-linear-gradient(") and zeta in striped and mid in striped
    assert striped.index(zeta) < striped.index(mid)
    assert [(e["id"], e["colour"], e["spans"]) for e in view["legend"]] == [
        ("zeta", zeta, 2), ("alpha", alpha, 1), ("mid", mid, 1), ("none", none, 0)
    ]
    assert view["overlaps"] is True
    assert context.evidence_view(text, _rows(("a", [(0, 3)]), ("b", [(3, 5)])))["overlaps"] is False


def test_overlapping_evidence_renders_escaped(store_session):
    text = "<u>bold</u> & <script>alert(1)</script>"
    evidence = {"q1": [(0, 11)], "q2": [(7, len(text))]}  # "</u>" is evidence of both
    response = _response(
        (E, True, 30), (0.9, 0.9, 0.9), {"total": 1.0}, model="m1", mode="joint", evidence=evidence, text=text
    )
    decision_id, _ = record_decision(store_session, make_request(text=text, questions=QUESTIONS[:3]), response)
    page = context.decision_page(store_session, decision_id)
    assert [(p["start"], p["end"], p["questions"]) for p in page["document"]["pieces"]] == [
        (0, 7, ["q1"]), (7, 11, ["q1", "q2"]), (11, len(text), ["q2"])
    ]
    html = template_config().to_engine().engine.get_template("decision.html.j2").render(page | {"auth": False})
    assert "<u>" not in html and "<script" not in html
    assert 'data-start="0" data-end="7"' in html and ">&lt;u&gt;bold</mark>" in html
    assert 'class="overlap"' in html and ">&lt;/u&gt;</mark>" in html
    assert " &amp; &lt;script&gt;alert(1)&lt;/script&gt;</mark></div>" in html
    assert 'id="legend-overlap"' in html


def test_drill_down_marks_evidence_and_escapes(stored):
    session, runs, group_ids = stored
    page = context.decision_page(session, group_ids[SCRIPT_GROUP])
    pieces = page["document"]["pieces"]
    assert "".join(p["text"] for p in pieces) == SCRIPT_DOCUMENT
    marked = [(p["start"], p["end"], p["questions"]) for p in pieces if p["questions"]]
    assert marked == [(0, 27, ["q1"]), (29, 35, ["q1"]), (35, 42, ["q1", "q2"]), (42, 60, ["q2"])]
    statuses = {q["id"]: (q["answer"], q["label"], q["status"], q["confidence"]) for q in page["questions"]}
    assert statuses == {"q1": (N, N, "right", 0.45), "q2": (False, True, "wrong", 0.99), "q3": (7, 7, "right", 1.0)}
    assert page["decision"]["run_id"] == runs["alpha"]
    assert [r["broken"] for r in page["rules"]] == [False]
    assert [r["broken"] for r in context.decision_page(session, group_ids[1])["rules"]] == [True]
    assert context.decision_page(session, group_ids[2])["rules_checked"] is False  # q3 = 400 is invalid

    environment = template_config().to_engine().engine
    html = environment.get_template("decision.html.j2").render(page | {"auth": True, "key_id": 1})
    assert "<script" not in html
    assert "Is &lt;script&gt;window.__pwned=1&lt;/script&gt; kept confidential?" in html
    first = pieces[0]
    assert first["questions"] == ["q1"] and first["background"] == first["colours"][0]
    assert (
        f'<mark data-questions="q1" data-start="0" data-end="27" title="q1" style="background: {first["background"]}">'
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;</mark>"
    ) in html
    assert 'data-questions="q1 q2" data-start="35" data-end="42" title="q1, q2" class="overlap"' in html
    legend = {entry["id"]: entry for entry in page["legend"]}
    assert [e["id"] for e in page["legend"]] == ["q1", "q2", "q3"]
    assert (legend["q1"]["spans"], legend["q2"]["spans"], legend["q3"]["spans"]) == (2, 1, 0)
    assert legend["q1"]["text"] == SCRIPT_QUESTION  # escaped by the template, as the answers table shows
    assert f'title="{SCRIPT_QUESTION}"' not in html
    assert len({e["colour"] for e in page["legend"]}) == 3
    assert page["document"]["overlaps"] is True


def test_every_page_renders_escaped(stored):
    session, runs, group_ids = stored
    environment = template_config().to_engine().engine
    frame = {"auth": False, "key_id": None}
    a, b = runs["alpha"], runs["beta <i>b</i>"]
    pages = {
        "overview.html.j2": context.overview(session),
        "run.html.j2": context.run_page(session, a),
        "question.html.j2": context.question_page(session, a, "q1"),
        "calibration.html.j2": context.calibration_page(session, a),
        "compare.html.j2": context.compare_page(session, a, b),
        "decision.html.j2": context.decision_page(session, group_ids[0]),
    }
    for name, page in pages.items():
        html = environment.get_template(name).render(page | frame)
        assert "<i>b</i>" not in html, name
        assert "<script" not in html, name
    overview = environment.get_template("overview.html.j2").render(pages["overview.html.j2"] | frame)
    assert "beta &lt;i&gt;b&lt;/i&gt;" in overview
    assert '<td class="num" data-metric="per_question_accuracy" title="10 labelled answers">0.700</td>' in overview


def test_drill_down_without_document_text(store_session):
    request = make_request(questions=QUESTIONS[:3])
    response = _response((E, True, 30), (0.9, 0.9, 0.9), {"total": 1.0}, model="m1", mode="joint")
    decision_id, _ = record_decision(store_session, request, response, store_text=False)
    page = context.decision_page(store_session, decision_id)
    assert page["document"]["stored"] is False and page["document"]["pieces"] is None
    assert page["legend"] is None
    html = template_config().to_engine().engine.get_template("decision.html.j2").render(page | {"auth": False})
    assert "The document text is not stored" in html
    assert 'id="legend"' not in html and "<mark" not in html


def test_calibration_leaves_forced_answers_out_and_counts_them_apart(store_session):
    from store_fixtures import VALUES, make_response

    labels = dict(VALUES) | {"q2": not VALUES["q2"]}  # q2 is wrong in both groups
    for forced in ({"q2": "rule", "q4": "schema"}, {}):
        response = make_response(VALUES, fixed_by=forced)
        decision_id, _ = record_decision(store_session, make_request(text=f"Doc {len(forced)}."), response, run="cal")
        apply_labels(store_session, decision_id, labels)
    run_id = store_session.query(db.Run).filter_by(name="cal").one().id
    page = context.calibration_page(store_session, run_id)
    assert page["labelled"] == 8 - 2  # the rule- and the schema-fixed answer are not in the bins
    assert sum(b["count"] for b in page["bins"]) == 6
    assert {f["fixed_by"]: (f["count"], f["correct"]) for f in page["forced"]} == {"rule": (1, 0), "schema": (1, 1)}
    report = accuracy_report(store_session, ReportFilters(run="cal"))
    split = {by: (f.answers, f.labelled, f.correct) for by, f in report.fixed_by.items()}
    assert split == {"model": (6, 6, 5), "rule": (1, 1, 0), "schema": (1, 1, 1)}
    assert report.questions_labelled == 8  # the report still counts every answer
