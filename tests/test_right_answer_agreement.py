"""One notion of a right answer: the store's report, the dashboard and `eval` agree on tricky pairs.

Each row pairs a valid value with a tricky one. The store gets the tricky value as the answer
(a response is stored as given) and the valid one as the label (labels are checked); `eval`
gets the engine's answer, forced to the valid value, and the tricky value as the label. The
comparison is symmetric, so every side must reach the row's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from conftest import FakeModel, random_logits
from decision_engine.dashboard import context, queries
from decision_engine.engine import DecisionEngine
from decision_engine.evaluation import LabelledGroup, evaluate
from decision_engine.kinds import kind_of
from decision_engine.store.recording import record_decision
from decision_engine.store.records import ReportFilters
from decision_engine.store.reports import accuracy_report
from decision_engine.types import Answer, AnswerSchema, DecisionResponse
from decision_engine.validation import request_from_object

BOOLEAN = {"type": "boolean"}
ONE = {"type": "integer", "minimum": 1, "maximum": 1}
ZERO = {"type": "integer", "minimum": 0, "maximum": 0}
DIGITS = {"type": "string", "enum": ["1", "2"]}
YES_NO = {"type": "string", "enum": ["Yes", "No"]}
WORDS = {"type": "string", "enum": ["true", "false"]}
DAY = {"type": "string", "format": "date", "formatMinimum": "2024-01-31", "formatMaximum": "2024-01-31"}


@dataclass(frozen=True)
class Pair:
    id: str  # also the question id
    schema: dict[str, Any]
    valid: Any  # a value the schema admits
    tricky: Any
    same: bool  # whether they are the same answer


PAIRS = [
    Pair("true-vs-true", BOOLEAN, True, True, True),
    Pair("true-vs-1", BOOLEAN, True, 1, False),
    Pair("false-vs-0", BOOLEAN, False, 0, False),
    Pair("true-vs-string-true", BOOLEAN, True, "true", False),
    Pair("1-vs-1", ONE, 1, 1, True),
    Pair("1-vs-true", ONE, 1, True, False),
    Pair("0-vs-false", ZERO, 0, False, False),
    Pair("1-vs-string-1", ONE, 1, "1", False),
    Pair("string-1-vs-1", DIGITS, "1", 1, False),
    Pair("enum-same", YES_NO, "Yes", "Yes", True),
    Pair("enum-case", YES_NO, "Yes", "yes", False),
    Pair("enum-space", YES_NO, "Yes", "Yes ", False),
    Pair("string-true-vs-true", WORDS, "true", True, False),
    Pair("date-same", DAY, "2024-01-31", "2024-01-31", True),
    # the same day, spelled with a JSON escape on the wire: equal once read
    Pair("date-escaped", DAY, "2024-01-31", msgspec.json.decode(b'"2024\\u002d01\\u002d31"'), True),
    Pair("date-next-day", DAY, "2024-01-31", "2024-02-01", False),
    Pair("date-unpadded", DAY, "2024-01-31", "2024-1-31", False),
]


def _line(pair: Pair) -> dict[str, Any]:
    """The request of one pair; a rule (or the schema's single value) forces the answer to `valid`."""
    schema = msgspec.convert(pair.schema, AnswerSchema)
    kind = kind_of(schema)
    every = kind.enumerated_values(schema)
    if every is None:
        assert kind.domain_size(schema) == 1 and kind.value_problem(schema, pair.valid) is None
    rules = [] if every is None else [{"if": {pair.id: every}, "then": {pair.id: [pair.valid]}}]
    return {
        "document": {"text": "The notice was served on 31 January 2024; one copy was kept."},
        "questions": [{"id": pair.id, "text": "What does the notice say?", "schema": pair.schema}],
        "rules": rules,
    }


@pytest.fixture(scope="module")
def eval_verdicts(vocab) -> dict[str, dict[str, bool]]:
    """Per pair, what `eval` says: the model's accuracy, the prior's accuracy and (string answers) F1."""
    engine = DecisionEngine(FakeModel(vocab, random_logits(0)))
    verdicts = {}
    for pair in PAIRS:
        f1 = [pair.valid] if isinstance(pair.valid, str) else []
        metrics = evaluate(
            engine,
            [LabelledGroup(_line(pair), {pair.id: pair.tricky})],
            "joint",
            f1_labels=f1,
            priors={pair.id: pair.valid},
        )
        assert metrics["agrees_with_prior"] == 1.0, pair.id  # the engine did answer `valid`
        verdicts[pair.id] = {
            "eval accuracy": metrics["per_question_accuracy"] == 1.0,
            "eval group accuracy": metrics["group_accuracy"] == 1.0,
            "eval prior": metrics["prior_accuracy"] == 1.0,
            **({"eval f1": metrics[f"f1_{pair.valid}"] == 1.0} if f1 else {}),
        }
    return verdicts


def _store_verdicts(session) -> dict[str, dict[str, bool]]:
    """Per pair, what the store's report and the dashboard's pages say about the stored pair."""
    group_ids = {}
    for pair in PAIRS:
        request = request_from_object(_line(pair))
        response = DecisionResponse(
            answers=[Answer(id=pair.id, value=pair.tricky, confidence=0.9, step=1, fixed_by="model")],
            mode="joint",
            steps=1,
            passes=1,
            model="tiny",
            timings_ms={"total": 1.0},
        )
        group_ids[pair.id], _ = record_decision(session, request, response, run="tricky", labels={pair.id: pair.valid})
    report = accuracy_report(session, ReportFilters(run="tricky"))
    (summary,) = [s for s in queries.run_summaries(session) if s.name == "tricky"]
    assert summary.questions_labelled == len(PAIRS)
    assert summary.questions_correct == sum(p.same for p in PAIRS)
    verdicts = {}
    for pair in PAIRS:
        page = context.question_page(session, summary.id, pair.id)
        decision = context.decision_page(session, group_ids[pair.id])
        found = {
            "report": report.questions[pair.id].correct == 1,
            "dashboard question": page["question"]["correct"] == 1 and page["errors_total"] == 0,
            "dashboard decision": decision["questions"][0]["status"] == "right",
        }
        if page["confusion"] is not None:  # enum and boolean: the diagonal holds the right answers
            diagonal = sum(c["count"] for row in page["confusion"]["rows"] for c in row["cells"] if c["right"])
            found["dashboard confusion"] = diagonal == 1
        verdicts[pair.id] = found
    return verdicts


def test_store_dashboard_and_eval_agree_on_tricky_pairs(store_session, eval_verdicts):
    store = _store_verdicts(store_session)
    for pair in PAIRS:
        said = {**store[pair.id], **eval_verdicts[pair.id]}
        assert said == dict.fromkeys(said, pair.same), pair.id


def test_a_stray_value_never_reads_as_the_choice_it_resembles(store_session):
    """The confusion table tells the choice "1" from a stored integer 1, so its diagonal stays right."""
    _store_verdicts(store_session)
    report = accuracy_report(store_session, ReportFilters(run="tricky"))
    assert report.questions["string-1-vs-1"].confusion == {"1 (string)": {"1 (number)": 1}}
    assert report.questions["true-vs-1"].confusion == {"true": {"1": 1}}
    assert report.questions["enum-case"].confusion == {"Yes": {"yes": 1}}
