"""Finding stored decisions and runs: filtered pages of decisions with an opaque cursor, runs with counts."""

from __future__ import annotations

import base64
import binascii
import datetime as dt

import msgspec
from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from ..errors import RequestError
from ..types import Answer, Evidence, Value
from . import schema as db
from .moments import as_utc
from .records import DecisionFilters, DecisionPage, DecisionSummary, RunList, RunSummary, StoredDocument

MAX_PAGE = 1000  # decisions per page at most
DEFAULT_PAGE = 100


def encode_cursor(created_at: dt.datetime, decision_id: str) -> str:
    """The position after one decision in the newest-first order, as URL-safe text."""
    raw = msgspec.json.encode([as_utc(created_at).isoformat(), decision_id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, str]:
    """(created_at, id) of a cursor `encode_cursor` made; RequestError naming `cursor` for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        moment, decision_id = msgspec.json.decode(raw, type=tuple[str, str])
        return as_utc(dt.datetime.fromisoformat(moment)), decision_id
    except (binascii.Error, msgspec.DecodeError, ValueError, OverflowError):
        raise RequestError("cursor", "not a cursor this service gave; pass back next_cursor as it came") from None


def _conditions(filters: DecisionFilters) -> list:
    """WHERE clauses over decision_groups joined with runs."""
    conditions = []
    for value, column in (
        (filters.run, db.Run.name),
        (filters.dataset, db.Run.dataset),
        (filters.model, db.Run.model),
        (filters.mode, db.Run.mode),
        (filters.external_id, db.DecisionGroup.external_id),
        (filters.document_id, db.DecisionGroup.document_ref),
    ):
        if value:
            conditions.append(column == value)
    if filters.since is not None:
        conditions.append(db.DecisionGroup.created_at >= as_utc(filters.since))
    if filters.until is not None:
        conditions.append(db.DecisionGroup.created_at < as_utc(filters.until))
    return conditions


def list_decisions(
    session: Session, filters: DecisionFilters, limit: int = DEFAULT_PAGE, cursor: str | None = None
) -> DecisionPage:
    """One page of the decisions matching `filters`, newest first (ties broken by id), after `cursor`."""
    if not 1 <= limit <= MAX_PAGE:
        raise RequestError("limit", f"must be 1 to {MAX_PAGE}, not {limit}")
    conditions = _conditions(filters)
    if cursor:
        created_at, decision_id = decode_cursor(cursor)
        conditions.append(
            or_(
                db.DecisionGroup.created_at < created_at,
                and_(db.DecisionGroup.created_at == created_at, db.DecisionGroup.id < decision_id),
            )
        )
    rows = session.execute(
        select(
            db.DecisionGroup.id,
            db.DecisionGroup.created_at,
            db.DecisionGroup.external_id,
            db.DecisionGroup.document_ref,
            db.Run.name,
            db.Run.mode,
            db.Run.model,
            db.Run.model_version,
            db.Run.dataset,
            db.Document.sha256,
            db.Document.chars,
            db.Document.title,
        )
        .join(db.Run, db.Run.id == db.DecisionGroup.run_id)
        .join(db.Document, db.Document.id == db.DecisionGroup.document_id)
        .where(*conditions)
        .order_by(db.DecisionGroup.created_at.desc(), db.DecisionGroup.id.desc())
        .limit(limit + 1)  # one more tells whether another page follows
    ).all()
    more, rows = len(rows) > limit, rows[:limit]
    answers, labels = _answers_and_labels(session, [row.id for row in rows])
    items = [
        DecisionSummary(
            id=row.id,
            created_at=as_utc(row.created_at),
            run=row.name,
            mode=row.mode,
            model=row.model,
            model_version=row.model_version,
            document=StoredDocument(sha256=row.sha256, chars=row.chars, title=row.title, id=row.document_ref),
            answers=answers.get(row.id, []),
            labels=labels.get(row.id, {}),
            dataset=row.dataset or None,
            external_id=row.external_id,
        )
        for row in rows
    ]
    last = rows[-1] if more else None
    return DecisionPage(items=items, next_cursor=None if last is None else encode_cursor(last.created_at, last.id))


def _answers_and_labels(
    session: Session, group_ids: list[str]
) -> tuple[dict[str, list[Answer]], dict[str, dict[str, Value]]]:
    """Per group id: its answers in question order, and its current labels by question id."""
    answers: dict[str, list[Answer]] = {}
    labels: dict[str, dict[str, Value]] = {}
    if not group_ids:
        return answers, labels
    rows = session.execute(
        select(
            db.Question.group_id,
            db.Question.question_id,
            db.Answer.value_json,
            db.Answer.confidence,
            db.Answer.step,
            db.Answer.fixed_by,
            db.Answer.evidence,
            db.Label.value_json.label("label_json"),
        )
        .outerjoin(db.Answer, db.Answer.question_pk == db.Question.id)
        .outerjoin(db.Label, db.Label.question_pk == db.Question.id)
        .where(db.Question.group_id.in_(group_ids))
        .order_by(db.Question.group_id, db.Question.position)
    ).all()
    for row in rows:
        if row.value_json is not None:
            answers.setdefault(row.group_id, []).append(
                Answer(
                    id=row.question_id,
                    value=msgspec.json.decode(row.value_json, type=Value),
                    confidence=row.confidence,
                    step=row.step,
                    fixed_by=row.fixed_by,
                    evidence=None if row.evidence is None else msgspec.json.decode(row.evidence, type=list[Evidence]),
                )
            )
        if row.label_json is not None:
            labels.setdefault(row.group_id, {})[row.question_id] = msgspec.json.decode(row.label_json, type=Value)
    return answers, labels


def list_runs(session: Session) -> RunList:
    """Every run with its decisions, questions and labelled questions counted in SQL, newest first."""
    groups = (
        select(
            db.DecisionGroup.run_id,
            func.count(db.DecisionGroup.id).label("decisions"),
            func.max(db.DecisionGroup.created_at).label("last_at"),
        )
        .group_by(db.DecisionGroup.run_id)
        .subquery()
    )
    questions = (
        select(
            db.DecisionGroup.run_id,
            func.count(db.Question.id).label("questions"),
            func.count(db.Label.id).label("labelled"),
        )
        .join(db.Question, db.Question.group_id == db.DecisionGroup.id)
        .outerjoin(db.Label, db.Label.question_pk == db.Question.id)
        .group_by(db.DecisionGroup.run_id)
        .subquery()
    )
    rows = session.execute(
        select(
            db.Run,
            func.coalesce(groups.c.decisions, 0),
            func.coalesce(questions.c.questions, 0),
            func.coalesce(questions.c.labelled, 0),
            groups.c.last_at,
        )
        .outerjoin(groups, groups.c.run_id == db.Run.id)
        .outerjoin(questions, questions.c.run_id == db.Run.id)
        .order_by(db.Run.created_at.desc(), db.Run.id.desc())
    ).all()
    return RunList(
        items=[
            RunSummary(
                id=run.id,
                name=run.name,
                model=run.model,
                model_version=run.model_version,
                mode=run.mode,
                created_at=as_utc(run.created_at),
                decisions=int(decisions),
                questions=int(n_questions),
                labelled=int(labelled),
                dataset=run.dataset or None,
                last_decision_at=as_utc(last_at),
            )
            for run, decisions, n_questions, labelled, last_at in rows
        ]
    )
