"""Bad requests: every problem is a RequestError naming its field and the problem, never a crash."""

from __future__ import annotations

import json

import pytest

import decision_engine.models
from decision_engine.cli import main
from decision_engine.engine import DecisionEngine
from decision_engine.errors import RequestError
from decision_engine.validation import Limits, parse_request, request_from_object

DEFAULT_LIMITS = Limits()
DOCUMENT = "The tenant may end the lease on 2024-03-01 with 30 days notice. Rent is 1200 per month."

BOOL = {"type": "boolean"}
INT = {"type": "integer", "minimum": 0, "maximum": 10}
COLOUR = {"type": "string", "enum": ["red", "green", "blue"]}
DATE = {"type": "string", "format": "date", "formatMinimum": "2000-01-01", "formatMaximum": "2099-12-31"}


# --- builders -------------------------------------------------------------------------------------


def question(qid: str = "a", schema: dict | None = None, text: str = "Is it so?") -> dict:
    return {"id": qid, "text": text, "schema": BOOL if schema is None else schema}


def request(questions: list | None = None, rules: list | None = None, document: str = DOCUMENT, **top) -> dict:
    """A valid one-boolean-question request unless told otherwise."""
    body = {"document": {"text": document}, "questions": [question()] if questions is None else questions}
    if rules is not None:
        body["rules"] = rules
    return body | top


def without(body: dict, key: str) -> dict:
    return {k: v for k, v in body.items() if k != key}


def with_schema(**schema) -> dict:
    return request([question("a", schema)])


def with_id(qid: str) -> dict:
    return request([question(qid)])


# Questions of every answer type, for rule cases: a, b boolean; n integer; e enum; d date.
RULE_QUESTIONS = [question("a"), question("b"), question("n", INT), question("e", COLOUR), question("d", DATE)]


def with_rules(*rules: dict) -> dict:
    return request(RULE_QUESTIONS, list(rules))


def rule(if_: dict, then: dict | None = None) -> dict:
    return {"if": if_} if then is None else {"if": if_, "then": then}


def case(name: str, data, field: str, phrase: str, limits: Limits = DEFAULT_LIMITS, xfail: str | None = None):
    marks = [pytest.mark.xfail(reason=xfail, strict=True)] if xfail else []
    return pytest.param(data, field, phrase, limits, id=name, marks=marks)


def encode(data) -> bytes | str:
    return data if isinstance(data, (bytes, str)) else json.dumps(data)


# --- the cases ------------------------------------------------------------------------------------

BAD_REQUESTS = [
    # questions
    case("questions-none", request([]), "questions", "1 to 8"),
    case("questions-nine", request([question(f"q{i}") for i in range(9)]), "questions", "8"),
    case("questions-missing", without(request(), "questions"), "request", "questions"),
    case("id-duplicate", request([question("a"), question("b"), question("a")]), "questions[2].id", "duplicate"),
    case("id-space", with_id("a b"), "questions[0].id", "regex"),
    case("id-empty", with_id(""), "questions[0].id", "regex"),
    case("id-65-chars", with_id("x" * 65), "questions[0].id", "regex"),
    case("id-non-ascii", with_id("café"), "questions[0].id", "regex"),
    case("id-trailing-newline", with_id("a\n"), "questions[0].id", "A-Z"),
    # schemas
    case("schema-unknown-keyword", with_schema(type="string", pattern="^x$"), "questions[0].schema", "unknown field"),
    case("schema-type-number", with_schema(type="number"), "questions[0].schema.type", "number"),
    case("schema-type-float", with_schema(type="float"), "questions[0].schema.type", "float"),
    case("string-no-enum-or-format", with_schema(type="string"), "questions[0].schema.type", "enum"),
    case("enum-one-choice", with_schema(type="string", enum=["x"]), "questions[0].schema.enum", "2 to 32"),
    case(
        "enum-33-choices",
        with_schema(type="string", enum=[f"c{i}" for i in range(33)]),
        "questions[0].schema.enum",
        "got 33",
    ),
    case("enum-duplicate", with_schema(type="string", enum=["x", "y", "x"]), "questions[0].schema.enum[2]", "duplicate"),
    case("enum-empty-choice", with_schema(type="string", enum=["x", ""]), "questions[0].schema.enum[1]", "non-empty"),
    case("enum-blank-choice", with_schema(type="string", enum=["x", " \t"]), "questions[0].schema.enum[1]", "non-empty"),
    case(
        "enum-with-format",
        with_schema(type="string", enum=["x", "y"], format="date"),
        "questions[0].schema.format",
        "cannot be combined",
    ),
    case("boolean-minimum", with_schema(type="boolean", minimum=0), "questions[0].schema.minimum", "does not apply"),
    case("integer-no-minimum", with_schema(type="integer", maximum=5), "questions[0].schema.minimum", "both"),
    case("integer-no-maximum", with_schema(type="integer", minimum=5), "questions[0].schema.maximum", "both"),
    case(
        "integer-minimum-above-maximum",
        with_schema(type="integer", minimum=9, maximum=3),
        "questions[0].schema.minimum",
        "greater than maximum",
    ),
    case("format-not-date", with_schema(type="string", format="time"), "questions[0].schema.format", "time"),
    case(
        "formatMinimum-not-a-date",
        with_schema(type="string", format="date", formatMinimum="2024/01/01"),
        "questions[0].schema.formatMinimum",
        "not an ISO date",
    ),
    case(
        "formatMinimum-after-formatMaximum",
        with_schema(type="string", format="date", formatMinimum="2024-06-01", formatMaximum="2024-01-01"),
        "questions[0].schema.formatMinimum",
        "after",
    ),
    # rules
    case("rule-unknown-question-if", with_rules(rule({"q9": [True]}, {"a": [True]})), "rules[0].if.q9", "unknown"),
    case("rule-unknown-question-then", with_rules(rule({"a": [True]}, {"q9": [True]})), "rules[0].then.q9", "unknown"),
    case("rule-string-for-boolean", with_rules(rule({"a": ["yes"]}, {"b": [True]})), "rules[0].if.a[0]", "not a boolean"),
    case("rule-integer-out-of-range", with_rules(rule({"a": [True]}, {"n": [3, 11]})), "rules[0].then.n[1]", "outside"),
    case("rule-enum-non-member", with_rules(rule({"e": ["purple"]}, {"a": [True]})), "rules[0].if.e[0]", "not one of"),
    case("rule-bad-date", with_rules(rule({"a": [True]}, {"d": ["2024-02-30"]})), "rules[0].then.d[0]", "ISO date"),
    case("rule-date-out-of-range", with_rules(rule({"d": ["1999-12-31"]}, {"a": [True]})), "rules[0].if.d[0]", "outside"),
    case("rule-bool-for-integer", with_rules(rule({"n": [True]}, {"a": [True]})), "rules[0].if.n[0]", "not an integer"),
    case("rule-if-empty", with_rules(rule({}, {"a": [True]})), "rules[0].if", "at least one question"),
    case("rule-then-missing", with_rules(rule({"a": [True]})), "rules[0].then", "at least one question"),
    case("rule-then-empty", with_rules(rule({"a": [True]}, {})), "rules[0].then", "at least one question"),
    case("rule-empty-values", with_rules(rule({"a": []}, {"b": [True]})), "rules[0].if.a", "at least one value"),
    case(
        "rules-unsatisfiable",
        with_rules(
            rule({"a": [True]}, {"b": [True]}),
            rule({"a": [True]}, {"b": [False]}),
            rule({"a": [False]}, {"b": [True]}),
            rule({"a": [False]}, {"b": [False]}),
        ),
        "rules",
        "rules[0], rules[1], rules[2], rules[3]",
    ),
    # document
    case("document-empty", request(document=""), "document.text", "empty"),
    case("document-whitespace", request(document=" \n\t "), "document.text", "empty"),
    case("document-oversized", request(document="x" * 101), "document.text", "100", Limits(max_document_chars=100)),
    case("document-missing", without(request(), "document"), "request", "document"),
    # the envelope
    case("json-truncated", json.dumps(request())[:-5], "request", "not valid JSON"),
    case("utf8-invalid", b"\xff\xfe{}", "request", "UTF-8"),
    case("utf8-invalid-in-text", json.dumps(request()).encode().replace(b"The", b"\xff"), "request", "UTF-8"),
    case("utf8-invalid-in-ignored-key", json.dumps(request()).encode()[:-1] + b', "\xff": 1}', "request", "UTF-8"),
    case("top-level-array", json.dumps([request()]), "request", "object"),
    case("mode-unknown", request(mode="fast"), "mode", "fast"),
    case("threshold-zero", request(options={"threshold": 0}), "options.threshold", "> 0"),
    case("threshold-above-one", request(options={"threshold": 1.5}), "options.threshold", "<= 1"),
]


@pytest.mark.parametrize(("data", "field", "phrase", "limits"), BAD_REQUESTS)
def test_bad_request_names_field_and_problem(data, field, phrase, limits):
    with pytest.raises(RequestError) as caught:
        parse_request(encode(data), limits)
    assert caught.value.field == field
    assert phrase in caught.value.problem
    assert str(caught.value) == f"{field}: {caught.value.problem}"


@pytest.mark.parametrize(
    ("data", "field", "phrase", "limits"),
    [p for p in BAD_REQUESTS if isinstance(p.values[0], dict)],
)
def test_request_from_object_reports_the_same_field(data, field, phrase, limits):
    """The JSON Lines path (already-decoded objects) must agree with parse_request."""
    with pytest.raises(RequestError) as caught:
        request_from_object(data, limits)
    assert caught.value.field == field
    assert phrase in caught.value.problem


ODD_INPUTS = {
    "questions-string": request("not a list"),
    "questions-of-ints": request([1, 2]),
    "question-null": request([None]),
    "schema-null": request([question("a", None) | {"schema": None}]),
    "schema-string": request([question("a", "boolean")]),
    "enum-of-ints": with_schema(type="string", enum=[1, 2]),
    "minimum-float": with_schema(type="integer", minimum=0.5, maximum=3),
    "id-integer": with_id(7),
    "text-null": request([question() | {"text": None}]),
    "document-string": request() | {"document": "just text"},
    "document-extra-key": request() | {"document": {"text": "x", "author": "me"}},
    "rules-object": request(rules={"if": {"a": [True]}, "then": {"a": [True]}}),
    "rule-list": request(rules=[[{"a": [True]}]]),
    "rule-value-null": request(rules=[rule({"a": [None]}, {"a": [True]})]),
    "rule-value-float": request(rules=[rule({"a": [1.5]}, {"a": [True]})]),
    "rule-values-not-list": request(rules=[rule({"a": True}, {"a": [True]})]),
    "rule-unknown-key": request(rules=[rule({"a": [True]}, {"a": [True]}) | {"else": {}}]),
    "options-null": request(options=None),
    "threshold-string": request(options={"threshold": "high"}),
    "null": None,
    "number": 42,
    "empty-object": {},
}


@pytest.mark.parametrize("data", list(ODD_INPUTS.values()), ids=list(ODD_INPUTS))
@pytest.mark.parametrize("entry", ["parse_request", "request_from_object"])
def test_odd_input_raises_only_request_error(data, entry):
    with pytest.raises(RequestError) as caught:
        if entry == "parse_request":
            parse_request(json.dumps(data))
        else:
            request_from_object(data)
    assert caught.value.field
    assert caught.value.problem


@pytest.mark.parametrize("raw", [b"", b"   ", b"null", b"[]", b'"text"', b"{", b"\x00", "\ufeff{}"], ids=repr)
def test_odd_bytes_raise_only_request_error(raw):
    with pytest.raises(RequestError) as caught:
        parse_request(raw)
    assert caught.value.field == "request"


def test_rule_value_of_wrong_json_type_names_the_question():
    with pytest.raises(RequestError) as caught:
        parse_request(json.dumps(request(rules=[rule({"a": [None]}, {"a": [True]})])))
    assert caught.value.field == "rules[0].if.a[0]"


def test_unsatisfiable_core_leaves_out_unrelated_rules():
    body = with_rules(
        rule({"e": ["red"]}, {"n": [1, 2]}),
        rule({"a": [True]}, {"b": [True]}),
        rule({"a": [True]}, {"b": [False]}),
        rule({"a": [False]}, {"b": [True]}),
        rule({"a": [False]}, {"b": [False]}),
    )
    with pytest.raises(RequestError) as caught:
        parse_request(json.dumps(body))
    assert caught.value.field == "rules"
    assert "rules[1], rules[2], rules[3], rules[4]" in caught.value.problem
    assert "rules[0]" not in caught.value.problem


# --- positive controls ----------------------------------------------------------------------------


def test_valid_request_with_every_answer_type_parses():
    body = with_rules(
        rule({"a": [True]}, {"b": [False], "e": ["red", "green"]}),
        rule({"n": [0, 10], "d": ["2024-03-01"]}, {"a": [True]}),
    ) | {"mode": "sequential", "options": {"threshold": 1.0}}
    parsed = parse_request(json.dumps(body).encode())
    assert [q.id for q in parsed.questions] == ["a", "b", "n", "e", "d"]
    assert [q.schema.type for q in parsed.questions] == ["boolean", "boolean", "integer", "string", "string"]
    assert parsed.rules[1].if_ == {"n": [0, 10], "d": ["2024-03-01"]}
    assert parsed.mode == "sequential" and parsed.options.threshold == 1.0
    assert request_from_object(body) == parsed


def test_document_at_the_limit_and_odd_extras_are_fine():
    body = request(document="x" * 100) | {"id": [1, 2], "labels": {"a": {"nested": None}}, "extra": None}
    assert parse_request(json.dumps(body), Limits(max_document_chars=100)).document.text == "x" * 100


def test_eight_questions_are_fine():
    assert len(parse_request(json.dumps(request([question(f"q{i}") for i in range(8)]))).questions) == 8


# --- engine: problems only the model's tokenizer can see -------------------------------------------


def test_enum_choices_the_tokenizer_cannot_tell_apart(tiny_backend):
    parsed = parse_request(json.dumps(with_schema(type="string", enum=["Yes", "yes"])))
    with pytest.raises(RequestError) as caught:
        DecisionEngine(tiny_backend).decide(parsed)
    assert caught.value.field == "questions[0].schema.enum[1]"
    assert "'Yes'" in caught.value.problem and "'yes'" in caught.value.problem


# --- the command line -----------------------------------------------------------------------------


@pytest.fixture
def tiny_model(monkeypatch, tiny_backend):
    monkeypatch.setattr(decision_engine.models, "open_model", lambda *args, **kwargs: tiny_backend)
    return tiny_backend


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("no model should be opened when every request is invalid")

    monkeypatch.setattr(decision_engine.models, "open_model", refuse)


def test_cli_rejects_nine_questions(tmp_path, capsys, no_model):
    path = tmp_path / "nine.json"
    path.write_text(json.dumps(request([question(f"q{i}") for i in range(9)])))
    assert main(["decide", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "questions" in err and "8" in err
    assert "Traceback" not in err


def test_cli_json_lines_with_a_malformed_line(tmp_path, capsys, tiny_model):
    path = tmp_path / "batch.jsonl"
    good = json.dumps(request() | {"id": "good"})
    path.write_text(good + "\n" + good[:-7] + "\n")
    assert main(["decide", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["request_id"] == "good"
    assert f"{path}:2:" in err and "not valid JSON" in err
    assert f"{path}:1:" not in err
    assert "Traceback" not in err


def test_cli_reports_tokenizer_clash_on_its_line(tmp_path, capsys, tiny_model):
    path = tmp_path / "batch.jsonl"
    clash = with_schema(type="string", enum=["Yes", "yes"])
    path.write_text(json.dumps(request() | {"id": "good"}) + "\n" + json.dumps(clash) + "\n")
    assert main(["decide", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == ["good"]
    assert f"{path}:2: questions[0].schema.enum[1]" in err
    assert "Traceback" not in err
