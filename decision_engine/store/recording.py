"""Writing decided requests and their labels to the store, and reading them back."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload, selectinload

from ..errors import RequestError
from ..types import Answer, AnswerSchema, DecisionRequest, DecisionResponse, Document, Evidence, Question, Rule, Value
from ..kinds import AnswerKind, kind_of
from . import schema as db
from .moments import as_utc
from .records import StoredDecision, StoredDocument
from .upsert import insert_for


class DecisionNotFound(LookupError):
    """No stored decision has this id."""


class IdempotencyConflict(ValueError):
    """An idempotency key was reused with a different request body."""


def request_fingerprint(request: DecisionRequest) -> str:
    """SHA-256 hex of the request's canonical JSON; tells a retried request from a different one."""
    return hashlib.sha256(msgspec.json.encode(request)).hexdigest()


def _encode(value: object) -> str:
    return msgspec.json.encode(value).decode()


def _idempotency_scope(idempotency_key: str, api_key_id: int | None) -> str:
    return f"{api_key_id if api_key_id is not None else '-'}:{idempotency_key}"


@dataclass(frozen=True)
class Filing:
    """Where a decision is filed: part of what an idempotent retry must repeat exactly."""

    run: str = "api"
    dataset: str | None = None
    external_id: str | None = None


def find_idempotent(
    session: Session,
    idempotency_key: str,
    api_key_id: int | None,
    request: DecisionRequest | None = None,
    filing: Filing | None = None,
) -> str | None:
    """The id of the decision stored under this idempotency key (per API key), if any; given the
    retried `request` (and its `filing`), raises IdempotencyConflict when the key holds another one."""
    scope = _idempotency_scope(idempotency_key, api_key_id)
    if request is not None:
        return _replayed(session, scope, request_fingerprint(request), filing)
    return session.scalar(select(db.DecisionGroup.id).where(db.DecisionGroup.idempotency_scope == scope))


def _replayed(session: Session, scope: str, fingerprint: str, filing: Filing | None) -> str | None:
    """The id stored under `scope`, None if there is none; raises if it holds another request or filing."""
    row = session.execute(
        select(db.DecisionGroup.id, db.DecisionGroup.request_sha256, db.DecisionGroup.external_id, db.Run.name, db.Run.dataset)
        .join(db.Run, db.Run.id == db.DecisionGroup.run_id)
        .where(db.DecisionGroup.idempotency_scope == scope)
    ).one_or_none()
    if row is None:
        return None
    stored = Filing(run=row.name, dataset=row.dataset or None, external_id=row.external_id)
    differs = "request" if row.request_sha256 != fingerprint else filing and _first_difference(stored, filing)
    if differs is not None:
        key = scope.split(":", 1)[1]
        raise IdempotencyConflict(
            f"idempotency key {key!r} was already used for a different request ({row.id}; its {differs} differs)"
        )
    return row.id


def _first_difference(stored: Filing, given: Filing) -> str | None:
    for name in ("run", "dataset", "external_id"):
        if getattr(stored, name) != getattr(given, name):
            return name
    return None


def _stored_kind(schema: AnswerSchema) -> AnswerKind:
    """The schema's kind, if the store's schema admits it (a new kind needs a migration first)."""
    kind = kind_of(schema)
    if kind.name not in db.KINDS:
        raise ValueError(f"answer kind {kind.name!r} cannot be stored: the store knows {list(db.KINDS)}")
    return kind


def _checked_labels(
    schemas: dict[str, AnswerSchema], labels: object, decision_id: str
) -> dict[str, tuple[str, str]]:
    """{question id: (canonical JSON, answer key) of the label}, or RequestError naming the first bad label."""
    if not isinstance(labels, dict) or not labels:
        raise RequestError("labels", "give at least one label, as {question id: value}")
    encoded = {}
    for question_id, value in labels.items():
        field = f"labels.{question_id}"
        if question_id not in schemas:
            raise RequestError(field, f"no question with this id in decision {decision_id}")
        kind = kind_of(schemas[question_id])
        problem = kind.value_problem(schemas[question_id], value)
        if problem is not None:
            raise RequestError(field, problem)
        encoded[question_id] = (_encode(value), kind.answer_key(value))
    return encoded


def record_decision(
    session: Session,
    request: DecisionRequest,
    response: DecisionResponse,
    *,
    run: str = "api",
    dataset: str | None = None,
    external_id: str | None = None,
    model_version: str = "",
    idempotency_key: str | None = None,
    api_key_id: int | None = None,
    store_text: bool = True,
    labels: dict[str, object] | None = None,
) -> tuple[str, bool]:
    """Store a decided request and commit; returns (decision id, whether it was newly stored).

    With an idempotency key, a request already stored under it is not stored again: its id
    comes back with False, or IdempotencyConflict when that key was used for another body.
    """
    fingerprint = request_fingerprint(request)
    filing = Filing(run=run, dataset=dataset or None, external_id=external_id)
    scope = None if idempotency_key is None else _idempotency_scope(idempotency_key, api_key_id)
    if scope is not None and (earlier := _replayed(session, scope, fingerprint, filing)) is not None:
        session.commit()  # ends the read transaction
        return earlier, False
    decision_id = uuid.uuid4().hex
    schemas = {q.id: q.schema for q in request.questions}
    encoded_labels = _checked_labels(schemas, labels, decision_id) if labels else {}
    answers = {a.id: a for a in response.answers}
    missing = [q.id for q in request.questions if q.id not in answers]
    if missing:
        raise ValueError(f"the response has no answer for question {missing[0]!r}")
    kinds = [_stored_kind(q.schema) for q in request.questions]

    now = db.utcnow()
    try:
        group = db.DecisionGroup(
            id=decision_id,
            run_id=_run_id(session, run, response.model, model_version, response.mode, dataset or ""),
            document_id=_document_id(session, request.document, store_text),
            external_id=external_id,
            document_ref=request.document.id,
            idempotency_scope=scope,
            request_sha256=fingerprint,
            api_key_id=api_key_id,
            steps=response.steps,
            rules=_encode(request.rules),
            options=_encode(request.options),
            timings=_encode(response.timings_ms),
            created_at=now,
        )
        for position, (question, kind) in enumerate(zip(request.questions, kinds)):
            answer = answers[question.id]
            row = db.Question(
                position=position,
                question_id=question.id,
                text=question.text,
                schema=_encode(question.schema),
                kind=kind.name,
            )
            row.answer = db.Answer(
                value_json=_encode(answer.value),
                value_key=kind.answer_key(answer.value),
                confidence=answer.confidence,
                step=answer.step,
                fixed_by=answer.fixed_by,
                evidence=None if answer.evidence is None else _encode(answer.evidence),
            )
            group.questions.append(row)
        session.add(group)
        session.flush()
        if encoded_labels:
            by_id = {row.question_id: row.id for row in group.questions}
            _write_labels(session, ((by_id[q], value) for q, value in encoded_labels.items()), api_key_id, now)
        session.commit()
    except IntegrityError:
        session.rollback()
        winner = None if scope is None else _replayed(session, scope, fingerprint, filing)
        if winner is None:
            raise
        session.commit()
        return winner, False  # a concurrent request with the same key was stored first
    except BaseException:
        session.rollback()
        raise
    return decision_id, True


def _run_id(session: Session, name: str, model: str, model_version: str, mode: str, dataset: str) -> int:
    """Get or create the run; concurrent creators end up with the same row."""
    key = {"name": name, "model": model, "model_version": model_version, "mode": mode, "dataset": dataset}
    table = db.Run.__table__
    insert = insert_for(session, table).values(**key, created_at=db.utcnow())
    session.execute(insert.on_conflict_do_nothing(index_elements=list(key)))
    return session.scalars(select(db.Run.id).filter_by(**key)).one()


def _document_id(session: Session, document: Document, store_text: bool) -> int:
    """Get or create the document by the SHA-256 of its text; fills in text stored without it before."""
    sha = hashlib.sha256(document.text.encode()).hexdigest()
    text, title = (document.text, document.title) if store_text else (None, None)
    upsert = insert_for(session, db.Document.__table__).values(
        sha256=sha, chars=len(document.text), text=text, title=title, created_at=db.utcnow()
    )
    # A no-op update rather than DO NOTHING: it locks the row until this decision commits, so a
    # concurrent delete or prune cannot remove the document in between (`retention.remove_orphans`).
    session.execute(upsert.on_conflict_do_update(index_elements=["sha256"], set_={"chars": upsert.excluded.chars}))
    row = session.execute(select(db.Document.id, db.Document.text, db.Document.title).filter_by(sha256=sha)).one()
    if store_text and row.text is None:
        session.execute(
            update(db.Document)
            .where(db.Document.id == row.id, db.Document.text.is_(None))
            .values(text=text, title=row.title if row.title is not None else title)
        )
    return row.id


def _write_labels(
    session: Session, values: Iterable[tuple[int, tuple[str, str]]], api_key_id: int | None, now: dt.datetime
) -> None:
    """Upsert the current labels (last write wins) and append each write to the history.

    `values` holds (question pk, (canonical JSON, answer key)) pairs."""
    rows = [{"question_pk": pk, "value_json": value, "value_key": key} for pk, (value, key) in values]
    upsert = insert_for(session, db.Label.__table__)
    upsert = upsert.on_conflict_do_update(
        index_elements=["question_pk"],
        set_={
            "value_json": upsert.excluded.value_json,
            "value_key": upsert.excluded.value_key,
            "updated_at": upsert.excluded.updated_at,
        },
    )
    session.execute(upsert, [{**row, "updated_at": now} for row in rows])
    history = [{"question_pk": row["question_pk"], "value_json": row["value_json"]} for row in rows]
    session.execute(
        insert_for(session, db.LabelHistory.__table__),
        [{**row, "created_at": now, "api_key_id": api_key_id} for row in history],
    )


def apply_labels(
    session: Session, decision_id: str, labels: dict[str, object], api_key_id: int | None = None
) -> StoredDecision:
    """Set labels of a stored decision's questions, all or none, commit, and return the decision."""
    rows = session.execute(
        select(db.Question.id, db.Question.question_id, db.Question.schema).where(db.Question.group_id == decision_id)
    ).all()
    if not rows:
        raise DecisionNotFound(decision_id)
    schemas = {row.question_id: msgspec.json.decode(row.schema, type=AnswerSchema) for row in rows}
    encoded = _checked_labels(schemas, labels, decision_id)
    by_id = {row.question_id: row.id for row in rows}
    try:
        _write_labels(session, ((by_id[q], value) for q, value in encoded.items()), api_key_id, db.utcnow())
        session.commit()
    except IntegrityError:  # the decision was deleted since its questions were read
        session.rollback()
        raise DecisionNotFound(decision_id) from None
    except BaseException:
        session.rollback()
        raise
    return load_decision(session, decision_id)


def load_decision(session: Session, decision_id: str) -> StoredDecision:
    """A stored decision with its current labels; DecisionNotFound if there is none with this id."""
    group = session.scalars(
        select(db.DecisionGroup)
        .where(db.DecisionGroup.id == decision_id)
        .options(
            joinedload(db.DecisionGroup.run),
            joinedload(db.DecisionGroup.document),
            selectinload(db.DecisionGroup.questions).options(
                joinedload(db.Question.answer), joinedload(db.Question.label)
            ),
        )
        .execution_options(populate_existing=True)  # labels may have changed since the session last saw them
    ).one_or_none()
    if group is None:
        raise DecisionNotFound(decision_id)
    document = group.document
    return StoredDecision(
        id=group.id,
        created_at=as_utc(group.created_at),
        run=group.run.name,
        mode=group.run.mode,
        model=group.run.model,
        model_version=group.run.model_version,
        document=StoredDocument(
            sha256=document.sha256, chars=document.chars, text=document.text, title=document.title, id=group.document_ref
        ),
        questions=[
            Question(id=q.question_id, text=q.text, schema=msgspec.json.decode(q.schema, type=AnswerSchema))
            for q in group.questions
        ],
        rules=msgspec.json.decode(group.rules, type=list[Rule]),
        answers=[_answer(q) for q in group.questions if q.answer is not None],
        steps=group.steps,
        timings_ms=msgspec.json.decode(group.timings, type=dict[str, float]),
        labels={q.question_id: msgspec.json.decode(q.label.value_json, type=Value) for q in group.questions if q.label},
        dataset=group.run.dataset or None,
        external_id=group.external_id,
    )


def _answer(question: db.Question) -> Answer:
    row = question.answer
    return Answer(
        id=question.question_id,
        value=msgspec.json.decode(row.value_json, type=Value),
        confidence=row.confidence,
        step=row.step,
        fixed_by=row.fixed_by,
        evidence=None if row.evidence is None else msgspec.json.decode(row.evidence, type=list[Evidence]),
    )
