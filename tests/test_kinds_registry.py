"""Answer kinds as a registry: the built-in kinds, their keys, and a toy kind added through the registry alone."""

from __future__ import annotations

import pytest

from conftest import FakeModel, random_logits
from decision_engine import kinds
from decision_engine.decoding.slot_space import choice_space
from decision_engine.engine import DecisionEngine
from decision_engine.errors import RequestError
from decision_engine.kinds import AnswerKind
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question
from decision_engine.validation import request_from_object, validate_request

ENUM = AnswerSchema(type="string", enum=["Yes", "No", "1"])
BOOLEAN = AnswerSchema(type="boolean")
INTEGER = AnswerSchema(type="integer", minimum=0, maximum=10)
DATE = AnswerSchema(type="string", format="date")


@pytest.mark.parametrize(
    ("schema", "name"), [(ENUM, "enum"), (BOOLEAN, "boolean"), (INTEGER, "integer"), (DATE, "date")]
)
def test_each_schema_shape_has_its_built_in_kind(schema, name):
    assert kinds.kind_of(schema) is kinds.get(name)
    assert kinds.kind_of(schema).name == name


def test_the_built_in_kinds_are_the_stores():
    from decision_engine.store.schema import KINDS

    assert KINDS == kinds.built_in_names() == ("enum", "boolean", "integer", "date")
    assert [k.name for k in kinds.all_kinds()] == list(KINDS)


KEYS = [
    # (schema, a, b, same answer?)
    (BOOLEAN, True, True, True),
    (BOOLEAN, True, 1, False),
    (BOOLEAN, False, 0, False),
    (BOOLEAN, True, "true", False),
    (INTEGER, 1, 1, True),
    (INTEGER, 1, True, False),
    (INTEGER, 0, False, False),
    (INTEGER, 1, "1", False),
    (ENUM, "Yes", "Yes", True),
    (ENUM, "Yes", "yes", False),
    (ENUM, "Yes", "Yes ", False),
    (ENUM, "1", 1, False),
    (DATE, "2024-01-31", "2024-01-31", True),
    (DATE, "2024-01-31", "2024-02-01", False),
    (DATE, "2024-01-31", "2024-1-31", False),
    (DATE, "2024-01-31", None, False),
]


@pytest.mark.parametrize(("schema", "a", "b", "same"), KEYS, ids=[f"{k[0].type}-{k[1]!r}-{k[2]!r}" for k in KEYS])
def test_same_answer_compares_answer_keys(schema, a, b, same):
    assert kinds.same_answer(schema, a, b) is same
    assert kinds.same_answer(schema, b, a) is same
    if a is not None and b is not None:
        assert (kinds.answer_key(schema, a) == kinds.answer_key(schema, b)) is same


def test_text_forms():
    assert [kinds.value_text(v, "boolean") for v in (True, False)] == ["true", "false"]
    assert kinds.value_text(42, kinds.get("integer")) == "42"
    assert kinds.value_text("2024-01-31") == "2024-01-31"
    assert kinds.value_text(True, "no-such-kind") == "true"


class _Named(AnswerKind):
    name = "boolean"

    def claims(self, schema):
        return False

    def value_problem(self, schema, value):
        return None

    def domain_size(self, schema):
        return 1

    def space(self, schema, vocab, classes, field):
        raise NotImplementedError


def test_register_refuses_taken_and_bad_names_and_built_ins_stay():
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(_Named())
    bad = _Named()
    bad.name = "Has Spaces"
    with pytest.raises(ValueError, match="must be 1 to 16"):
        kinds.register(bad)
    with pytest.raises(TypeError):
        kinds.register(object())
    with pytest.raises(ValueError, match="built-in"):
        kinds.unregister("boolean")
    with pytest.raises(KeyError, match="no answer kind 'nope'"):
        kinds.get("nope")


# --- a toy kind, added through the registry alone -----------------------------------------------


class WordedBoolean(AnswerKind):
    """A boolean whose two words the schema names: `{"type": "boolean", "enum": [word for true, word for false]}`."""

    name = "worded"
    keywords = frozenset({"enum"})

    def claims(self, schema):
        return schema.type == "boolean" and schema.enum is not None

    def schema_problem(self, schema):
        problem = self.keyword_problem(schema)
        if problem is None and len(schema.enum) != 2:
            return "enum", f"names the words for true and false, got {len(schema.enum)} words"
        return problem

    def value_problem(self, schema, value):
        return None if isinstance(value, bool) else f"{value!r} is not a boolean"

    def domain_size(self, schema):
        return 2

    def enumerated_values(self, schema):
        return [True, False]

    def space(self, schema, vocab, classes, field):
        return choice_space([True, False], schema.enum, vocab, classes, f"{field}.enum")

    def text(self, value):
        return "on" if value is True else "off" if value is False else str(value)


WORDED = {"type": "boolean", "enum": ["granted", "denied"]}


@pytest.fixture
def worded():
    kind = kinds.register(WordedBoolean())
    try:
        yield kind
    finally:
        kinds.unregister(kind.name)


def _toy_request(rules=()) -> DecisionRequest:
    return request_from_object(
        {
            "document": {"text": "The permit was denied on appeal; the licence itself remains valid."},
            "questions": [
                {"id": "permit", "text": "Was the permit granted?", "schema": WORDED},
                {"id": "valid", "text": "Is the licence valid?", "schema": {"type": "boolean"}},
            ],
            "rules": list(rules),
        }
    )


def test_without_the_toy_kind_its_schema_is_refused():
    with pytest.raises(RequestError) as caught:
        _toy_request()
    assert caught.value.field == "questions[0].schema.enum"
    assert "does not apply to a boolean answer" in caught.value.problem


def test_the_toy_kind_checks_its_own_schema(worded):
    assert kinds.kind_of(AnswerSchema(type="boolean", enum=["a", "b"])) is worded
    assert kinds.kind_of(BOOLEAN) is kinds.get("boolean")  # plain booleans stay built-in
    three = AnswerSchema(type="boolean", enum=["granted", "denied", "pending"])
    request = DecisionRequest(document=Document(text="x"), questions=[Question(id="q", text="Granted?", schema=three)])
    with pytest.raises(RequestError) as caught:
        validate_request(request)
    assert caught.value.field == "questions[0].schema.enum"
    assert "names the words for true and false" in caught.value.problem


def _word_logits(vocab, word: str, seed: int = 0):
    """Random logits, except that every position strongly prefers the single token of `word`."""
    (token,) = vocab.encode(word)
    noise = random_logits(seed)

    def fn(call, rows, block_ids):
        logits = noise(call, rows, block_ids)
        logits[..., token] += 40.0
        return logits

    return fn


@pytest.mark.parametrize(("word", "value"), [("granted", True), ("denied", False)])
def test_a_toy_kind_decides_through_the_engine(worded, vocab, word, value):
    """The slot is written in the toy kind's words (not yes/no), so the word the model prefers decides."""
    response = DecisionEngine(FakeModel(vocab, _word_logits(vocab, word))).decide(_toy_request())
    answer = response.answers[0]
    assert answer.id == "permit" and answer.value is value
    assert worded.text(answer.value) == ("on" if value else "off")


def test_a_toy_kind_decides_with_a_tiny_model_and_obeys_rules(worded, tiny_backend):
    rules = [
        {"if": {"permit": [False]}, "then": {"valid": [False]}},
        {"if": {"valid": [False]}, "then": {"permit": [True]}},
    ]
    # Together: permit false forces valid false, which forces permit true; so permit must be true.
    request = _toy_request(rules)
    response = DecisionEngine(tiny_backend).decide(request)
    values = {a.id: a.value for a in response.answers}
    assert values["permit"] is True
    assert isinstance(values["valid"], bool)
    assert all(kinds.kind_of(q.schema).value_problem(q.schema, values[q.id]) is None for q in request.questions)


def test_a_toy_kind_rule_value_is_checked_by_the_toy_kind(worded):
    with pytest.raises(RequestError) as caught:
        _toy_request([{"if": {"permit": ["granted"]}, "then": {"valid": [True]}}])
    assert caught.value.field == "rules[0].if.permit[0]"
    assert "'granted' is not a boolean" in caught.value.problem



def test_a_kind_the_store_does_not_know_is_refused_before_anything_is_written(worded, store_session):
    from sqlalchemy import func, select

    from decision_engine.store import schema as db
    from decision_engine.store.recording import record_decision
    from decision_engine.types import Answer, DecisionResponse

    request = _toy_request()
    response = DecisionResponse(
        answers=[Answer(id=qid, value=True, confidence=1.0, step=1, fixed_by="model") for qid in ("permit", "valid")],
        mode="joint",
        steps=1,
        passes=1,
        model="tiny",
        timings_ms={},
    )
    with pytest.raises(ValueError, match="answer kind 'worded' cannot be stored"):
        record_decision(store_session, request, response)
    assert store_session.scalar(select(func.count()).select_from(db.DecisionGroup)) == 0
