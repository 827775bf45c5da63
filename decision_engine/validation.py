"""Parsing and checking requests: every problem becomes a RequestError naming its field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, get_args

import msgspec

from .errors import RequestError
from .field_errors import field_error
from .json_input import decode_json
from .kinds import kind_of, schema_problem
from .rules import RuleSet, RulesTooComplex
from .storable import MAX_TAG_CHARS, check_text
from .types import MAX_QUESTIONS, DecisionRequest, Value


@dataclass(frozen=True)
class Limits:
    """Size limits on accepted requests."""

    max_document_chars: int = 1_000_000  # about 250k tokens; retrieval keeps only what fits the model
    max_question_chars: int = 2_000
    max_rules: int = 64
    max_rule_values: int = 1_000  # values one rule lists, its `if` and `then` together
    max_rule_values_total: int = 10_000  # values all rules list together: rule checks stay within milliseconds


_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_VALUE_TYPES = get_args(Value)  # the JSON types a rule value may have


def _field_of(error: msgspec.ValidationError) -> RequestError:
    located = field_error(error)
    if located.field == "questions" and "length" in located.problem:
        return RequestError("questions", f"a request holds 1 to {MAX_QUESTIONS} questions: {located.problem}")
    return located


def _locate_rule_value(obj: Any, error: RequestError) -> RequestError:
    """msgspec cannot name dict keys in paths (`rules[0].if[...]`): find the question id ourselves."""
    match = re.fullmatch(r"rules\[(\d+)\]\.(if|then)\[\.\.\.\](.*)", error.field)
    if not match:
        return error
    index, side, rest = int(match[1]), match[2], match[3]
    try:
        clauses = obj["rules"][index][side]
        for qid, values in clauses.items():
            if not isinstance(values, list) or not all(isinstance(v, _VALUE_TYPES) for v in values):
                return RequestError(f"rules[{index}].{side}.{qid}{rest}", error.problem)
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    return error


def parse_request(data: bytes | str, limits: Limits = Limits()) -> DecisionRequest:
    """Decode and check one JSON request."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as error:
            raise RequestError("request", f"not valid UTF-8 (byte {error.start})") from None
    try:
        request = decode_json(data, DecisionRequest)
    except msgspec.ValidationError as error:
        located = _field_of(error)
        try:
            whole = msgspec.json.decode(data)
        except msgspec.DecodeError:  # ValidationError too: a number past the float range, say
            raise located from None
        raise _locate_rule_value(whole, located) from None
    except msgspec.DecodeError as error:
        raise RequestError("request", f"not valid JSON: {error}") from None
    validate_request(request, limits)
    return request


def request_from_object(obj: Any, limits: Limits = Limits()) -> DecisionRequest:
    """Convert and check an already-decoded JSON object (e.g. one line of a samples file)."""
    try:
        request = msgspec.convert(obj, type=DecisionRequest)
    except msgspec.ValidationError as error:
        raise _locate_rule_value(obj, _field_of(error)) from None
    validate_request(request, limits)
    return request


def validate_request(request: DecisionRequest, limits: Limits = Limits()) -> None:
    """Raise RequestError for the first problem found in a decoded request."""
    text = request.document.text
    check_text("document.text", text)
    check_text("document.title", request.document.title)
    check_text("document.id", request.document.id)
    if request.document.id is not None and len(request.document.id) > MAX_TAG_CHARS:
        raise RequestError("document.id", f"is {len(request.document.id)} characters; the limit is {MAX_TAG_CHARS}")
    if not text.strip():
        raise RequestError("document.text", "must not be empty")
    if len(text) > limits.max_document_chars:
        raise RequestError(
            "document.text",
            f"is {len(text)} characters; the limit is {limits.max_document_chars}",
        )
    seen: dict[str, int] = {}
    for i, question in enumerate(request.questions):
        if question.id in seen:
            raise RequestError(f"questions[{i}].id", f"duplicate id {question.id!r} (also questions[{seen[question.id]}])")
        seen[question.id] = i
        if not _ID.fullmatch(question.id):
            raise RequestError(f"questions[{i}].id", "must be 1 to 64 of A-Z a-z 0-9 _ . -")
        check_text(f"questions[{i}].text", question.text)
        check_text(f"questions[{i}].schema.description", question.schema.description)
        for e, choice in enumerate(question.schema.enum or ()):
            check_text(f"questions[{i}].schema.enum[{e}]", choice)
        if not question.text.strip():
            raise RequestError(f"questions[{i}].text", "must not be empty")
        if len(question.text) > limits.max_question_chars:
            raise RequestError(
                f"questions[{i}].text",
                f"is {len(question.text)} characters; the limit is {limits.max_question_chars}",
            )
        problem = schema_problem(question.schema)
        if problem:
            raise RequestError(f"questions[{i}].schema.{problem[0]}", problem[1])
    _validate_rules(request, seen, limits)


def _check_rule_sizes(request: DecisionRequest, limits: Limits) -> None:
    """The limits on rules, checked before any value is: they bound the work every later check does."""
    if len(request.rules) > limits.max_rules:
        raise RequestError("rules", f"{len(request.rules)} rules; the limit is {limits.max_rules}")
    total = 0
    for r, rule in enumerate(request.rules):
        count = sum(len(values) for side in (rule.if_, rule.then) for values in side.values())
        if count > limits.max_rule_values:
            raise RequestError(f"rules[{r}]", f"lists {count} values; the limit is {limits.max_rule_values} per rule")
        total += count
    if total > limits.max_rule_values_total:
        raise RequestError("rules", f"list {total} values in all; the limit is {limits.max_rule_values_total}")


def _validate_rules(request: DecisionRequest, index: dict[str, int], limits: Limits) -> None:
    _check_rule_sizes(request, limits)
    for r, rule in enumerate(request.rules):
        for side, clauses in (("if", rule.if_), ("then", rule.then)):
            where = f"rules[{r}].{side}"
            if not clauses:
                raise RequestError(where, "must name at least one question")
            for qid, values in clauses.items():
                if qid not in index:
                    raise RequestError(f"{where}.{qid}", f"names unknown question {qid!r}; known: {sorted(index)}")
                if not values:
                    raise RequestError(f"{where}.{qid}", "must list at least one value")
                schema = request.questions[index[qid]].schema
                kind = kind_of(schema)
                for v, value in enumerate(values):
                    problem = kind.value_problem(schema, value)
                    if problem:
                        raise RequestError(f"{where}.{qid}[{v}]", f"{problem} (question {qid!r})")
    if not request.rules:
        return
    core = unsatisfiable_core(request)
    if core:
        named = ", ".join(f"rules[{i}]" for i in core)
        raise RequestError("rules", f"no combination of answers satisfies {named} together")


def unsatisfiable_core(request: DecisionRequest) -> list[int]:
    """A minimal set of rule indices that no answers can satisfy together; empty if all can hold."""
    schemas = [q.schema for q in request.questions]
    ids = [q.id for q in request.questions]

    def satisfiable(keep: list[int]) -> bool:
        rules = RuleSet.compile(schemas, ids, [request.rules[i] for i in keep])
        try:
            return rules.solve(rules.full_domains()) is not None
        except RulesTooComplex:
            raise RequestError("rules", "too many interlocking rules to check; simplify them") from None

    keep = list(range(len(request.rules)))
    if satisfiable(keep):
        return []
    for i in list(keep):
        trial = [k for k in keep if k != i]
        if not satisfiable(trial):
            keep = trial
    return keep
