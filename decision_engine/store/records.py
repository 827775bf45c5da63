"""Wire types read back from the store: stored decisions, accuracy reports and their filters."""

from __future__ import annotations

import datetime as dt

import msgspec

from ..types import Answer, Mode, Question, Rule, Value


class StoredDocument(msgspec.Struct, omit_defaults=True):
    """A stored document; `text` is absent when the store keeps only its fingerprint (and in lists).
    `id` is the request's own `document.id`, when it gave one."""

    sha256: str
    chars: int
    text: str | None = None
    title: str | None = None
    id: str | None = None


class StoredDecision(msgspec.Struct, omit_defaults=True):
    """One decided request as stored, with its current labels keyed by question id."""

    id: str
    created_at: dt.datetime
    run: str
    mode: Mode
    model: str
    model_version: str
    document: StoredDocument
    questions: list[Question]
    rules: list[Rule]
    answers: list[Answer]
    steps: int
    timings_ms: dict[str, float]
    labels: dict[str, Value]
    dataset: str | None = None
    external_id: str | None = None


class DecisionSummary(msgspec.Struct, omit_defaults=True):
    """One stored decision as a list shows it: its filing, its answers and labels, no document text."""

    id: str
    created_at: dt.datetime
    run: str
    mode: Mode
    model: str
    model_version: str
    document: StoredDocument
    answers: list[Answer]
    labels: dict[str, Value]
    dataset: str | None = None
    external_id: str | None = None


class DecisionPage(msgspec.Struct):
    """Stored decisions, newest first; pass `next_cursor` back as `cursor` for the next page (null: no more)."""

    items: list[DecisionSummary]
    next_cursor: str | None


class DecisionFilters(msgspec.Struct):
    """Which decisions a list covers; `since` is inclusive, `until` exclusive (naive times are UTC)."""

    run: str | None = None
    dataset: str | None = None
    external_id: str | None = None
    document_id: str | None = None  # the request's own document.id
    model: str | None = None
    mode: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None


class RunSummary(msgspec.Struct, omit_defaults=True):
    """One run (a name, model version, mode and dataset) with what it holds now."""

    id: int
    name: str
    model: str
    model_version: str
    mode: Mode
    created_at: dt.datetime
    decisions: int
    questions: int
    labelled: int  # questions with a label
    dataset: str | None = None
    last_decision_at: dt.datetime | None = None


class RunList(msgspec.Struct):
    """Every run, newest first."""

    items: list[RunSummary]


class Removed(msgspec.Struct):
    """What a delete or a prune took out of the store (or, in a dry run, would take)."""

    decisions: int
    questions: int
    answers: int
    labels: int
    documents: int  # documents no remaining decision refers to


class FixedAccuracy(msgspec.Struct):
    """Labelled answers settled one way (by the model, a rule or the schema) and how many are right."""

    answers: int
    labelled: int
    correct: int
    accuracy: float | None


class QuestionAccuracy(msgspec.Struct, omit_defaults=True):
    """Accuracy of one question id across groups.

    `confusion[label][answer]` counts labelled answers, for enum and boolean questions only;
    keys are the values as text ("Entailment", "true").
    """

    count: int
    labelled: int
    correct: int
    accuracy: float | None
    kind: str  # enum, boolean, integer, date; "mixed" when groups disagree
    confusion: dict[str, dict[str, int]] | None = None


class AccuracyReport(msgspec.Struct):
    """How often stored answers match their labels, per question and per whole group."""

    groups: int
    groups_labelled: int  # groups whose every question has a label
    questions_labelled: int
    per_question_accuracy: float | None  # correct / labelled over all labelled questions
    group_accuracy: float | None  # share of fully labelled groups answered entirely right
    questions: dict[str, QuestionAccuracy]
    filters: dict[str, str]
    # the same answers split by what settled them: model accuracy without the answers rules and schemas forced
    fixed_by: dict[str, FixedAccuracy] = msgspec.field(default_factory=dict)


class ReportFilters(msgspec.Struct):
    """Which groups a report covers; `since` is inclusive, `until` exclusive (naive times are UTC)."""

    run: str | None = None
    run_id: int | None = None  # one row of the runs table exactly (a run name may span models and datasets)
    dataset: str | None = None
    model: str | None = None
    mode: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
