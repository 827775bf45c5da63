"""Generated linked compliance groups: one document, 4 to 8 linked questions, the rules between them, gold labels.

Each line matches the samples format (`samples/*.jsonl`) plus "domain" and "template" keys. A template is
a page layout combined with one of four clause phrasings; each question has four paraphrases. The third
phrasing, the third paraphrase and the "schedule" layout are held out: validation groups use only held-out
wording and training groups never do, so validation measures transfer to unseen wordings. Facts come from
an RNG keyed by (split, seed, index), so the splits never share a sampled case.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from typing import Any

from .domains import ALL
from .domains.common import MAX_DOCUMENT_CHARS, Case, Domain, QuestionSpec, Value, Wording, render

SPLITS = ("train", "validation")
HELD_OUT = 2  # index of the held-out clause phrasing and question paraphrase
# (layout, clause phrasing) pairs; the names are what `template_names` reports.
_TEMPLATES: dict[str, tuple[tuple[str, int], ...]] = {
    "train": (("agreement", 0), ("agreement", 1), ("agreement", 3), ("memo", 0), ("memo", 1), ("memo", 3)),
    "validation": (("schedule", HELD_OUT), ("memo", HELD_OUT)),
}
CURRENCIES = ("", "EUR ", "GBP ", "USD ")
MIN_QUESTIONS, MAX_QUESTIONS = 4, 8
MAX_RULES = 4

DOMAINS: tuple[str, ...] = tuple(domain.name for domain in ALL)
_BY_NAME: dict[str, Domain] = {domain.name: domain for domain in ALL}


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def _template_name(layout: str, variant: int) -> str:
    return f"{layout}-{'abcd'[variant]}"


def template_names(split: str) -> dict[str, list[str]]:
    """The document templates each domain uses in `split`; the two splits share none."""
    _check_split(split)
    names = [_template_name(layout, variant) for layout, variant in _TEMPLATES[split]]
    return {domain: list(names) for domain in DOMAINS}


def generate_groups(split: str, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` request lines for `split` ("train" or "validation"); the same arguments give the same lines.

    Domains take turns, so any 8 consecutive groups cover every domain.
    """
    _check_split(split)
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    return [_group(split, seed, i, _domain_at(split, seed, i)) for i in range(count)]


def _domain_at(split: str, seed: int, index: int) -> Domain:
    offset = random.Random(f"linked-groups:{split}:{seed}:domains").randrange(len(DOMAINS))
    return _BY_NAME[DOMAINS[(offset + index) % len(DOMAINS)]]


def _setting(split: str, seed: int, index: int) -> tuple[random.Random, str, Wording]:
    """The group's random stream, positioned where its case is built, its layout and its wording."""
    rng = random.Random(f"linked-groups:{split}:{seed}:{index}")
    layout, variant = rng.choice(_TEMPLATES[split])
    return rng, layout, Wording(variant, long_dates=rng.random() < 0.5, currency=rng.choice(CURRENCIES))


def reworded_cases(
    split: str, seed: int, index: int, variants: Sequence[int]
) -> tuple[str, str, Case, dict[int, Case]]:
    """Group `index` of `generate_groups(split, count, seed)` as its domain's name, its document text and
    its case, beside the same case built again in each clause phrasing of `variants`: the same facts
    in other words. A phrasing whose build draws other facts is left out."""
    domain = _domain_at(split, seed, index)
    rng, layout, wording = _setting(split, seed, index)
    case = domain.build(rng, wording)
    text = render(layout, case, rng)
    reworded = {}
    for variant in variants:
        again, _, own = _setting(split, seed, index)
        other = domain.build(again, Wording(variant, own.long_dates, own.currency))
        same_facts = other.labels == case.labels and len(other.clauses) == len(case.clauses)
        if same_facts and len(other.events) == len(case.events):
            reworded[variant] = other
    return domain.name, text, case, reworded


def _group(split: str, seed: int, index: int, domain: Domain) -> dict[str, Any]:
    rng, layout, wording = _setting(split, seed, index)
    variant = wording.variant
    case = domain.build(rng, wording)
    text = render(layout, case, rng)
    if len(text) > MAX_DOCUMENT_CHARS:
        raise RuntimeError(f"{domain.name} document is {len(text)} characters; the cap is {MAX_DOCUMENT_CHARS}")
    chosen, core = _choose_questions(domain, case, rng)
    rules = _choose_rules(case, chosen, core, rng)
    for rule in rules:
        if not _holds(rule, case.labels):
            raise RuntimeError(f"{domain.name} gold labels break their own rule {rule}")
    for qid, (left, right) in case.compared.items():
        if case.labels[qid] != (compared_value(left) <= compared_value(right)):
            raise RuntimeError(f"{domain.name} compares {qid} as {left} <= {right}, "
                               f"against its label {case.labels[qid]}")
    request_id = f"{split}-{domain.name}-{seed}-{index}"
    return {
        "id": request_id,
        "document": {"text": text, "title": f"{case.title} - {case.header[0][1]}", "id": f"doc-{request_id}"},
        "questions": [
            {
                "id": qid,
                "text": _paraphrase(domain.questions[qid], split, rng).format_map(case.slots),
                "schema": _copy_schema(domain.questions[qid].schema),
            }
            for qid in chosen
        ],
        "rules": rules,
        "mode": "joint",
        "labels": {qid: case.labels[qid] for qid in chosen},
        "compared": {qid: list(case.compared[qid]) for qid in chosen if qid in case.compared},
        "domain": domain.name,
        "template": _template_name(layout, variant),
    }


def compared_value(value: Value) -> int | dt.date:
    """A value of a group's `compared` field as it orders: an ISO date as a date, a number as itself."""
    return dt.date.fromisoformat(value) if isinstance(value, str) else value


def _paraphrase(spec: QuestionSpec, split: str, rng: random.Random) -> str:
    if split == "validation":
        return spec.texts[HELD_OUT]
    return rng.choice([text for i, text in enumerate(spec.texts) if i != HELD_OUT])


def _copy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, list) else value for key, value in schema.items()}


def _rule_ids(rule: dict[str, dict[str, list[Value]]]) -> set[str]:
    return set(rule["if"]) | set(rule["then"])


def _choose_questions(domain: Domain, case: Case, rng: random.Random) -> tuple[list[str], int]:
    """4 to 8 question ids in the domain's dependency order, always covering one rule (returned by index).

    Further questions are drawn mostly from those sharing a rule with the ones already chosen, so
    most groups hold chains of linked answers rather than unrelated facts.
    """
    order = list(domain.questions)
    size = rng.randint(MIN_QUESTIONS, min(MAX_QUESTIONS, len(order)))
    core = rng.randrange(len(case.rules))
    chosen = _rule_ids(case.rules[core])
    while len(chosen) < size:
        neighbours = {q for r in case.rules if _rule_ids(r) & chosen for q in _rule_ids(r)}
        linked = sorted(neighbours - chosen, key=order.index)
        pool = linked if linked and rng.random() < 0.7 else [q for q in order if q not in chosen]
        chosen.add(rng.choice(pool))
    return [q for q in order if q in chosen], core


def _choose_rules(case: Case, chosen: list[str], core: int, rng: random.Random) -> list[dict[str, Any]]:
    """1 to 4 of the case's rules whose questions were all chosen, the core rule always among them."""
    present = set(chosen)
    others = [i for i, rule in enumerate(case.rules) if i != core and _rule_ids(rule) <= present]
    keep = {core, *rng.sample(others, min(len(others), rng.randint(0, MAX_RULES - 1)))}
    return [
        {"if": {q: list(v) for q, v in rule["if"].items()}, "then": {q: list(v) for q, v in rule["then"].items()}}
        for i, rule in enumerate(case.rules)
        if i in keep
    ]


def _same(a: Value, b: Value) -> bool:
    return type(a) is type(b) and a == b  # True == 1 in Python; answers keep booleans and integers apart


def _holds(rule: dict[str, dict[str, list[Value]]], labels: dict[str, Value]) -> bool:
    def satisfied(side: dict[str, list[Value]]) -> bool:
        return all(any(_same(labels[q], v) for v in values) for q, values in side.items())

    return not satisfied(rule["if"]) or satisfied(rule["then"])
