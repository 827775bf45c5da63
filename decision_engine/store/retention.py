"""Removing stored decisions: one by id, or every one older than a date (optionally of one run).

A decision goes with its questions, answers, labels and label history; a document goes when no decision
is left that refers to it, so its text does not outlive the decisions about it. Runs stay, with zero
decisions, as the record that they ran.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Select, delete, exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from . import schema as db
from .moments import as_utc
from .recording import DecisionNotFound
from .records import Removed

PRUNE_CHUNK = 500  # decisions removed per transaction, so a large prune never holds the store for long


def delete_decision(session: Session, decision_id: str) -> Removed:
    """Remove one decision and commit; `recording.DecisionNotFound` when there is none with this id."""
    removed = _remove(session, [decision_id])
    if not removed.decisions:
        raise DecisionNotFound(decision_id)
    return removed


def prune(session: Session, before: dt.datetime, run: str | None = None, dry_run: bool = False) -> Removed:
    """Remove every decision stored before `before` (of runs named `run`, if given), committing in chunks.
    With `dry_run`, count what would go and change nothing."""
    chosen = select(db.DecisionGroup.id).where(db.DecisionGroup.created_at < as_utc(before))
    if run is not None:
        chosen = chosen.join(db.Run, db.Run.id == db.DecisionGroup.run_id).where(db.Run.name == run)
    if dry_run:
        counted = _count(session, chosen)
        session.rollback()
        return counted
    total = Removed(decisions=0, questions=0, answers=0, labels=0, documents=0)
    while ids := list(session.scalars(chosen.order_by(db.DecisionGroup.id).limit(PRUNE_CHUNK))):
        step = _remove(session, ids)
        total = Removed(*(getattr(total, f) + getattr(step, f) for f in Removed.__struct_fields__))
    session.commit()  # ends the last read
    return total


def _count(session: Session, chosen: list[str] | Select) -> Removed:
    """What removing the decisions `chosen` (ids, or a SELECT of them) takes with it, counted in SQL;
    a document counts when no decision outside `chosen` refers to it."""
    questions = select(db.Question.id).where(db.Question.group_id.in_(chosen))
    n_questions, n_answers, n_labels = session.execute(
        select(func.count(db.Question.id), func.count(db.Answer.id), func.count(db.Label.id))
        .select_from(db.Question)
        .outerjoin(db.Answer, db.Answer.question_pk == db.Question.id)
        .outerjoin(db.Label, db.Label.question_pk == db.Question.id)
        .where(db.Question.id.in_(questions))
    ).one()
    decisions = session.scalar(select(func.count(db.DecisionGroup.id)).where(db.DecisionGroup.id.in_(chosen)))
    other = aliased(db.DecisionGroup)
    documents = session.scalar(
        select(func.count(func.distinct(db.DecisionGroup.document_id))).where(
            db.DecisionGroup.id.in_(chosen),
            ~exists().where(other.document_id == db.DecisionGroup.document_id, other.id.not_in(chosen)),
        )
    )
    return Removed(int(decisions or 0), int(n_questions), int(n_answers), int(n_labels), int(documents or 0))


def _remove(session: Session, group_ids: list[str]) -> Removed:
    """Delete these decisions with everything that hangs off them, then their orphaned documents; commit."""
    try:
        counted = _count(session, group_ids)
        documents = list(session.scalars(select(db.DecisionGroup.document_id).where(db.DecisionGroup.id.in_(group_ids))))
        questions = select(db.Question.id).where(db.Question.group_id.in_(group_ids)).scalar_subquery()
        # Children first, explicitly: the result must not depend on the database enforcing ON DELETE CASCADE.
        deletes = [delete(table).where(table.question_pk.in_(questions)) for table in (db.LabelHistory, db.Label, db.Answer)]
        deletes.append(delete(db.Question).where(db.Question.group_id.in_(group_ids)))
        deletes.append(delete(db.DecisionGroup).where(db.DecisionGroup.id.in_(group_ids)))
        for statement in deletes:
            session.execute(statement.execution_options(synchronize_session=False))
        gone = remove_orphans(session, documents)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return Removed(counted.decisions, counted.questions, counted.answers, counted.labels, gone)


def remove_orphans(session: Session, document_ids: list[int]) -> int:
    """Delete those of these documents no decision refers to; how many went.

    A decision being stored at the same moment locks its document first (`recording._document_id`), so
    it either keeps the document or, when it already committed, makes this delete fail and be skipped.
    """
    if not document_ids:
        return 0
    orphaned = delete(db.Document).where(
        db.Document.id.in_(set(document_ids)),
        ~exists().where(db.DecisionGroup.document_id == db.Document.id),
    )
    try:
        with session.begin_nested():
            return session.execute(orphaned.execution_options(synchronize_session=False)).rowcount or 0
    except IntegrityError:  # a decision referring to one of them committed meanwhile: keep them all
        return 0
