"""Paraphrase drills: hypotheses written in other words than the document's, for the verdict reader.

A hypothesis drill (`hypothesis_drills.py`) asks a document's own sentence back, so it can be matched
word for word. Hand-written hypotheses say what a clause says in other words ("counts towards his
continuous service" against a clause on continuous employment), and ContractNLI's 17 hypotheses are
too few to teach that. The generator writes every clause and file note of a case in four phrasings
with the same facts, so a sentence of another phrasing of the document's own case is a hypothesis in
other words:
- entailment: a sentence of a clause or file note the document holds, from another phrasing; or one
  of the case's yes-or-no questions said as the statement that is true of it (`domains/statements.py`),
  a clause applied to the facts of the file;
- contradiction: such a sentence with its polarity turned, a number changed or a date moved
  (`hypothesis_drills.contradicted`); or the statement of a yes-or-no question that is false of it;
- not mentioned: a sentence, in another phrasing, of a clause another case of the same domain has
  and this document lacks (an optional term), or else of a document of another domain.
Only the training phrasings and groups of the training split are read. Each drill is a one-question
labelled group in the samples format, as hypothesis drills are.
"""

from __future__ import annotations

import random
from typing import Any

from ..retrieval.context import SPAN_CHARS
from ..retrieval.spans import split_spans
from .domains.common import Case
from .domains.statements import STATEMENTS
from .hypothesis_drills import ABSENT, ATTEMPTS, ENTAILMENT, LABELS, asked, contradicted, drill_line, statement
from .linked_groups import HELD_OUT, reworded_cases

SEED = 14_000  # generated groups the drills read: apart from every fit's
OTHER_SEED = 15_000  # and those their absent terms come from
VARIANTS = tuple(v for v in range(4) if v != HELD_OUT)  # the training clause phrasings
STATEMENT_SHARE = 0.5  # of entailed and contradicted drills that say a yes-or-no answer
LOOKAHEAD = 48  # later groups searched for a term a document lacks
OTHER_DOMAIN_SHARE = 0.2  # chance that another domain's group met on the way gives it instead


def paraphrase_drills(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` drills, the three verdicts taking turns, each over a generated training document; the
    same arguments give the same drills."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    rng = random.Random(f"paraphrase-drills:{seed}")
    lines: list[dict[str, Any]] = []
    for index in range(count * ATTEMPTS):
        if len(lines) == count:
            break
        domain, text, case, reworded = reworded_cases("train", SEED + seed, index, VARIANTS)
        others = [v for v in reworded if v != _variant(case, reworded)]
        if not others:
            continue
        variant = rng.choice(others)
        label = LABELS[len(lines) % len(LABELS)]
        if label == ABSENT:
            hypothesis = _absent_statement(rng, domain, reworded[variant], index, variant, seed)
        elif rng.random() < STATEMENT_SHARE:
            hypothesis = answer_said(rng, domain, case, label == ENTAILMENT)
        else:
            said = rng.choice(_held_statements(text, case, reworded[variant]) or [None])
            hypothesis = said if label == ENTAILMENT or said is None else contradicted(said, rng)
        if hypothesis is not None:
            lines.append(drill_line(len(lines), text, asked(hypothesis, rng), label, prefix="paraphrase"))
    if len(lines) < count:
        raise ValueError(f"only {len(lines)} of {count} paraphrase drills could be made")
    return lines


def _variant(case: Case, reworded: dict[int, Case]) -> int | None:
    """Which phrasing `case` was written in: the rebuilt case whose clauses are its clauses."""
    return next((v for v, other in reworded.items() if other.clauses == case.clauses), None)


def _held_statements(text: str, case: Case, other: Case) -> list[str]:
    """Sentences of `other`'s clauses and file notes (the case in another phrasing) whose own
    phrasing the document `text` holds (a distractor may have been left out of it)."""
    pairs = list(zip(case.clauses, other.clauses)) + list(zip(case.extra_clauses, other.extra_clauses))
    written = [theirs for (_, own), (_, theirs) in pairs if own in text]
    events = list(zip(case.events, other.events)) + list(zip(case.extra_events, other.extra_events))
    written += [theirs for (_, own), (_, theirs) in events if own in text]
    return _statements(written)


def answer_said(rng: random.Random, domain: str, case: Case, true: bool) -> str:
    """One of the case's yes-or-no answers said as a statement that is `true` of it, or false."""
    said = STATEMENTS[domain]
    question = rng.choice([q for q in said if isinstance(case.labels.get(q), bool)])
    forms = said[question].yes if case.labels[question] == true else said[question].no
    return rng.choice(forms).format_map(case.slots)


def _absent_statement(rng: random.Random, domain: str, mine: Case, index: int, variant: int, seed: int) -> str | None:
    """A sentence of a clause the document's case (`mine`, in phrasing `variant`) does not have: an
    optional term of another case of its domain where one is found among the next groups, else any
    clause of another domain's document."""
    headings = {heading for heading, _ in mine.clauses + mine.extra_clauses}
    for later in range(index + 1, index + 1 + LOOKAHEAD):
        other_domain, _, _, reworded = reworded_cases("train", OTHER_SEED + seed, later, (variant,))
        other = reworded.get(variant)
        if other is None:
            continue
        if other_domain == domain:
            missing = [t for heading, t in other.clauses + other.extra_clauses if heading not in headings]
            if missing:
                return rng.choice(_statements(missing) or [None])
        elif rng.random() < OTHER_DOMAIN_SHARE:
            return rng.choice(_statements([t for _, t in other.clauses]) or [None])
    return None


def _statements(texts: list[str]) -> list[str]:
    return [s for t in texts for s in (statement(span.text) for span in split_spans(t, SPAN_CHARS)) if s is not None]
