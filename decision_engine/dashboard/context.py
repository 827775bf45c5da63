"""The plain context dict of each page, built from the store; the templates only lay it out."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from ..kinds import kind_of, same_answer
from ..rules import RuleSet
from ..store.recording import load_decision
from ..types import Answer, AnswerSchema, Rule
from . import queries
from .charts import bar_chart, reliability_diagram
from .formatting import value_text
from .queries import Integrity, RunSummary


class PageNotFound(LookupError):
    """The page names a run or question that is not stored."""


def _run(summary: RunSummary, checks: Integrity | None = None) -> dict:
    """A run's row; `invalid` and `rule_violations` are None where the page did not re-check them."""
    return {
        "id": summary.id,
        "name": summary.name,
        "model": summary.model,
        "model_version": summary.model_version,
        "mode": summary.mode,
        "dataset": summary.dataset,
        "groups": summary.groups,
        "groups_labelled": summary.groups_labelled,
        "questions_labelled": summary.questions_labelled,
        "per_question_accuracy": summary.per_question_accuracy,
        "group_accuracy": summary.group_accuracy,
        "invalid": None if checks is None else checks.invalid,
        "rule_violations": None if checks is None else checks.rule_violations,
        "decisions_per_s": summary.decisions_per_s,
        "first": summary.first,
        "last": summary.last,
        "label": f"#{summary.id} {summary.name} · {summary.model} · {summary.mode}"
        + (f" · {summary.dataset}" if summary.dataset else ""),
    }


def _one_run(session: Session, run_id: int, checked: bool = False) -> dict:
    """One run's row, with its answers re-checked when `checked`; PageNotFound when there is no such run."""
    summary = queries.run_summary(session, run_id)
    if summary is None:
        raise PageNotFound(f"no run with id {run_id}")
    return _run(summary, queries.integrity(session, run_id).get(run_id, Integrity()) if checked else None)


def overview(session: Session) -> dict:
    """Every run with its accuracy, invalid answers, broken rules, speed and dates; bars of both accuracies."""
    checks = queries.integrity(session)
    runs = [_run(s, checks.get(s.id, Integrity())) for s in queries.run_summaries(session)]
    chart = bar_chart(
        [(f"#{r['id']} {r['name']}", (r["per_question_accuracy"], r["group_accuracy"])) for r in runs],
        ("per-question accuracy", "whole-group accuracy"),
    )
    return {"title": "Runs", "runs": runs, "chart": chart}


def run_page(session: Session, run_id: int, group_limit: int = 50) -> dict:
    """One run: its summary, accuracy per question id (links to each) and its newest groups."""
    run = _one_run(session, run_id, checked=True)
    report = queries.run_report(session, run_id)
    questions = [
        {
            "id": qid,
            "kind": q.kind,
            "count": q.count,
            "labelled": q.labelled,
            "correct": q.correct,
            "accuracy": q.accuracy,
        }
        for qid, q in report.questions.items()
    ]
    return {
        "title": f"Run #{run_id}",
        "run": run,
        "questions": questions,
        "groups": [vars(g) for g in queries.latest_groups(session, run_id, group_limit)],
        "group_limit": group_limit,
    }


def _axis(schema: AnswerSchema | None, seen: set[str]) -> list[str]:
    """Confusion axis: the schema's values in their order and text form, then any other value seen."""
    declared: list[str] = []
    if schema is not None:
        kind = kind_of(schema)
        declared = [kind.text(v) for v in kind.enumerated_values(schema) or []]
    return declared + sorted(seen - set(declared))


def question_page(session: Session, run_id: int, question_id: str, error_limit: int = 200) -> dict:
    """One question id of a run: its accuracy, confusion matrix (enum and boolean) and wrong answers."""
    run = _one_run(session, run_id)
    report = queries.run_report(session, run_id)
    question = report.questions.get(question_id)
    if question is None:
        raise PageNotFound(f"run {run_id} has no question {question_id!r}")
    matrix = None
    if question.confusion is not None:
        cells = question.confusion
        schema = queries.question_schema(session, run_id, question_id)
        labels = _axis(schema, set(cells))
        answers = _axis(schema, {a for row in cells.values() for a in row})
        matrix = {
            "answers": answers,
            "rows": [
                {
                    "label": label,
                    "cells": [{"count": cells.get(label, {}).get(a, 0), "right": a == label} for a in answers],
                    "total": sum(cells.get(label, {}).values()),
                }
                for label in labels
            ],
            "largest": max((n for row in cells.values() for n in row.values()), default=0),
        }
    wrong_total, wrong = queries.wrong_answers(session, run_id, question_id, error_limit)
    return {
        "title": f"{question_id} · run #{run_id}",
        "run": run,
        "question_id": question_id,
        "question": {
            "kind": question.kind,
            "count": question.count,
            "labelled": question.labelled,
            "correct": question.correct,
            "accuracy": question.accuracy,
        },
        "confusion": matrix,
        "errors": [vars(w) for w in wrong],
        "errors_total": wrong_total,
    }


def calibration_page(session: Session, run_id: int) -> dict:
    """A run's labelled answers the model chose, binned by confidence: accuracy per bin, the diagram, expected
    calibration error; beside them, the rule- and schema-forced answers left out."""
    run = _one_run(session, run_id)
    bins = queries.calibration(session, run_id)
    total = sum(b.count for b in bins)
    ece = (
        sum(b.count * abs(b.accuracy - b.mean_confidence) for b in bins if b.count) / total if total else None
    )
    return {
        "title": f"Calibration · run #{run_id}",
        "run": run,
        "bins": [
            {
                "low": b.low,
                "high": b.high,
                "count": b.count,
                "correct": b.correct,
                "accuracy": b.accuracy,
                "mean_confidence": b.mean_confidence,
            }
            for b in bins
        ],
        "labelled": total,
        "expected_calibration_error": ece,
        "chart": reliability_diagram(bins),
        "forced": [
            {"fixed_by": f.fixed_by, "count": f.count, "correct": f.correct, "accuracy": f.accuracy}
            for f in queries.forced_answers(session, run_id)
        ],
    }


def _pair(a: float | None, b: float | None) -> dict:
    """Two runs' accuracies and their difference (b − a), None where either is undefined."""
    return {"a": a, "b": b, "difference": None if a is None or b is None else b - a}


def compare_page(session: Session, a: int | None, b: int | None) -> dict:
    """Two runs side by side: accuracy per question id, its difference (b − a), and whole-group accuracy."""
    summaries = queries.run_summaries(session)
    by_id = {s.id: _run(s) for s in summaries}
    choices = [{"id": run_id, "label": run["label"]} for run_id, run in by_id.items()]
    context: dict = {"title": "Compare runs", "choices": choices, "a": a, "b": b, "problem": None, "comparison": None}
    if a is None or b is None:
        return context
    missing = [str(run_id) for run_id in (a, b) if run_id not in by_id]
    if missing:
        context["problem"] = f"no run with id {', '.join(missing)}"
        return context
    report_a, report_b = queries.run_report(session, a), queries.run_report(session, b)
    rows = []
    for question_id in sorted(report_a.questions.keys() | report_b.questions.keys()):
        qa, qb = report_a.questions.get(question_id), report_b.questions.get(question_id)
        rows.append(
            {
                "question_id": question_id,
                **_pair(None if qa is None else qa.accuracy, None if qb is None else qb.accuracy),
                "labelled_a": qa.labelled if qa else 0,
                "labelled_b": qb.labelled if qb else 0,
            }
        )
    group = _pair(report_a.group_accuracy, report_b.group_accuracy)
    run_a, run_b = by_id[a], by_id[b]
    context["comparison"] = {
        "run_a": run_a,
        "run_b": run_b,
        "questions": rows,
        "per_question_accuracy": _pair(report_a.per_question_accuracy, report_b.per_question_accuracy),
        "group_accuracy": group,
        "chart": bar_chart(
            [(r["question_id"], (r["a"], r["b"])) for r in rows] + [("whole group", (group["a"], group["b"]))],
            (f"A: #{a} {run_a['name']}", f"B: #{b} {run_b['name']}"),
        ),
    }
    return context


# One colour per question slot (a request has at most 8 questions): light enough for dark text on top.
EVIDENCE_COLOURS = ("#ffe08a", "#a9d4ff", "#b8e6ad", "#ffc4d6", "#d8c7ff", "#ffcf9f", "#a8e8df", "#e3e3a6")
STRIPE_PX = 6  # width of each colour's stripe where the evidence of several questions overlaps


def evidence_background(colours: Sequence[str]) -> str:
    """The CSS background of a piece of evidence: its question's colour, or diagonal stripes of each
    covering question's colour where evidence overlaps."""
    if len(colours) == 1:
        return colours[0]
    stops = ", ".join(f"{c} {i * STRIPE_PX}px {(i + 1) * STRIPE_PX}px" for i, c in enumerate(colours))
    return f"repeating-linear-gradient(135deg, {stops})"


def evidence_view(text: str, questions: Sequence[dict]) -> dict:
    """The document cut at every evidence edge, each marked piece with its questions and their colours,
    and the legend: each question with its colour and how many spans it marks.

    `questions` are the page's question rows (id, text, colour, evidence), in the decision's order.
    """
    colour = {q["id"]: q["colour"] for q in questions}
    order = {q["id"]: i for i, q in enumerate(questions)}
    pieces = highlight(text, [(e["start"], e["end"], q["id"]) for q in questions for e in q["evidence"]])
    for piece in pieces:
        piece["questions"] = sorted(piece["questions"], key=order.__getitem__)
        piece["colours"] = [colour[q] for q in piece["questions"]]
        piece["background"] = evidence_background(piece["colours"]) if piece["questions"] else None
    legend = [
        {"id": q["id"], "text": q["text"], "colour": colour[q["id"]], "spans": len(q["evidence"])} for q in questions
    ]
    return {"pieces": pieces, "legend": legend, "overlaps": any(len(p["questions"]) > 1 for p in pieces)}


def highlight(text: str, spans: Sequence[tuple[int, int, str]]) -> list[dict]:
    """The text cut into pieces at every span edge; each piece lists the question ids whose evidence covers it.

    Offsets are clamped to the text; empty spans are dropped. The pieces join back to `text`.
    """
    spans = [(max(0, s), min(len(text), e), q) for s, e, q in spans]
    spans = [(s, e, q) for s, e, q in spans if s < e]
    edges = sorted({0, len(text), *(s for s, _, _ in spans), *(e for _, e, _ in spans)})
    pieces: list[dict] = []
    for start, end in zip(edges, edges[1:]):
        covering = sorted({q for s, e, q in spans if s <= start and end <= e})
        if pieces and pieces[-1]["questions"] == covering:
            pieces[-1]["text"] += text[start:end]
            pieces[-1]["end"] = end
        else:
            pieces.append({"text": text[start:end], "start": start, "end": end, "questions": covering})
    return pieces


def _status(answer: Answer | None, schema: AnswerSchema, question_id: str, labels: dict) -> str:
    """right, wrong or unlabelled, as the store's report counts them (`same_answer`: True is not 1)."""
    if question_id not in labels:
        return "unlabelled"
    right = answer is not None and same_answer(schema, answer.value, labels[question_id])
    return "right" if right else "wrong"


def _rule_text(rule: Rule) -> str:
    def side(clauses: dict) -> str:
        return " and ".join(f"{q} is {' or '.join(value_text(v) for v in values)}" for q, values in clauses.items())

    return f"if {side(rule.if_)} then {side(rule.then)}"


def decision_page(session: Session, decision_id: str) -> dict:
    """One stored group: the document with evidence marked, each answer against its label, the rules."""
    stored = load_decision(session, decision_id)
    answers = {a.id: a for a in stored.answers}
    questions = []
    for slot, question in enumerate(stored.questions):
        answer = answers.get(question.id)
        label = stored.labels.get(question.id)
        questions.append(
            {
                "id": question.id,
                "text": question.text,
                "kind": kind_of(question.schema).name,
                "colour": EVIDENCE_COLOURS[slot % len(EVIDENCE_COLOURS)],
                "answer": None if answer is None else answer.value,
                "confidence": None if answer is None else answer.confidence,
                "step": None if answer is None else answer.step,
                "label": label,
                "status": _status(answer, question.schema, question.id, stored.labels),
                "evidence": [
                    {"start": e.start, "end": e.end, "text": e.text} for e in (answer.evidence or [] if answer else [])
                ],
            }
        )
    values = [answers[q.id].value for q in stored.questions if q.id in answers]
    checkable = len(values) == len(stored.questions) and all(
        kind_of(q.schema).value_problem(q.schema, v) is None for q, v in zip(stored.questions, values)
    )
    broken: set[int] = set()
    if checkable and stored.rules:
        rules = RuleSet.compile([q.schema for q in stored.questions], [q.id for q in stored.questions], stored.rules)
        broken = set(rules.violations(values))
    text = stored.document.text
    evidence = None if text is None else evidence_view(text, questions)
    return {
        "title": f"Decision {decision_id}",
        "decision": {
            "id": stored.id,
            "created_at": stored.created_at,
            "run": stored.run,
            "run_id": queries.run_of_group(session, decision_id),
            "mode": stored.mode,
            "model": stored.model,
            "model_version": stored.model_version,
            "dataset": stored.dataset,
            "external_id": stored.external_id,
            "steps": stored.steps,
            "timings_ms": stored.timings_ms,
        },
        "document": {
            "title": stored.document.title,
            "sha256": stored.document.sha256,
            "chars": stored.document.chars,
            "stored": text is not None,
            "pieces": None if evidence is None else evidence["pieces"],
            "overlaps": evidence is not None and evidence["overlaps"],
        },
        "legend": None if evidence is None else evidence["legend"],
        "questions": questions,
        "rules": [{"text": _rule_text(rule), "broken": i in broken} for i, rule in enumerate(stored.rules)],
        "rules_checked": checkable,
    }
