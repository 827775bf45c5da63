"""Joined documents: a training document filed together with others about other matters.

A generated document holds one case in about a thousand characters, so each value a question asks
for stands among a handful of others. Real files are longer: a contract's terms, a log, a letter
about something else, each full of dates and amounts. A chooser trained only on short documents
learns where the right value usually stands (the latest date, the second amount) more than what it
is. Joining each of some training documents with one to three others, about matters its questions do
not ask of (another domain, no question in common), keeps every label true while the values the
questions must pass over multiply.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

SEPARATOR = "\n\n"  # between the joined documents
MAX_JOINED = 3  # other documents joined to one, at most


def _subject(line: dict) -> tuple[str, frozenset[str]]:
    return str(line.get("domain", "")), frozenset(q["id"] for q in line["questions"])


def _unrelated(line: dict, other: dict) -> bool:
    """Whether `other` is about another matter: another domain, and no question id in common."""
    (domain, asked), (other_domain, other_asked) = _subject(line), _subject(other)
    return other is not line and (not domain or domain != other_domain) and not asked & other_asked


def joined_documents(lines: Sequence[dict], share: float, seed: int = 0) -> list[dict]:
    """The labelled request lines, each at chance `share` with its document joined to one to three
    other lines' documents about other matters (before or after it, in a random order); questions,
    labels and rules stay, and any gold evidence offsets move with the document's own text."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the share of joined documents must be between 0 and 1, not {share}")
    rng = random.Random(seed)
    out = []
    for line in lines:
        if rng.random() >= share:
            out.append(line)
            continue
        others = [o for o in rng.sample(list(lines), min(len(lines), 8)) if _unrelated(line, o)][: rng.randint(1, MAX_JOINED)]
        if not others:
            out.append(line)
            continue
        parts = [o["document"]["text"] for o in others]
        at = rng.randint(0, len(parts))
        own = line["document"]["text"]
        shift = sum(len(p) + len(SEPARATOR) for p in parts[:at])
        text = SEPARATOR.join([*parts[:at], own, *parts[at:]])
        joined = {**line, "document": {**line["document"], "text": text}}
        if line.get("evidence"):
            joined["evidence"] = {k: [[a + shift, b + shift] for a, b in v] for k, v in line["evidence"].items()}
        out.append(joined)
    return out
