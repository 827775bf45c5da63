"""Accuracy of stored answers against their labels, computed by SQL aggregates."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import msgspec
from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from ..kinds import all_kinds, value_text
from . import schema as db
from .moments import as_utc
from .records import AccuracyReport, FixedAccuracy, QuestionAccuracy, ReportFilters



def _conditions(filters: ReportFilters) -> list:
    """WHERE clauses over decision_groups joined with runs."""
    conditions = []
    for value, column in (
        (filters.run, db.Run.name),
        (filters.dataset, db.Run.dataset),
        (filters.model, db.Run.model),
        (filters.mode, db.Run.mode),
    ):
        if value:
            conditions.append(column == value)
    if filters.run_id is not None:
        conditions.append(db.Run.id == filters.run_id)
    if filters.since is not None:
        conditions.append(db.DecisionGroup.created_at >= as_utc(filters.since))
    if filters.until is not None:
        conditions.append(db.DecisionGroup.created_at < as_utc(filters.until))
    return conditions


def _echo(filters: ReportFilters) -> dict[str, str]:
    echoed = {}
    for name in ReportFilters.__struct_fields__:
        value = getattr(filters, name)
        if isinstance(value, dt.datetime):
            echoed[name] = as_utc(value).isoformat()
        elif value:
            echoed[name] = str(value)
    return echoed


def _questions_query(*columns):
    """SELECT `columns` FROM matching groups' questions, with their answers and labels (if any)."""
    return (
        select(*columns)
        .select_from(db.DecisionGroup)
        .join(db.Run, db.Run.id == db.DecisionGroup.run_id)
        .join(db.Question, db.Question.group_id == db.DecisionGroup.id)
        .outerjoin(db.Answer, db.Answer.question_pk == db.Question.id)
        .outerjoin(db.Label, db.Label.question_pk == db.Question.id)
    )


def answer_is_right():
    """1 for a joined question whose label is the same answer as its answer, else 0: their kind's
    answer keys are equal (`decision_engine.kinds.same_answer`, computed when they were stored)."""
    return case((db.Label.value_key == db.Answer.value_key, 1), else_=0)


def correct_answers():
    """How many joined questions have a label equal to their answer."""
    return func.sum(answer_is_right())


def group_scores(conditions: list):
    """Per group matching `conditions`: id, run_id, questions, labelled and correct, as a subquery."""
    return (
        _questions_query(
            db.DecisionGroup.id,
            db.DecisionGroup.run_id,
            func.count(db.Question.id).label("questions"),
            func.count(db.Label.id).label("labelled"),
            correct_answers().label("correct"),
        )
        .where(*conditions)
        .group_by(db.DecisionGroup.id, db.DecisionGroup.run_id)
        .subquery()
    )


def fully_labelled(scores):
    """Whether a row of `group_scores` has a label for every question."""
    return scores.c.labelled == scores.c.questions


def all_correct(scores):
    """Whether a row of `group_scores` is fully labelled and answered entirely right."""
    return and_(fully_labelled(scores), scores.c.correct == scores.c.questions)


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _confusion_kinds() -> tuple[str, ...]:
    """The kinds with few enough values for a confusion table (enum and boolean among the built-in ones)."""
    return tuple(k.name for k in all_kinds() if k.confusion_table)


_JSON_TYPES = {bool: "boolean", int: "number", float: "number", str: "string"}


def _cell_texts(values: dict[str, tuple[str, str]]) -> dict[str, str]:
    """{key: table text} for one question's {answer key: (kind, value JSON)}: Entailment, true, 42.
    Where two keys would read the same (the choice "1" and a stray integer 1), each names its JSON type."""
    decoded = {key: msgspec.json.decode(value_json) for key, (_, value_json) in values.items()}
    texts = {key: value_text(decoded[key], values[key][0]) for key in values}
    shared = Counter(texts.values())
    return {
        key: f"{text} ({_JSON_TYPES.get(type(decoded[key]), 'value')})" if shared[text] > 1 else text
        for key, text in texts.items()
    }


def _confusion(cells) -> dict[str, dict[str, dict[str, int]]]:
    """{question id: {label text: {answer text: count}}} from rows of (question id, kind, label key,
    label JSON, answer key, answer JSON, count); cells are told apart by answer key, not by text."""
    values: dict[str, dict[str, tuple[str, str]]] = {}
    for question_id, kind, label_key, label_json, answer_key, answer_json, _ in cells:
        seen = values.setdefault(question_id, {})
        seen.setdefault(label_key, (kind, label_json))
        seen.setdefault(answer_key, (kind, answer_json))
    texts = {question_id: _cell_texts(seen) for question_id, seen in values.items()}
    confusion: dict[str, dict[str, dict[str, int]]] = {}
    for question_id, _, label_key, _, answer_key, _, count in cells:
        text = texts[question_id]
        row = confusion.setdefault(question_id, {}).setdefault(text[label_key], {})
        row[text[answer_key]] = row.get(text[answer_key], 0) + int(count)
    return confusion


def accuracy_report(session: Session, filters: ReportFilters) -> AccuracyReport:
    """Per-question and whole-group accuracy of the groups matching `filters`."""
    where = _conditions(filters)
    correct = correct_answers()
    per_group = group_scores(where)
    totals = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(case((fully_labelled(per_group), 1), else_=0)), 0),
            func.coalesce(func.sum(case((all_correct(per_group), 1), else_=0)), 0),
            func.coalesce(func.sum(per_group.c.labelled), 0),
            func.coalesce(func.sum(per_group.c.correct), 0),
        ).select_from(per_group)
    ).one()
    groups, groups_labelled, groups_correct, labelled, right = (int(n) for n in totals)

    per_question = session.execute(
        _questions_query(
            db.Question.question_id,
            func.min(db.Question.kind),
            func.max(db.Question.kind),
            func.count(db.Question.id),
            func.count(db.Label.id),
            correct,
        )
        .where(*where)
        .group_by(db.Question.question_id)
        .order_by(db.Question.question_id)
    ).all()
    confusion_cells = session.execute(
        _questions_query(
            db.Question.question_id,
            db.Question.kind,
            db.Label.value_key,
            func.min(db.Label.value_json),
            db.Answer.value_key,
            func.min(db.Answer.value_json),
            func.count(),
        )
        .where(*where, db.Question.kind.in_(_confusion_kinds()), db.Label.id.is_not(None), db.Answer.id.is_not(None))
        .group_by(db.Question.question_id, db.Question.kind, db.Label.value_key, db.Answer.value_key)
        .order_by(db.Question.question_id, db.Question.kind, db.Label.value_key, db.Answer.value_key)
    ).all()
    confusion = _confusion(confusion_cells)
    settled = session.execute(
        _questions_query(db.Answer.fixed_by, func.count(db.Answer.id), func.count(db.Label.id), correct)
        .where(*where, db.Answer.id.is_not(None))
        .group_by(db.Answer.fixed_by)
        .order_by(db.Answer.fixed_by)
    ).all()

    questions = {}
    for question_id, low_kind, high_kind, count, q_labelled, q_correct in per_question:
        q_labelled, q_correct = int(q_labelled), int(q_correct or 0)
        questions[question_id] = QuestionAccuracy(
            count=int(count),
            labelled=q_labelled,
            correct=q_correct,
            accuracy=_ratio(q_correct, q_labelled),
            kind=low_kind if low_kind == high_kind else "mixed",
            confusion=confusion.get(question_id),
        )
    return AccuracyReport(
        groups=groups,
        groups_labelled=groups_labelled,
        questions_labelled=labelled,
        per_question_accuracy=_ratio(right, labelled),
        group_accuracy=_ratio(groups_correct, groups_labelled),
        questions=questions,
        filters=_echo(filters),
        fixed_by={
            by: FixedAccuracy(int(n), int(n_labelled), int(n_correct or 0), _ratio(int(n_correct or 0), int(n_labelled)))
            for by, n, n_labelled, n_correct in settled
        },
    )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(rows: list[tuple[str, ...]], right_from: int = 1) -> list[str]:
    """Columns padded to a common width; columns from `right_from` on are right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(w) if i >= right_from else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def format_report(report: AccuracyReport) -> str:
    """The report as a plain-text table for the terminal."""
    lines = [
        f"groups: {report.groups}  fully labelled: {report.groups_labelled}  "
        f"labelled questions: {report.questions_labelled}",
        f"per-question accuracy: {_score(report.per_question_accuracy)}",
        f"group accuracy:        {_score(report.group_accuracy)}",
    ]
    if report.filters:
        lines.append("filters: " + "  ".join(f"{k}={v}" for k, v in report.filters.items()))
    forced = {by: f for by, f in report.fixed_by.items() if by != "model" and f.answers}
    if forced:
        model = report.fixed_by.get("model")
        lines.append(
            f"answers the model chose: accuracy {_score(model.accuracy if model else None)} over "
            f"{model.labelled if model else 0} labelled; "
            + "  ".join(f"{by}-fixed: {f.answers} ({_score(f.accuracy)})" for by, f in forced.items())
        )
    if report.questions:
        rows = [("question", "kind", "count", "labelled", "correct", "accuracy")]
        for question_id, q in report.questions.items():
            rows.append((question_id, q.kind, str(q.count), str(q.labelled), str(q.correct), _score(q.accuracy)))
        lines += ["", *_table(rows, right_from=2)]
    for question_id, q in report.questions.items():
        if not q.confusion:
            continue
        answers = sorted({answer for row in q.confusion.values() for answer in row})
        rows = [("label \\ answer", *answers)]
        for label in sorted(q.confusion):
            rows.append((label, *(str(q.confusion[label].get(answer, 0)) for answer in answers)))
        lines += ["", f"confusion of {question_id}:", *_table(rows)]
    return "\n".join(lines)
