"""What the dashboard pages read from the store: SQL aggregates, with accuracy from the store's report."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import msgspec
from sqlalchemy import Float, case, cast, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from ..kinds import kind_of
from ..rules import RuleSet
from ..store import schema as db
from ..store.moments import as_utc
from ..store.records import AccuracyReport, ReportFilters
from ..store.reports import accuracy_report, all_correct, answer_is_right, fully_labelled, group_scores
from ..types import AnswerSchema, Rule, Value

CALIBRATION_BINS = 10  # equal-width confidence bins over [0, 1]


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True)
class RunSummary:
    """One run with its counts; accuracy is defined as in `accuracy_report`."""

    id: int
    name: str
    model: str
    model_version: str
    mode: str
    dataset: str
    groups: int
    groups_labelled: int  # groups with a label for every question
    groups_correct: int  # fully labelled groups answered entirely right
    questions_labelled: int
    questions_correct: int
    timed_groups: int  # groups whose timings hold a `total`
    total_ms: float | None  # the sum of those totals
    first: dt.datetime | None
    last: dt.datetime | None

    @property
    def per_question_accuracy(self) -> float | None:
        return _ratio(self.questions_correct, self.questions_labelled)

    @property
    def group_accuracy(self) -> float | None:
        return _ratio(self.groups_correct, self.groups_labelled)

    @property
    def decisions_per_s(self) -> float | None:
        """Groups per second of engine time: timed groups over the sum of their `timings_ms.total`."""
        return self.timed_groups / (self.total_ms / 1000) if self.total_ms else None


def _total_ms(session: Session):
    """`timings_ms.total` of a group, read from its JSON text (NULL when absent)."""
    timings = db.DecisionGroup.timings
    if session.get_bind().dialect.name == "postgresql":
        return cast(cast(timings, JSONB)["total"].astext, Float)
    return cast(func.json_extract(timings, "$.total"), Float)


def run_summaries(session: Session, run_id: int | None = None) -> list[RunSummary]:
    """Every run (or the one with `run_id`), oldest first, with group counts, accuracy, timing and dates."""
    total = _total_ms(session)
    stats = (
        select(
            db.DecisionGroup.run_id,
            func.count().label("groups"),
            func.min(db.DecisionGroup.created_at).label("first"),
            func.max(db.DecisionGroup.created_at).label("last"),
            func.count(total).label("timed"),
            func.sum(total).label("total_ms"),
        )
        .group_by(db.DecisionGroup.run_id)
        .subquery()
    )
    scores = group_scores([] if run_id is None else [db.Run.id == run_id])
    accuracy = (
        select(
            scores.c.run_id,
            func.sum(case((fully_labelled(scores), 1), else_=0)).label("groups_labelled"),
            func.sum(case((all_correct(scores), 1), else_=0)).label("groups_correct"),
            func.sum(scores.c.labelled).label("labelled"),
            func.sum(scores.c.correct).label("correct"),
        )
        .group_by(scores.c.run_id)
        .subquery()
    )
    query = (
        select(
            db.Run,
            stats.c.groups,
            stats.c.first,
            stats.c.last,
            stats.c.timed,
            stats.c.total_ms,
            accuracy.c.groups_labelled,
            accuracy.c.groups_correct,
            accuracy.c.labelled,
            accuracy.c.correct,
        )
        .outerjoin(stats, stats.c.run_id == db.Run.id)
        .outerjoin(accuracy, accuracy.c.run_id == db.Run.id)
        .order_by(db.Run.id)
    )
    if run_id is not None:
        query = query.where(db.Run.id == run_id)
    rows = session.execute(query).all()
    return [
        RunSummary(
            id=run.id,
            name=run.name,
            model=run.model,
            model_version=run.model_version,
            mode=run.mode,
            dataset=run.dataset,
            groups=int(groups or 0),
            groups_labelled=int(labelled_groups or 0),
            groups_correct=int(correct_groups or 0),
            questions_labelled=int(labelled or 0),
            questions_correct=int(correct or 0),
            timed_groups=int(timed or 0),
            total_ms=None if total_ms is None else float(total_ms),
            first=as_utc(first),
            last=as_utc(last),
        )
        for run, groups, first, last, timed, total_ms, labelled_groups, correct_groups, labelled, correct in rows
    ]


def run_summary(session: Session, run_id: int) -> RunSummary | None:
    """One run's summary, None when there is no run with this id."""
    found = run_summaries(session, run_id)
    return found[0] if found else None


def run_report(session: Session, run_id: int) -> AccuracyReport:
    """The store's accuracy report restricted to one run."""
    return accuracy_report(session, ReportFilters(run_id=run_id))


@dataclass(frozen=True)
class Integrity:
    """Stored answers re-checked by the engine's own checks."""

    invalid: int = 0  # answers whose stored value fails its question's schema
    rule_violations: int = 0  # (group, rule) pairs where the stored answers break a stored rule


def integrity(session: Session, run_id: int | None = None) -> dict[int, Integrity]:
    """Per run id: invalid answers and broken rules, found by re-running the schema and rule checks.

    These are not SQL aggregates: the checks are the library's (each kind's `value_problem`, `RuleSet`), so
    each group's answers are streamed once. Groups with an invalid answer are not rule-checked.
    """
    query = (
        select(
            db.DecisionGroup.id,
            db.DecisionGroup.run_id,
            db.DecisionGroup.rules,
            db.Question.question_id,
            db.Question.schema,
            db.Answer.value_json,
        )
        .join(db.Question, db.Question.group_id == db.DecisionGroup.id)
        .outerjoin(db.Answer, db.Answer.question_pk == db.Question.id)
        .order_by(db.DecisionGroup.id, db.Question.position)
    )
    if run_id is not None:
        query = query.where(db.DecisionGroup.run_id == run_id)
    schemas: dict[str, AnswerSchema] = {}
    rule_sets: dict[tuple, RuleSet] = {}
    invalid: dict[int, int] = {}
    broken: dict[int, int] = {}

    def check(run: int, rules_json: str, rows: list) -> None:
        for row in rows:
            if row.schema not in schemas:
                schemas[row.schema] = msgspec.json.decode(row.schema, type=AnswerSchema)
        group_schemas = [schemas[row.schema] for row in rows]
        answered = [(s, msgspec.json.decode(r.value_json)) for s, r in zip(group_schemas, rows) if r.value_json]
        bad = sum(kind_of(s).value_problem(s, v) is not None for s, v in answered)
        invalid[run] = invalid.get(run, 0) + bad
        if bad or len(answered) < len(rows) or rules_json == "[]":
            return
        ids = [row.question_id for row in rows]
        values: list[Value] = [v for _, v in answered]
        key = (rules_json, tuple(ids), tuple(row.schema for row in rows))
        if key not in rule_sets:
            rule_sets[key] = RuleSet.compile(group_schemas, ids, msgspec.json.decode(rules_json, type=list[Rule]))
        broken[run] = broken.get(run, 0) + len(rule_sets[key].violations(values))

    current, rows = None, []
    for row in session.execute(query).yield_per(1000):
        if current is not None and row.id != current.id:
            check(current.run_id, current.rules, rows)
            rows = []
        current = row
        rows.append(row)
    if current is not None:
        check(current.run_id, current.rules, rows)
    return {run: Integrity(invalid.get(run, 0), broken.get(run, 0)) for run in invalid.keys() | broken.keys()}


def question_schema(session: Session, run_id: int, question_id: str) -> AnswerSchema | None:
    """The answer schema of a question id in a run (its first stored group's), None when absent."""
    stored = session.scalar(
        select(db.Question.schema)
        .join(db.DecisionGroup, db.DecisionGroup.id == db.Question.group_id)
        .where(db.DecisionGroup.run_id == run_id, db.Question.question_id == question_id)
        .order_by(db.DecisionGroup.created_at)
        .limit(1)
    )
    return None if stored is None else msgspec.json.decode(stored, type=AnswerSchema)


@dataclass(frozen=True)
class WrongAnswer:
    """A labelled answer that is not the same answer as its label (their answer keys differ)."""

    group_id: str
    external_id: str | None
    created_at: dt.datetime
    answer: Value
    label: Value
    confidence: float


def wrong_answers(session: Session, run_id: int, question_id: str, limit: int = 200) -> tuple[int, list[WrongAnswer]]:
    """How many answers to `question_id` in the run are wrong, and the most confident `limit` of them."""
    condition = (
        db.DecisionGroup.run_id == run_id,
        db.Question.question_id == question_id,
        db.Label.value_key != db.Answer.value_key,
    )
    base = (
        select()
        .select_from(db.DecisionGroup)
        .join(db.Question, db.Question.group_id == db.DecisionGroup.id)
        .join(db.Answer, db.Answer.question_pk == db.Question.id)
        .join(db.Label, db.Label.question_pk == db.Question.id)
        .where(*condition)
    )
    total = session.scalar(base.add_columns(func.count()))
    rows = session.execute(
        base.add_columns(
            db.DecisionGroup.id,
            db.DecisionGroup.external_id,
            db.DecisionGroup.created_at,
            db.Answer.value_json,
            db.Label.value_json,
            db.Answer.confidence,
        )
        .order_by(db.Answer.confidence.desc(), db.DecisionGroup.id)
        .limit(limit)
    ).all()
    return int(total or 0), [
        WrongAnswer(
            group_id=group_id,
            external_id=external_id,
            created_at=as_utc(created_at),
            answer=msgspec.json.decode(answer_json),
            label=msgspec.json.decode(label_json),
            confidence=confidence,
        )
        for group_id, external_id, created_at, answer_json, label_json, confidence in rows
    ]


@dataclass(frozen=True)
class ForcedAnswers:
    """Labelled answers of a run that a rule or the schema forced, and how many of them are right."""

    fixed_by: str  # rule or schema
    count: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.correct, self.count)


def forced_answers(session: Session, run_id: int) -> list[ForcedAnswers]:
    """The labelled answers calibration leaves out, per what forced them (only kinds that occur)."""
    rows = session.execute(
        select(db.Answer.fixed_by, func.count(), func.sum(answer_is_right()))
        .select_from(db.DecisionGroup)
        .join(db.Question, db.Question.group_id == db.DecisionGroup.id)
        .join(db.Answer, db.Answer.question_pk == db.Question.id)
        .join(db.Label, db.Label.question_pk == db.Question.id)
        .where(db.DecisionGroup.run_id == run_id, db.Answer.fixed_by != "model")
        .group_by(db.Answer.fixed_by)
        .order_by(db.Answer.fixed_by)
    ).all()
    return [ForcedAnswers(by, int(n), int(right or 0)) for by, n, right in rows]


@dataclass(frozen=True)
class CalibrationBin:
    """Labelled answers whose confidence falls in [low, high) (the last bin includes 1)."""

    index: int
    low: float
    high: float
    count: int
    correct: int
    mean_confidence: float | None

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.correct, self.count)


def calibration(session: Session, run_id: int, bins: int = CALIBRATION_BINS) -> list[CalibrationBin]:
    """Labelled answers the model chose in a run, per confidence bin: count, correct and mean confidence
    (every bin listed). Answers a rule or the schema forced are left out: see `forced_answers`."""
    confidence = db.Answer.confidence
    # Explicit edges rather than CAST(confidence * bins AS INTEGER): PostgreSQL rounds where SQLite truncates.
    index = case(*((confidence < (i + 1) / bins, i) for i in range(bins - 1)), else_=bins - 1)
    answers = (
        select(index.label("bin"), confidence.label("confidence"), answer_is_right().label("right"))
        .select_from(db.DecisionGroup)
        .join(db.Question, db.Question.group_id == db.DecisionGroup.id)
        .join(db.Answer, db.Answer.question_pk == db.Question.id)
        .join(db.Label, db.Label.question_pk == db.Question.id)
        .where(db.DecisionGroup.run_id == run_id, db.Answer.fixed_by == "model")
        .subquery()
    )
    rows = session.execute(
        select(answers.c.bin, func.count(), func.sum(answers.c.right), func.avg(answers.c.confidence)).group_by(
            answers.c.bin
        )
    ).all()
    found = {int(b): (int(n), int(right or 0), None if mean is None else float(mean)) for b, n, right, mean in rows}
    return [
        CalibrationBin(i, i / bins, (i + 1) / bins, *found.get(i, (0, 0, None)))
        for i in range(bins)
    ]


@dataclass(frozen=True)
class GroupRow:
    """One decided group of a run, for the run page's list."""

    id: str
    external_id: str | None
    title: str | None
    created_at: dt.datetime
    questions: int
    labelled: int
    correct: int


def latest_groups(session: Session, run_id: int, limit: int = 50) -> list[GroupRow]:
    """The run's newest groups with their label and correct counts."""
    scores = group_scores([db.DecisionGroup.run_id == run_id])
    rows = session.execute(
        select(
            db.DecisionGroup.id,
            db.DecisionGroup.external_id,
            db.Document.title,
            db.DecisionGroup.created_at,
            scores.c.questions,
            scores.c.labelled,
            scores.c.correct,
        )
        .join(scores, scores.c.id == db.DecisionGroup.id)
        .join(db.Document, db.Document.id == db.DecisionGroup.document_id)
        .order_by(db.DecisionGroup.created_at.desc(), db.DecisionGroup.id)
        .limit(limit)
    ).all()
    return [
        GroupRow(group_id, external_id, title, as_utc(created), int(n), int(labelled), int(right or 0))
        for group_id, external_id, title, created, n, labelled, right in rows
    ]


def run_of_group(session: Session, group_id: str) -> int | None:
    """The run id of a stored group."""
    return session.scalar(select(db.DecisionGroup.run_id).where(db.DecisionGroup.id == group_id))
