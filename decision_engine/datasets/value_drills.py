"""Value drills: records of dated acts and amounts about random parties, asked with generic questions.

The domain generators ask the same few questions of the same few documents, so a value chooser fitted
on them alone learns where their answers stand, not how a question names its value. A drill is a
file of a dozen acts ("On 4 March 2024 the carrier collected the load."), terms that set deadlines
from them ("The carrier must deliver the load within 5 days after the day it collected the load."), charges
and counts; its questions ask in general words for one value among many of the same kind: when an
act happened, by when one must be done, how many days lay between two acts, how much a charge was,
what charges come to, what is left after a deduction, a percentage of an amount, how many items.
Every answer is a mention copied or one step over mentions, as a grounded slot reaches it.
Drill lines have the samples format with labels, so `fit-chooser --drills N` trains on them beside
generated groups.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..grounding.date_math import shift
from .domains.common import DATE, MONTHS, company, integer, person, random_date

PARTIES = (
    "the tenant", "the landlord", "the supplier", "the buyer", "the contractor", "the employer", "the employee",
    "the insurer", "the policyholder", "the carrier", "the customer", "the provider", "the lender", "the borrower",
    "the agent", "the operator", "the client", "the venue", "the seller", "the licensee", "the claimant",
    "the council", "the school", "the club", "the hospital", "the distributor", "the consultant", "the auditor",
)


@dataclass(frozen=True)
class Act:
    """Something a party does to an object, in the forms a record and a question need."""

    past: str  # "returned"
    base: str  # "return"
    thing: str  # "the keys"


ACTS = tuple(Act(*words.split("|")) for words in (
    "delivered|deliver|the goods", "returned|return|the keys", "submitted|submit|the claim form",
    "paid|pay|the first instalment", "signed|sign|the contract", "reported|report|the incident",
    "inspected|inspect|the premises", "issued|issue|the invoice", "received|receive|the invoice",
    "sent|send|the written notice", "filed|file|the appeal", "approved|approve|the budget",
    "completed|complete|the works", "cancelled|cancel|the booking", "renewed|renew|the licence",
    "collected|collect|the load", "discovered|discover|the damage", "notified|notify|the regulator",
    "accepted|accept|the offer", "lodged|lodge|the complaint", "repaired|repair|the roof",
    "installed|install|the equipment", "shipped|ship|the order", "published|publish|the report",
    "ordered|order|the spare parts", "booked|book|the hall", "vacated|vacate|the flat",
    "terminated|terminate|the agreement", "paid|pay|the deposit", "served|serve|the default notice",
    "certified|certify|the accounts", "handed over|hand over|the site", "registered|register|the vehicle",
    "refunded|refund|the fee", "tested|test|the alarm system", "settled|settle|the final account",
    "requested|request|an extension", "confirmed|confirm|the reservation", "dismissed|dismiss|the supervisor",
    "assessed|assess|the claim", "uploaded|upload|the safety plan", "withdrew|withdraw|the tender",
    "closed|close|the account", "reopened|reopen|the shop", "examined|examine|the samples",
    "produced|produce|the compliance certificate", "scheduled|schedule|the hearing", "released|release|the retention",
))

CHARGES = (
    "hire fee", "cleaning fee", "late fee", "excess", "service charge", "repair cost", "deposit", "booking fee",
    "penalty", "admin fee", "delivery charge", "insurance premium", "course fee", "retainer", "call-out charge",
    "storage charge", "licence fee", "survey fee", "legal costs", "travel costs", "catering charge", "credit",
)
COUNTED = (
    ("pallets", "loaded", "load"), ("units", "shipped", "ship"), ("visitors", "admitted", "admit"),
    ("flights", "made", "make"), ("claims", "lodged", "lodge"), ("staff", "trained", "train"),
    ("vehicles", "inspected", "inspect"), ("samples", "tested", "test"), ("rooms", "booked", "book"),
    ("invoices", "issued", "issue"), ("parcels", "delivered", "deliver"), ("trees", "planted", "plant"),
)
TITLES = (
    "Case record", "File summary", "Account history", "Project log", "Matter notes", "Review file",
    "Dispute record", "Service history", "Claim file", "Contract file", "Compliance record", "Job sheet",
)
NUMBER_WORDS = {
    1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten",
    12: "twelve", 14: "fourteen", 15: "fifteen", 20: "twenty", 21: "twenty-one", 28: "twenty-eight", 30: "thirty",
    45: "forty-five", 60: "sixty", 90: "ninety",
}
PERIODS = (  # (count, unit) a term may set
    *((n, "days") for n in (3, 5, 7, 10, 14, 15, 20, 21, 28, 30, 45, 60, 90)),
    *((n, "weeks") for n in (1, 2, 3, 4, 6, 8)), *((n, "months") for n in (1, 2, 3, 6, 12)),
)
QUESTION_COUNT = 8
SHARES = {"when": 2, "deadline": 2, "interval": 1, "amount": 2}  # questions of each kind a drill asks first


@dataclass
class Record:
    """One drill file as it is written, before its questions are chosen."""

    style: Callable[[dt.date], str]
    money: Callable[[int], str]
    terms: list[str]
    chronology: list[tuple[dt.date, str]]
    questions: list[tuple[str, str, dict[str, Any], Any]]  # (kind, text, schema, gold)


def _day_month_year(d: dt.date) -> str:
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def _month_day_year(d: dt.date) -> str:
    return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"


DATE_FORMS: tuple[Callable[[dt.date], str], ...] = (dt.date.isoformat, _day_month_year, _month_day_year)


def date_style(rng: random.Random) -> Callable[[dt.date], str]:
    """One way to write every date of a file (`DATE_FORMS`): ISO, day month year, or month day, year."""
    return DATE_FORMS[rng.randrange(len(DATE_FORMS))]


def written_period(count: int, unit: str, rng: random.Random) -> str:
    """"14 days", "fourteen days", "fourteen (14) days" or "1 week"."""
    noun = unit if count != 1 else unit[:-1]
    word = NUMBER_WORDS.get(count)
    form = rng.random()
    if word and form < 0.3:
        return f"{word} {noun}"
    if word and form < 0.45:
        return f"{word} ({count}) {noun}"
    return f"{count} {noun}"


def phrase(act: Act, party: str, tense: str) -> str:
    """"the tenant returned the keys" (past) or "the tenant return the keys" (base, after "did"/"must")."""
    return f"{party} {act.past if tense == 'past' else act.base} {act.thing}"


def _ask(rng: random.Random, *forms: str) -> str:
    text = rng.choice(forms)
    return text[0].upper() + text[1:]


def build_record(rng: random.Random) -> Record:
    """A drill file: acts on distinct dates, deadline terms counted from some of them, charges and counts."""
    style = date_style(rng)
    currency = rng.choice(("", "$", "£", "EUR "))
    money = lambda amount: f"{currency}{amount:,}"  # noqa: E731
    parties = rng.sample(PARTIES, 4)
    acts = rng.sample(ACTS, rng.randint(7, 11))
    start = random_date(rng, 2018, 2031)
    days = sorted(rng.sample(range(0, 160), len(acts)))
    done = [(start + dt.timedelta(days=d), act, rng.choice(parties)) for d, act in zip(days, acts)]
    record = Record(style, money, [], [], [])
    for day, act, party in done:
        record.chronology.append((day, phrase(act, party, "past")))
        record.questions.append(("when", _ask(
            rng, f"on what date did {phrase(act, party, 'base')}?", f"when did {phrase(act, party, 'base')}?",
            f"what was the date on which {phrase(act, party, 'past')}?",
            f"on which day did {phrase(act, party, 'base')}?",
        ), DATE, day.isoformat()))
    _deadlines(rng, record, done, parties)
    _intervals(rng, record, done)
    _charges(rng, record)
    _counts(rng, record)
    return record


def _deadlines(rng: random.Random, record: Record, done, parties) -> None:
    """Terms that set a date from an act: "within N units after", or "no later than N units before"."""
    spare = [a for a in ACTS if a not in {act for _, act, _ in done}]
    periods = rng.sample(PERIODS, 4)
    for (count, unit), act in zip(periods, rng.sample(spare, rng.randint(2, 4))):
        day, after, party = rng.choice(done)
        owner = rng.choice(parties)
        written = written_period(count, unit, rng)
        # the day counted from is named by its act only, as real terms mostly do: its date is in the chronology
        since = f"the day {phrase(after, party, 'past')}"
        before = unit == "days" and rng.random() < 0.25
        if before:
            due = shift(day, -count, unit)
            record.terms.append(_ask(
                rng, f"{owner} must {act.base} {act.thing} no later than {written} before {since}.",
                f"at least {written} before {since}, {owner} must {act.base} {act.thing}.",
            ))
        else:
            due = shift(day, count, unit)
            record.terms.append(_ask(
                rng, f"{owner} must {act.base} {act.thing} within {written} after {since}.",
                f"within {written} of the date on which {phrase(after, party, 'past')}, "
                f"{owner} shall {act.base} {act.thing}.",
                f"{owner} has {written} from {since} to {act.base} {act.thing}.",
            ))
        record.questions.append(("deadline", _ask(
            rng, f"by what date must {owner} {act.base} {act.thing}?",
            f"what is the last day on which {owner} may {act.base} {act.thing}?",
            f"what was the deadline for {owner} to {act.base} {act.thing}?",
        ), DATE, due.isoformat()))


def _intervals(rng: random.Random, record: Record, done) -> None:
    """Days between two acts, counted from the earlier."""
    for _ in range(2):
        (first, a, pa), (second, b, pb) = sorted(rng.sample(done, 2), key=lambda item: item[0])
        if first == second:
            continue
        record.questions.append(("interval", _ask(
            rng, f"how many days passed between the day {phrase(a, pa, 'past')} and the day {phrase(b, pb, 'past')}?",
            f"counting in calendar days, how long after {phrase(a, pa, 'past')} did {phrase(b, pb, 'base')}?",
        ), integer(0, 10000), (second - first).days))


def _charges(rng: random.Random, record: Record) -> None:
    """A list of charges; questions on one charge, on all or two of them, on a balance and a percentage."""
    m = record.money
    names = rng.sample(CHARGES, rng.randint(3, 4))
    amounts = [rng.randrange(20, 5000, rng.choice((1, 5, 10, 50))) for _ in names]
    listed = "; ".join(f"{name} {m(amount)}" for name, amount in zip(names, amounts))
    record.terms.append(_ask(rng, f"charges invoiced: {listed}.", f"the account shows these charges: {listed}."))
    pick = rng.randrange(len(names))
    record.questions.append(("amount", _ask(
        rng, f"how much was the {names[pick]}?", f"what amount was charged as the {names[pick]}?",
        f"what was the {names[pick]}?",
    ), integer(0, 1_000_000), amounts[pick]))
    record.questions.append(("amount", _ask(
        rng, "what do the charges invoiced come to in total?", "what is the total of all the charges invoiced?",
        "adding up every charge on the account, how much is owed?",
    ), integer(0, 1_000_000), sum(amounts)))
    i, j = rng.sample(range(len(names)), 2)
    record.questions.append(("amount", _ask(
        rng, f"what are the {names[i]} and the {names[j]} together?",
        f"how much do the {names[i]} and the {names[j]} add up to?",
    ), integer(0, 1_000_000), amounts[i] + amounts[j]))
    held = rng.randrange(1000, 20000, 50)
    taken = rng.randrange(50, held - 10, 10)
    pot, cut = rng.sample(("security deposit", "advance", "float", "prepayment", "retention fund"), 1)[0], rng.choice(
        ("damage charge", "deduction", "set-off", "withholding"))
    record.terms.append(_ask(
        rng, f"a {pot} of {m(held)} is held; a {cut} of {m(taken)} was made from it.",
        f"from the {pot} ({m(held)}) the holder kept {m(taken)} as a {cut}.",
    ))
    record.questions.append(("amount", _ask(
        rng, f"how much of the {pot} is left after the {cut}?", f"what remains of the {pot} once the {cut} is taken?",
        f"after the {cut}, what balance of the {pot} must be returned?",
    ), integer(0, 1_000_000), held - taken))
    share = rng.choice((5, 10, 12, 15, 20, 25, 30, 40, 50))
    base = rng.randrange(200, 40000, 10)
    fee, of = rng.choice(("commission", "late payment charge", "cancellation charge", "discount", "bonus")), rng.choice(
        ("the contract price", "the annual rent", "the order value", "the fee", "the sum insured"))
    record.terms.append(_ask(
        rng, f"{of} is {m(base)}. The {fee} is {share}% of {of}.",
        f"the {fee} equals {share}% of {of}, which is {m(base)}.",
    ))
    record.questions.append(("amount", _ask(
        rng, f"how much is the {fee}?", f"what amount is due as the {fee}?",
    ), integer(0, 1_000_000), (2 * share * base + 100) // 200))


def _counts(rng: random.Random, record: Record) -> None:
    """Counts written beside a dated act: "On 3 May 2024, 240 pallets were loaded."."""
    for items, past, base in rng.sample(COUNTED, 2):
        day = record.chronology[rng.randrange(len(record.chronology))][0]
        count = rng.randint(2, 400)
        record.chronology.append((day, f"{count} {items} were {past}"))
        record.questions.append(("amount", _ask(
            rng, f"how many {items} were {past}?", f"what number of {items} did they {base}?",
        ), integer(0, 100_000), count))


def render_record(record: Record, title: str, rng: random.Random) -> str:
    """The file as text: a title, the terms (numbered, lettered or bulleted), then the dated acts."""
    d = record.style
    terms = list(record.terms)
    rng.shuffle(terms)
    marks = rng.choice((lambda i: f"{i + 1}.", lambda i: f"({chr(97 + i)})", lambda i: "-"))
    lines = [title.upper(), f"Reference: {rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}", "", "Terms"]
    lines += [f"{marks(i)} {t}" for i, t in enumerate(terms)]
    lines += ["", rng.choice(("Chronology", "Events", "What happened", "Record of events"))]
    events = sorted(record.chronology, key=lambda item: item[0])
    prose = rng.random() < 0.4
    for day, what in events:
        if prose:
            lines.append(f"On {d(day)}, {what}.")
        else:
            lines.append(rng.choice((f"{d(day)}: {what}.", f"{d(day)} - {what}.")))
    return "\n".join(lines)


def drill_group(seed: int, index: int) -> dict[str, Any]:
    """One drill as a labelled request line (samples format), up to eight of its questions asked."""
    rng = random.Random(f"value-drills:{seed}:{index}")
    record = build_record(rng)
    owner = company(rng, "Ltd", "LLP", "Group", "Services") if rng.random() < 0.5 else person(rng)
    title = f"{rng.choice(TITLES)} - {owner}"
    text = render_record(record, title, rng)
    chosen = choose_questions(record.questions, rng)
    ids = [f"q{k}" for k in range(len(chosen))]
    return {
        "id": f"drill-{seed}-{index}",
        "document": {"text": text, "title": title, "id": f"doc-drill-{seed}-{index}"},
        "questions": [{"id": qid, "text": q, "schema": dict(schema)} for qid, (_, q, schema, _) in zip(ids, chosen)],
        "labels": {qid: gold for qid, (_, _, _, gold) in zip(ids, chosen)},
    }


def choose_questions(questions: list[tuple], rng: random.Random) -> list[tuple]:
    """Up to `QUESTION_COUNT` questions: `SHARES` of each kind where there are that many, then any, in a random order."""
    chosen = []
    for kind, share in SHARES.items():
        of_kind = [q for q in questions if q[0] == kind]
        chosen += rng.sample(of_kind, min(share, len(of_kind)))
    rest = [q for q in questions if q not in chosen]
    chosen += rng.sample(rest, min(QUESTION_COUNT - len(chosen), len(rest)))
    rng.shuffle(chosen)
    return chosen


def drill_groups(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` drill lines; the same arguments give the same lines."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    return [drill_group(seed, i) for i in range(count)]
