"""Hypothesis drills: statements made from training documents' own sentences, for the verdict reader.

ContractNLI asks the same 17 hypotheses of every NDA, so a verdict reader trained on it alone learns
those 17 rather than how a statement stands to a clause. A drill takes one sentence of a training
document and asks it back as a hypothesis in one of three ways:
- entailment: the sentence itself, its numbering, bullet and heading stripped;
- contradiction: the sentence with the polarity of its main clause turned ("may" and "may not", "will
  not pay" and "will pay"), one of its numbers changed or one of its dates moved;
- not mentioned: a sentence of a document about another subject (a lease's clause asked of an NDA).
Each drill is a one-question labelled group in the samples format, so a fit lays it out as a decision
would: the evidence pointer chooses the spans the reader sees beside it.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..grounding.dates import read_dates
from ..grounding.mention import Mention
from ..retrieval.context import SPAN_CHARS
from ..retrieval.spans import split_spans
from .contractnli import LABELS
from .value_drills import DATE_FORMS

ENTAILMENT, CONTRADICTION, ABSENT = LABELS  # the verdict choices, as ContractNLI's questions offer them
MIN_WORDS = 6  # shorter spans are headings, names and table cells, not statements
MAX_WORDS = 60
ATTEMPTS = 20  # tries per drill: a statement with no polarity or number cannot be contradicted
FRAMED_SHARE = 0.5  # of the hypotheses asked as "Hypothesis: ... Does the document entail, ...?"

_NUMBERING = re.compile(  # bullets, bracketed headings, "3.5", "(b)" and "iv)" before a sentence
    r"^\s*(?:[*\u2022-]\s+|\[[^\]]{1,60}\]\s*|\(?[0-9]{1,3}(?:\.[0-9]{1,3})*[.)]?\s+|\(?[a-z]{1,4}\)\s+)+", re.I
)
_NEGATED = re.compile(
    r"\b(shall|must|may|will|can|should|would|is|are|was|were|does|do|did|has|have|had) not\b|\bcannot\b|\bnever\b", re.I
)
_AFFIRMED = re.compile(r"\b(shall|must|may|will|can|should|would|is|are|was|were|has|have)\b(?! not\b)", re.I)
_SUBORDINATE = re.compile(r"^(?:if|where|when|unless|although|while|once|after|before|until|provided)\b[^,]{0,200},\s*", re.I)
_NUMBER = re.compile(r"(?<![\w.,/-])\d{1,3}(?:,\d{3})+(?![\w,/-])|(?<![\w.,/-])\d+(?![\w,/-])")
_FRAMES = (
    "Hypothesis: {}. Does the document entail, contradict, or not mention this?",
    "Hypothesis: {}. Does the agreement entail, contradict, or not mention this?",
)


@dataclass(frozen=True)
class SourceDocument:
    """A training document and its subject (a generator domain, or "nda" for ContractNLI)."""

    subject: str
    text: str


def statement(span: str) -> str | None:
    """A span as a statement to ask back: numbering and bracketed headings stripped, whitespace folded;
    None for a span too short or too long to be one."""
    text = " ".join(_NUMBERING.sub("", span).split()).strip(" ;:")
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not any(c.islower() for c in text):
        return None
    return text


def turned_polarity(text: str) -> str | None:
    """The statement saying the opposite by the first modal or auxiliary of its main clause (after a
    leading "If ..., " or "Where ..., "): a negation removed where it has one ("may not" -> "may",
    "cannot" -> "can", "never" -> "always"), else added ("is" -> "is not"); None where it has neither."""
    leading = _SUBORDINATE.match(text)
    head, text = (text[: leading.end()], text[leading.end() :]) if leading else ("", text)
    turned = _turned(text)
    return None if turned is None else head + turned


def _turned(text: str) -> str | None:
    negated = _NEGATED.search(text)
    if negated is not None:
        word = negated.group(0).lower()
        if word == "cannot":
            turned = "can"
        elif word == "never":
            turned = "always"
        else:
            turned = negated.group(1)
        return text[: negated.start()] + turned + text[negated.end() :]
    affirmed = _AFFIRMED.search(text)
    if affirmed is None:
        return None
    word = affirmed.group(1)
    turned = "cannot" if word.lower() == "can" else f"{word} not"
    return text[: affirmed.start()] + turned + text[affirmed.end() :]


def changed_number(text: str, rng: random.Random) -> str | None:
    """The statement with one of its numbers (digits, with or without thousands commas, not part of a
    date) replaced by another; None where it has none."""
    _, dates = read_dates(text, None)
    found = [m for m in _NUMBER.finditer(text) if not any(a <= m.start() < b for a, b in dates)]
    if not found:
        return None
    match = rng.choice(found)
    value = int(match.group(0).replace(",", ""))
    other = rng.choice([value + rng.randint(1, 9), value * 2 + 1, max(value // 2, 1) if value > 2 else value + 10])
    written = f"{other:,}" if "," in match.group(0) else str(other)
    return text[: match.start()] + written + text[match.end() :]


def moved_date(text: str, rng: random.Random) -> str | None:
    """The statement with one of its dates written in a `DATE_FORMS` form (`2024-03-08`, `8 March 2024`,
    `March 8, 2024`) moved by 1 to 60 days and written alike; None where it has none."""
    written = _date_forms(text)
    if not written:
        return None
    mention, form = rng.choice(written)
    moved = form(mention.value + dt.timedelta(days=rng.choice([-1, 1]) * rng.randint(1, 60)))
    return text[: mention.start] + moved + text[mention.end :]


def _date_forms(text: str) -> list[tuple[Mention, Callable[[dt.date], str]]]:
    """(mention, the form that writes it) of each date the text writes in one of `DATE_FORMS`."""
    mentions, _ = read_dates(text, None)
    return [(m, form) for m in mentions if not m.ambiguous for form in DATE_FORMS if form(m.value) == m.text]


def contradicted(text: str, rng: random.Random) -> str | None:
    """The statement turned, with a number changed or with a date moved (any of those that can be done)."""
    ways = [turned_polarity, lambda t: changed_number(t, rng), lambda t: moved_date(t, rng)]
    rng.shuffle(ways)
    for way in ways:
        changed = way(text)
        if changed is not None and changed != text:
            return changed
    return None


def asked(text: str, rng: random.Random) -> str:
    """The hypothesis as asked: bare, or at chance `FRAMED_SHARE` framed as a question about the document."""
    if rng.random() < FRAMED_SHARE:
        return rng.choice(_FRAMES).format(text.rstrip("."))
    return text


def drill_line(index: int, document: str, hypothesis: str, label: str, prefix: str = "drill") -> dict[str, Any]:
    """A one-question labelled group in the samples format, its id `prefix`-`index`."""
    return {
        "id": f"{prefix}-{index}",
        "document": {"text": document},
        "questions": [{"id": "drill", "text": hypothesis, "schema": {"type": "string", "enum": list(LABELS)}}],
        "labels": {"drill": label},
    }


def hypothesis_drills(sources: Sequence[SourceDocument], count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` drills over `sources`, the three verdicts taking turns; the same arguments give the same
    drills. A "not mentioned" drill asks a statement of a document about another subject, so it needs
    sources of at least two subjects."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if count and len({s.subject for s in sources}) < 2:
        raise ValueError("hypothesis drills need documents about at least two subjects")
    rng = random.Random(f"hypothesis-drills:{seed}")
    statements = {}
    for source in sources:
        said = [s for s in (statement(span.text) for span in split_spans(source.text, SPAN_CHARS)) if s is not None]
        if said:
            statements[source] = said
    if count and len({s.subject for s in statements}) < 2:
        raise ValueError("hypothesis drills need statements from documents about at least two subjects")
    documents = list(statements)
    lines: list[dict[str, Any]] = []
    for _ in range(count * ATTEMPTS):
        if len(lines) == count:
            break
        label = LABELS[len(lines) % len(LABELS)]
        source = rng.choice(documents)
        if label == ABSENT:
            other = rng.choice([d for d in documents if d.subject != source.subject])
            hypothesis = rng.choice(statements[other])
        else:
            said = rng.choice(statements[source])
            hypothesis = said if label == ENTAILMENT else contradicted(said, rng)
        if hypothesis is None:
            continue
        lines.append(drill_line(len(lines), source.text, asked(hypothesis, rng), label))
    if len(lines) < count:
        raise ValueError(f"only {len(lines)} of {count} hypothesis drills could be made from these documents")
    return lines
