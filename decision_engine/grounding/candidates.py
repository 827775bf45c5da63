"""The values an integer or date slot can reach from a document's mentions: a copy or one step.

Order is deterministic: every copy first, in document order; then the one-step results ordered by
their latest operand (so steps over earlier mentions come first, whatever the operation), then by
operation in `OPERATIONS` order, then by operands. Values outside the slot's bounds are dropped, a
value reachable several ways keeps its first `derivations` derivations (one by default; a grounded
slot keeps `DERIVATIONS`, so "2029-10-15 + 4 days" is not hidden behind "2029-10-13 + 5 business
days" of the same value), and at most `limit` candidates remain.

Amounts add and subtract within their own kind: numbers with numbers, durations with durations of
the same unit (30 days + 15 days, never 30 days + 2 weeks or 10 business days). Two-operand steps run over the first
`PAIR_POOL` distinct values of each kind, sums of three and four over the first `SUM_POOL`; a list's
items add up wherever it stands: every run of two to four amounts of one kind written one after the
other on one line (`list_runs`) is summed too.
Percentages are copied and serve as the p of "p percent of" a number, never as an amount. A written
list of percentages (a share register: "A 30%; B 12%; C 41%") is also counted against each other
percentage of the document as a threshold: how many of its items are at or above it
(`percent_lists`); a count keeps its own `derivations`, apart from the other ways to its value, or
the small numbers that many steps reach would hide every count.
An integer slot whose bounds allow it may also answer 0 from no mention at all ("zero": nothing owed,
nothing short, nothing found), which no step over written values reaches.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from .date_math import shift
from .mention import Mention

OPERATIONS = (
    "copy", "date_plus", "date_minus", "days_between", "add", "subtract", "sum", "percent_of", "zero", "count_at_least",
)
COUNT = OPERATIONS.index("count_at_least")  # value choosers fitted before counts know the operations before it
MAX_CANDIDATES = 256  # keeps a slot's table of choices small
PAIR_POOL = 24  # distinct values per operand role in two-operand steps (276 pairs at most)
SUM_POOL = 8  # sums of three and four amounts over the first 8 distinct ones (56 + 70 sums)
MAX_RUN = 4  # the most items of a written list that are summed (a sum's operands)
MAX_COUNTED = 6  # the most items of a written list of percentages that one count reads
DERIVATIONS = 3  # the ways to reach one value a grounded slot weighs (the chooser sums them)

_RANK = {operation: rank for rank, operation in enumerate(OPERATIONS)}


@dataclass(frozen=True)
class Candidate:
    """A value a slot may take, with how it is reached from the mentions."""

    value: int | dt.date
    operation: str  # one of OPERATIONS ("compare" for the pair a compared boolean rests on)
    operands: tuple[int, ...]  # indices into the mention list
    terms: tuple[str, ...]  # the operands as `describe` writes them

    def describe(self) -> str:
        """The derivation in words: "2024-03-08 + 30 days", "5% of 16000"."""
        terms = self.terms
        if self.operation == "copy":
            return f"copy {terms[0]}"
        if self.operation == "zero":
            return "0 (nothing written to count)"
        if self.operation == "compare":
            return f"{terms[0]} compared with {terms[1]}"
        if self.operation == "date_minus" or self.operation == "subtract":
            return f"{terms[0]} - {terms[1]}"
        if self.operation == "days_between":
            return f"days from {terms[0]} to {terms[1]}"
        if self.operation == "percent_of":
            return f"{terms[0]} of {terms[1]}"
        if self.operation == "count_at_least":
            return f"how many of the percentages {terms[1]} to {terms[2]} are at least {terms[0]}"
        return " + ".join(terms)


def integer_candidates(
    mentions: Sequence[Mention],
    minimum: int | None = None,
    maximum: int | None = None,
    limit: int = MAX_CANDIDATES,
    zero: bool = True,
    derivations: int = 1,
    counts: bool = True,
) -> list[Candidate]:
    """Copies of numbers and duration counts, then 0 (with `zero`), days between dates, a + b,
    a - b, sums, p% of a, and (with `counts`) the items of a list of percentages at or above a
    threshold; each value reached at most `derivations` ways."""
    copies = [_step("copy", m.value, i) for i, m in enumerate(mentions) if m.kind != "date"]
    if zero:
        copies.append(_step("zero", 0))  # after the copies: a "0" written in the text keeps its mention
    groups = _amount_groups(mentions)
    percents = _distinct(mentions, lambda m: m.unit == "percent")[:PAIR_POOL]
    dates = _distinct(mentions, lambda m: m.kind == "date")[:PAIR_POOL]
    steps = []
    for i, j in combinations(dates, 2):
        if mentions[i].start != mentions[j].start:  # not two readings of one ambiguous date
            early, late = sorted((i, j), key=lambda k: mentions[k].value)
            days = (mentions[late].value - mentions[early].value).days
            steps.append(_step("days_between", days, early, late))
    for amounts in groups.values():
        for i, j in combinations(amounts, 2):
            a, b = mentions[i].value, mentions[j].value
            steps.append(_step("add", a + b, i, j))
            big, small = (i, j) if a > b else (j, i)
            steps.append(_step("subtract", abs(a - b), big, small))
        for size in (3, 4):
            for terms in combinations(amounts[:SUM_POOL], size):
                steps.append(_step("sum", sum(mentions[k].value for k in terms), *terms))
    for run in list_runs(mentions):
        operation = "add" if len(run) == 2 else "sum"
        steps.append(_step(operation, sum(mentions[k].value for k in run), *run))
    for p in percents:
        for a in groups.get("number", []):
            # Round half up, in integers: 5% of 1,450 = 72.5 -> 73.
            value = (2 * mentions[p].value * mentions[a].value + 100) // 200
            steps.append(_step("percent_of", value, p, a))
    if counts:
        steps.extend(_counts(mentions, percents))
    return _finish(mentions, copies, steps, _within(minimum, maximum), limit, derivations)


def date_candidates(
    mentions: Sequence[Mention],
    low: dt.date | None = None,
    high: dt.date | None = None,
    limit: int = MAX_CANDIDATES,
    derivations: int = 1,
) -> list[Candidate]:
    """Copies of dates, and each date plus or minus each duration; each value reached at most
    `derivations` ways."""
    copies = [_step("copy", m.value, i) for i, m in enumerate(mentions) if m.kind == "date"]
    dates = _distinct(mentions, lambda m: m.kind == "date")[:PAIR_POOL]
    durations = _distinct(mentions, lambda m: m.kind == "duration", key=lambda m: (m.value, m.unit, m.business))
    steps = []
    for d in dates:
        for u in durations[:PAIR_POOL]:
            day, duration = mentions[d], mentions[u]
            for operation, sign in (("date_plus", 1), ("date_minus", -1)):
                try:
                    value = shift(day.value, sign * duration.value, duration.unit, duration.business)
                except OverflowError:
                    continue  # past the ends of the calendar
                steps.append(_step(operation, value, d, u))
    return _finish(mentions, copies, steps, _within(low, high), limit, derivations)


def amount_group(mention: Mention) -> str | None:
    """Which amounts `mention` adds up with: "number" for plain numbers, the unit for durations (with
    " business" for business days); None for dates and percentages."""
    if mention.kind == "date" or mention.unit == "percent":
        return None
    return "number" if mention.unit is None else mention.unit + (" business" if mention.business else "")


def measure(candidate: Candidate, mentions: Sequence[Mention]) -> str:
    """What a candidate's value counts, so that only like is compared with like: "date"; "days" for
    the days between two dates; a duration's unit (with " business" for business days) for a copy of
    a duration or a step over durations; "percent" for a copied percentage; "number" otherwise."""
    if isinstance(candidate.value, dt.date):
        return "date"
    if candidate.operation == "days_between":
        return "days"
    if candidate.operation in ("percent_of", "zero", "count_at_least") or not candidate.operands:
        return "number"
    return amount_group(mentions[candidate.operands[0]]) or "percent"


def in_one_list(head: Mention, other: Mention) -> bool:
    """Whether `other` may be an item of the written list `head` is in: an amount of the same group on
    the same line."""
    group = amount_group(head)
    return group is not None and amount_group(other) == group and other.line == head.line


def list_runs(mentions: Sequence[Mention]) -> list[tuple[int, ...]]:
    """Every run of 2 to `MAX_RUN` amounts of one group written one after the other on one line, with
    no other mention between them (mention indices, in text order)."""
    runs = []
    for first in range(len(mentions)):
        if amount_group(mentions[first]) is None:
            continue
        run = [first]
        for k in range(first + 1, len(mentions)):
            if not in_one_list(mentions[first], mentions[k]) or len(run) == MAX_RUN:
                break
            run.append(k)
            runs.append(tuple(run))
    return runs


def percent_lists(mentions: Sequence[Mention]) -> list[tuple[int, ...]]:
    """Every run of 2 to `MAX_COUNTED` percentages written one after the other on one line (mention
    indices, in text order); other values between them do not break a run ("6,000 shares (60%)")."""
    runs = []
    for first, head in enumerate(mentions):
        if head.unit != "percent":
            continue
        run = [first]
        for k in range(first + 1, len(mentions)):
            if mentions[k].line != head.line or len(run) == MAX_COUNTED:
                break
            if mentions[k].unit == "percent":
                run.append(k)
                runs.append(tuple(run))
    return runs


def _counts(mentions: Sequence[Mention], thresholds: Sequence[int]) -> list[_Step]:
    """Per list of percentages and threshold percentage outside it, how many items are at or above it;
    operands: the threshold, the list's first item and its last."""
    steps = []
    for run in percent_lists(mentions):
        for t in thresholds:
            if t not in run:
                value = sum(mentions[k].value >= mentions[t].value for k in run)
                steps.append(_step("count_at_least", value, t, run[0], run[-1]))
    return steps


def covers(candidates: Iterable[Candidate], value: int | dt.date) -> bool:
    """Whether some candidate takes exactly `value`."""
    return any(type(c.value) is type(value) and c.value == value for c in candidates)


_Step = tuple  # (value, operation, operands): a candidate before it is kept and written out


def _step(operation: str, value: int | dt.date, *operands: int) -> _Step:
    return value, operation, operands


def _term(mention: Mention) -> str:
    """A mention as a derivation writes it: "2024-03-08", "16000", "5%", "10 business days"."""
    if mention.kind == "date":
        return mention.value.isoformat()
    if mention.unit == "percent":
        return f"{mention.value}%"
    if mention.kind == "duration":
        unit = mention.unit if mention.value != 1 else mention.unit[:-1]
        return f"{mention.value} {'business ' if mention.business else ''}{unit}"
    return str(mention.value)


def _amount_groups(mentions: Sequence[Mention]) -> dict[str, list[int]]:
    """Amounts that add up together: plain numbers, and durations of one unit; distinct, capped."""
    groups: dict[str, list[int]] = {}
    seen: set[tuple[str, int]] = set()
    for i, mention in enumerate(mentions):
        group = amount_group(mention)
        if group is None:
            continue
        if (group, mention.value) not in seen:
            seen.add((group, mention.value))
            groups.setdefault(group, []).append(i)
    return {group: indices[:PAIR_POOL] for group, indices in groups.items()}


def _distinct(
    mentions: Sequence[Mention], wanted: Callable[[Mention], bool], key: Callable[[Mention], object] | None = None
) -> list[int]:
    """Indices of the first mention of each distinct value (or `key`) among the wanted ones."""
    seen: set = set()
    kept = []
    for i, mention in enumerate(mentions):
        mark = mention.value if key is None else key(mention)
        if wanted(mention) and mark not in seen:
            seen.add(mark)
            kept.append(i)
    return kept


def _within(low, high) -> Callable[[object], bool]:
    """A test for the slot's inclusive bounds; None leaves that side open."""
    return lambda value: (low is None or value >= low) and (high is None or value <= high)


def _finish(
    mentions: Sequence[Mention], copies: list[_Step], steps: list[_Step], allowed: Callable, limit: int,
    derivations: int = 1,
) -> list[Candidate]:
    """Copies, then steps in their fixed order; in bounds, the first `derivations` derivations of a
    value (and as many counts of it), capped; only the kept ones are written out as candidates."""
    steps.sort(key=lambda c: (max(c[2]), _RANK[c[1]], c[2]))
    kept: list[_Step] = []
    seen: dict = {}
    for step in copies + steps:
        if len(kept) >= limit:
            break
        way = (step[0], step[1] == "count_at_least")
        if seen.get(way, 0) < derivations and allowed(step[0]):
            seen[way] = seen.get(way, 0) + 1
            kept.append(step)
    terms: dict[int, str] = {}
    for _, _, operands in kept:
        for i in operands:
            if i not in terms:
                terms[i] = _term(mentions[i])
    return [Candidate(value, operation, operands, tuple(terms[i] for i in operands)) for value, operation, operands in kept]
