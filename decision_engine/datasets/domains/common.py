"""Building blocks shared by the domain generators: wording variants, schemas, names and page layouts.

A domain's `build(rng, wording)` samples one case (facts, clause text, gold labels and the
rules those labels obey); `render` lays the case out as a document in one of three layouts.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...kinds import boolean as boolean_kind
from ...kinds import date as date_kind
from ...kinds import enum as enum_kind
from ...kinds import integer as integer_kind

Value = bool | int | str

MAX_DOCUMENT_CHARS = 1800  # the model reads about 350 tokens of document

# Answer schemas as each kind writes them.
BOOLEAN: dict[str, Any] = boolean_kind.json_schema()
DATE: dict[str, Any] = date_kind.json_schema()


def enum(*choices: str) -> dict[str, Any]:
    return enum_kind.json_schema(*choices)


def integer(minimum: int, maximum: int) -> dict[str, Any]:
    return integer_kind.json_schema(minimum, maximum)


@dataclass(frozen=True)
class QuestionSpec:
    """One question a domain can ask, in four paraphrases: the third is held out, the others train."""

    schema: dict[str, Any]
    texts: tuple[str, str, str, str]


MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)


@dataclass(frozen=True)
class Wording:
    """How one document is phrased: the clause variant of its template, date style and currency."""

    variant: int  # 0, 1 and 3: training phrasings; 2: phrasings held out for validation
    long_dates: bool  # "4 March 2024" instead of "2024-03-04"
    currency: str  # prefix of amounts, possibly empty

    def pick(self, first: str, second: str, held_out: str, fourth: str) -> str:
        return (first, second, held_out, fourth)[self.variant]

    def date(self, day: dt.date) -> str:
        if self.long_dates:
            return f"{day.day} {MONTHS[day.month - 1]} {day.year}"
        return day.isoformat()

    def money(self, amount: int) -> str:
        return f"{self.currency}{amount:,}"


@dataclass
class Case:
    """One sampled document before layout, with its gold answers and the rules they satisfy."""

    title: str
    header: list[tuple[str, str]] = field(default_factory=list)  # (label, value) lines at the top
    clauses: list[tuple[str, str]] = field(default_factory=list)  # (heading, text), needed to answer
    events: list[tuple[dt.date, str]] = field(default_factory=list)  # dated file notes, kept in date order
    extra_clauses: list[tuple[str, str]] = field(default_factory=list)  # distractors, dropped if too long
    extra_events: list[tuple[dt.date, str]] = field(default_factory=list)  # distractors, dropped if too long
    labels: dict[str, Value] = field(default_factory=dict)
    rules: list[dict[str, dict[str, list[Value]]]] = field(default_factory=list)
    slots: dict[str, str] = field(default_factory=dict)  # names filled into question texts
    # boolean question id -> (left, right): its answer is whether left <= right, two values of one kind
    compared: dict[str, tuple[Value, Value]] = field(default_factory=dict)
    # training-only questions answered by a value as the document writes it: id -> (schema, value, phrasings)
    as_written: dict[str, tuple[dict[str, Any], Value, tuple[str, ...]]] = field(default_factory=dict)

    def rule(self, if_: dict[str, list[Value]], then: dict[str, list[Value]]) -> None:
        self.rules.append({"if": if_, "then": then})

    def ask_as_written(self, question: str, value: int | dt.date, *texts: str) -> None:
        """Record a question (in `texts` phrasings) whose answer is `value` copied from the document: a
        date, or an amount or count as an integer. Not one of the domain's questions; see
        `datasets/as_written.py`."""
        schema = DATE if isinstance(value, dt.date) else integer(0, max(1_000_000, value))
        answer = value.isoformat() if isinstance(value, dt.date) else value
        self.as_written[question] = (schema, answer, texts)

    def compare(self, question: str, left: int | dt.date, right: int | dt.date) -> None:
        """Record that the boolean `question` is answered by whether `left` <= `right` (dates or numbers):
        what a comparison chooser learns to point at."""
        self.compared[question] = tuple(v.isoformat() if isinstance(v, dt.date) else v for v in (left, right))


@dataclass(frozen=True)
class Domain:
    """A family of documents and the linked questions asked about them."""

    name: str
    questions: dict[str, QuestionSpec]  # in dependency order: facts, then judgments, then decisions
    build: Callable[[random.Random, Wording], Case]


# --- sampling helpers ---------------------------------------------------------------------------

FIRST_NAMES = (
    "Mira", "Tomas", "Anneke", "Ravi", "Lena", "Oskar", "Priya", "Jonah", "Selin", "Matteo",
    "Ines", "Kofi", "Hana", "Emil", "Zofia", "Dario", "Yara", "Bruno", "Elif", "Nadia",
    "Soren", "Amara", "Felix", "Ilse", "Quentin", "Rosa", "Tariq", "Vera", "Wim", "Leila",
)
LAST_NAMES = (
    "Tallis", "Brenner", "Okafor", "Lindqvist", "Marchetti", "Haddad", "Novak", "Ferreira",
    "Castell", "Dunmore", "Kovacs", "Ashdown", "Ribeiro", "Varga", "Holm", "Pereira", "Quist",
    "Sandoval", "Thorne", "Yilmaz", "Achterberg", "Bellamy", "Crane", "Fenwick", "Galloway",
    "Hartigan", "Ivers", "Jessop", "Moreau", "Petrakis",
)
NAME_STEMS = (
    "Harrowgate", "Fernhollow", "Lumen Harbor", "Stillwater", "Kestrel", "Brightmoor", "Copperfield",
    "Northvale", "Ashcombe", "Redwater", "Silverline", "Meadowbank", "Quayside", "Oakridge", "Bluefen",
    "Granite Peak", "Westmere", "Larkspur", "Thistledown", "Corrin", "Halden", "Marrow Point",
)
TOWNS = (
    "Westbrook", "Norcaster", "Veldhaven", "Eastmarsh", "Pellham", "Ardleigh", "Brackwater",
    "Kilnsey", "Dunmore Bay", "Harlow Cross", "Tamsford", "Oldreach",
)
STREETS = ("Alder Row", "Mill Lane", "Quarry Street", "Harbour Road", "Elm Terrace", "Station Walk", "Kiln Court")


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def company(rng: random.Random, *suffixes: str) -> str:
    return f"{rng.choice(NAME_STEMS)} {rng.choice(suffixes)}"


def two_companies(rng: random.Random, first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, str]:
    """Two company names with different stems, so the parties are never confused."""
    a, b = rng.sample(NAME_STEMS, 2)
    return f"{a} {rng.choice(first)}", f"{b} {rng.choice(second)}"


def random_date(rng: random.Random, first_year: int = 2016, last_year: int = 2034) -> dt.date:
    """A day in [first_year, last_year], never 29 February (so 'same day N years later' exists)."""
    start = dt.date(first_year, 1, 1)
    span = (dt.date(last_year, 12, 31) - start).days
    while True:
        day = start + dt.timedelta(days=rng.randint(0, span))
        if (day.month, day.day) != (2, 29):
            return day


def plus(day: dt.date, days: int) -> dt.date:
    return day + dt.timedelta(days=days)


def other_than(rng: random.Random, options: tuple[int, ...], *avoid: int) -> int:
    return rng.choice([o for o in options if o not in avoid])


def split_amount(rng: random.Random, total: int, parts: int, step: int = 10) -> list[int]:
    """`parts` positive multiples of `step` that sum to `total` (itself a multiple of `step`)."""
    units = total // step
    cuts = sorted(rng.sample(range(1, units), parts - 1))
    bounds = [0, *cuts, units]
    return [(bounds[i + 1] - bounds[i]) * step for i in range(parts)]


# --- layouts ------------------------------------------------------------------------------------

REVIEWERS = ("Compliance Desk", "Internal Audit", "Legal Operations", "Risk Review Team", "Case Officer")


def render(layout: str, case: Case, rng: random.Random) -> str:
    """Lay out `case` as document text, dropping distractors at random until it fits the length cap."""
    clauses = [(c, False) for c in case.clauses]
    for extra in case.extra_clauses:
        clauses.insert(rng.randint(1, len(clauses)), (extra, True))
    events = [(e, False) for e in case.events] + [(e, True) for e in case.extra_events]
    events.sort(key=lambda item: item[0][0])
    reviewer = rng.choice(REVIEWERS)
    while True:
        text = _layout(layout, case, [c for c, _ in clauses], [e for (_, e), _ in events], reviewer)
        optional = [i for i, (_, extra) in enumerate(clauses) if extra]
        optional_events = [i for i, (_, extra) in enumerate(events) if extra]
        if len(text) <= MAX_DOCUMENT_CHARS or not (optional or optional_events):
            return text
        if optional_events and (not optional or rng.random() < 0.5):
            events.pop(rng.choice(optional_events))
        else:
            clauses.pop(rng.choice(optional))


def _layout(layout: str, case: Case, clauses: list[tuple[str, str]], events: list[str], reviewer: str) -> str:
    if layout == "agreement":
        lines = [case.title.upper(), ""]
        lines += [f"{label}: {value}" for label, value in case.header]
        lines.append("")
        lines += [f"{i}. {heading}. {text}" for i, (heading, text) in enumerate(clauses, 1)]
        lines += ["", "File notes"]
        lines += [f"- {event}" for event in events]
    elif layout == "memo":
        lines = ["MEMORANDUM", f"To: {reviewer}", f"Re: {case.title}"]
        lines += [f"{label}: {value}" for label, value in case.header]
        lines += ["", "The relevant terms read:"]
        lines += [f"[{heading}] {text}" for heading, text in clauses]
        lines += ["", "Facts on record:"]
        lines += [f"* {event}" for event in events]
    elif layout == "schedule":
        lines = [f"SCHEDULE - {case.title}"]
        lines += [f"{label} ... {value}" for label, value in case.header]
        lines.append("")
        lines += [f"Section {chr(65 + i)} ({heading}): {text}" for i, (heading, text) in enumerate(clauses)]
        lines += ["", "Chronology"]
        lines += [f"({i}) {event}" for i, event in enumerate(events, 1)]
    else:
        raise ValueError(f"unknown layout {layout!r}")
    return "\n".join(lines)
