"""Slot spaces against brute force: the allowed tokens are exactly those that keep a valid completion."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from decision_engine.decoding.slot_space import build_space
from decision_engine.rules import slot_classes
from decision_engine.types import AnswerSchema


def _brute_allowed(space, values, pattern, classes):
    live = [
        space.encode(v)
        for v in values
        if space.classes.index(v) in classes and all(p is None or p == t for p, t in zip(pattern, space.encode(v)))
    ]
    return [None if p is not None else sorted({seq[j] for seq in live}) for j, p in enumerate(pattern)]


def _random_pattern(space, values, rng):
    """Fix a random subset of positions of a random valid value (or of random tokens)."""
    base = space.encode(rng.choice(values))
    if rng.random() < 0.3:
        base = space.encode(rng.choice(values))[:]
        other = space.encode(rng.choice(values))
        base = [a if rng.random() < 0.5 else b for a, b in zip(base, other)]
    return [t if rng.random() < 0.4 else None for t in base]


def _dates(low, high):
    return [(low + dt.timedelta(days=i)).isoformat() for i in range((high - low).days + 1)]


CASES = {
    "int-0-365": (AnswerSchema(type="integer", minimum=0, maximum=365), list(range(0, 366)), [0, 30, 365]),
    "int-neg": (AnswerSchema(type="integer", minimum=-120, maximum=45), list(range(-120, 46)), [-7, 0]),
    "int-narrow": (AnswerSchema(type="integer", minimum=17, maximum=23), list(range(17, 24)), []),
    "date-leap": (
        AnswerSchema(type="string", format="date", formatMinimum="2023-12-15", formatMaximum="2024-03-10"),
        _dates(dt.date(2023, 12, 15), dt.date(2024, 3, 10)),
        ["2024-02-29", "2024-01-01"],
    ),
    "enum": (
        AnswerSchema(type="string", enum=["yes", "no", "not mentioned", "partially yes"]),
        ["yes", "no", "not mentioned", "partially yes"],
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_allowed_tokens_match_brute_force(name, vocab):
    schema, values, named = CASES[name]
    classes = slot_classes(schema, named)
    space = build_space(schema, vocab, classes, "q")
    rng = random.Random(name)
    all_classes = set(range(classes.count))
    for trial in range(60):
        pattern = _random_pattern(space, values, rng)
        allowed_classes = {c for c in all_classes if rng.random() < 0.7} or {0}
        expected = _brute_allowed(space, values, pattern, allowed_classes)
        assert space.allowed(pattern, allowed_classes) == expected, (pattern, allowed_classes)
        reachable = {space.classes.index(v) for v in values if all(p in (None, t) for p, t in zip(pattern, space.encode(v)))}
        assert space.reachable(pattern) == reachable


@pytest.mark.parametrize("name", ["date-leap", "int-0-365", "int-neg"])
def test_a_fully_written_value_reaches_its_own_class_only(name, vocab):
    schema, values, named = CASES[name]
    classes = slot_classes(schema, named)
    space = build_space(schema, vocab, classes, "q")
    for value in values:
        assert space.reachable(space.encode(value)) == {classes.index(value)}


def test_a_fully_written_date_outside_the_calendar_or_range_reaches_nothing(vocab):
    schema, values, named = CASES["date-leap"]
    space = build_space(schema, vocab, slot_classes(schema, named), "q")
    for text in ("20230230", "20240230", "20231214", "20240311", "19991231"):
        assert space.reachable([vocab.digit_ids[int(c)] for c in text]) == set(), text


@pytest.mark.parametrize("name", sorted(CASES))
def test_encode_decode_round_trip(name, vocab):
    schema, values, named = CASES[name]
    space = build_space(schema, vocab, slot_classes(schema, named), "q")
    for value in values[:: max(1, len(values) // 50)]:
        tokens = space.encode(value)
        assert len(tokens) == space.length
        assert space.decode(tokens) == value


def test_date_slot_never_offers_an_impossible_day(vocab):
    schema = AnswerSchema(type="string", format="date", formatMinimum="2023-01-01", formatMaximum="2023-12-31")
    space = build_space(schema, vocab, slot_classes(schema, []), "q")
    digit = {t: d for d, t in enumerate(vocab.digit_ids)}
    feb_3x = [vocab.digit_ids[d] for d in (2, 0, 2, 3, 0, 2, 3)] + [None]  # 2023-02-3?
    assert space.allowed(feb_3x, {0}) [7] == []
    feb_2x = [vocab.digit_ids[d] for d in (2, 0, 2, 3, 0, 2, 2)] + [None]  # 2023-02-2? (no leap day)
    assert [digit[t] for t in space.allowed(feb_2x, {0})[7]] == list(range(10))[:9]


def test_boolean_slot_is_yes_or_no(vocab):
    schema = AnswerSchema(type="boolean")
    space = build_space(schema, vocab, slot_classes(schema, []), "q")
    assert space.decode(space.encode(True)) is True
    assert space.decode(space.encode(False)) is False
    assert space.allowed([None] * space.length, {1}) == [[vocab.no_ids[0]]]


def test_one_date_bound_moves_the_default_other_bound():
    from decision_engine.values import date_bounds, schema_problem

    late = AnswerSchema(type="string", format="date", formatMinimum="2500-01-01")
    assert schema_problem(late) is None
    assert date_bounds(late) == (dt.date(2500, 1, 1), dt.date(2999, 12, 31))
    early = AnswerSchema(type="string", format="date", formatMaximum="1850-06-30")
    assert date_bounds(early) == (dt.date(1000, 1, 1), dt.date(1850, 6, 30))


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if n.startswith("date")])
def test_a_date_slot_with_nothing_written_offers_what_its_dates_have(name, vocab):
    schema, values, named = CASES[name]
    space = build_space(schema, vocab, slot_classes(schema, named), "q")
    every = set(range(space.classes.count))
    open_pattern = [None] * space.length
    assert space.allowed(open_pattern, every) == _brute_allowed(space, values, open_pattern, every)
    if len(every) > 1:  # fewer classes: the table is read, not the open-slot shortcut
        fewer = every - {0}
        assert space.allowed(open_pattern, fewer) == _brute_allowed(space, values, open_pattern, fewer)
