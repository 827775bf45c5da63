"""The tables of the decision store, as SQLAlchemy 2.0 typed ORM classes.

Types are portable (String, Text, Integer, Float, DateTime) so one schema serves SQLite
and PostgreSQL. JSON payloads are stored as canonical JSON text. Each answer and label
also keeps `value_key`, its question kind's answer key (`decision_engine.kinds`), so
correctness is a plain string comparison in SQL that agrees with the dashboard and
evaluation. The tables are created by the Alembic migrations only.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import CheckConstraint, DateTime, Float, ForeignKey, Integer, MetaData, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from ..kinds import built_in_names

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SCOPES = ("decide", "label", "read", "admin")
FIXED_BY = ("model", "rule", "schema")  # what settled an answer (`decision_engine.types.FixedBy`)
KINDS = built_in_names()  # the answer kinds questions.kind admits; a new one needs a migration of the CHECK


def utcnow() -> dt.datetime:
    """The current time, timezone-aware in UTC."""
    return dt.datetime.now(dt.UTC)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    """Declarative base whose constraint names are stable, so migrations can refer to them."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class ApiKey(Base):
    """A service API key; only the SHA-256 of the key is kept."""

    __tablename__ = "api_keys"
    __table_args__ = (CheckConstraint(_one_of("scope", SCOPES), name="scope"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    prefix: Mapped[str] = mapped_column(String(8))  # first characters of the key, to tell keys apart
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 hex of the whole key
    scope: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))  # None: never
    last_used_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))  # to the minute, not every request


class Run(Base):
    """What produced a set of decisions: a named run of one model version in one mode, on a dataset."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("name", "model", "model_version", "mode", "dataset"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    model: Mapped[str] = mapped_column(String(200))
    model_version: Mapped[str] = mapped_column(String(200))
    mode: Mapped[str] = mapped_column(String(16))
    dataset: Mapped[str] = mapped_column(String(200))  # "" when none, so the unique constraint holds
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Document(Base):
    """A document, deduplicated by the SHA-256 of its text; the text itself is optional."""

    __tablename__ = "documents"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    chars: Mapped[int] = mapped_column(Integer)
    text: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DecisionGroup(Base):
    """One decided request: up to 8 linked questions about one document."""

    __tablename__ = "decision_groups"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: uuid.uuid4().hex)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"), index=True)
    external_id: Mapped[str | None] = mapped_column(String(200))
    document_ref: Mapped[str | None] = mapped_column(String(200), index=True)  # the request's document.id
    # "{api key id or '-'}:{Idempotency-Key}"; unique, so a retried request cannot be stored twice
    idempotency_scope: Mapped[str | None] = mapped_column(String(320), unique=True)
    request_sha256: Mapped[str] = mapped_column(String(64))  # tells a reused key with another body
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"))
    steps: Mapped[int] = mapped_column(Integer)
    rules: Mapped[str] = mapped_column(Text)  # JSON list of rules
    options: Mapped[str] = mapped_column(Text)  # JSON decoding options
    timings: Mapped[str] = mapped_column(Text)  # JSON {stage: milliseconds}
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)

    run: Mapped[Run] = relationship()
    document: Mapped[Document] = relationship()
    questions: Mapped[list[Question]] = relationship(order_by="Question.position")


class Question(Base):
    """One question of a group, in request order."""

    __tablename__ = "questions"
    # The unique (group_id, position) index also serves lookups by group.
    __table_args__ = (
        UniqueConstraint("group_id", "position"),
        CheckConstraint(_one_of("kind", KINDS), name="kind"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("decision_groups.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    question_id: Mapped[str] = mapped_column(String(64))  # the client's id
    text: Mapped[str] = mapped_column(Text)
    schema: Mapped[str] = mapped_column(Text)  # JSON answer schema
    kind: Mapped[str] = mapped_column(String(16))

    answer: Mapped[Answer | None] = relationship()
    label: Mapped[Label | None] = relationship()


class Answer(Base):
    """The decided value of one question."""

    __tablename__ = "answers"
    __table_args__ = (CheckConstraint(_one_of("fixed_by", FIXED_BY), name="fixed_by"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_pk: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), unique=True)
    value_json: Mapped[str] = mapped_column(Text)
    value_key: Mapped[str] = mapped_column(Text)  # the kind's answer key: equal keys, same answer
    confidence: Mapped[float] = mapped_column(Float)
    step: Mapped[int] = mapped_column(Integer)
    fixed_by: Mapped[str] = mapped_column(String(8))  # model, rule or schema
    evidence: Mapped[str | None] = mapped_column(Text)  # JSON list of evidence spans


class Label(Base):
    """The current human label of one question (the last one written)."""

    __tablename__ = "labels"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_pk: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), unique=True)
    value_json: Mapped[str] = mapped_column(Text)
    value_key: Mapped[str] = mapped_column(Text)  # the kind's answer key, compared with the answer's
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LabelHistory(Base):
    """Every label ever written, oldest first."""

    __tablename__ = "label_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_pk: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), index=True)
    value_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"))
