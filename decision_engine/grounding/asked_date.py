"""Whether a date question asks when something happened ("On what date did the policyholder discover
the damage?", "When was the load collected?"), which the document records as a date, and the
candidates that cannot answer it: every date reached by a step (a date plus a period, or minus one)
rather than copied. Questions about a date that follows from a rule (a deadline, a due date, an end,
a date something is deemed or treated as happening) are left to the chooser."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .candidates import Candidate

_WHEN_DID = re.compile(r"^\W*(?:on\s+(?:what|which)\s+(?:date|day)|when)\s+(?:did|was|were)\b", re.I)
# words that make the date asked for follow from a rule rather than stand written
_RULED_DATE = re.compile(
    r"\b(?:deadline|due|payable|last|latest|earliest|expir\w*|end(?:s|ed)?|finish\w*|run\s+out|lapse\w*|"
    r"deemed|treated|taken|considered|effect\w*|must|have\s+to|had\s+to|has\s+to|required?|should|"
    r"no\s+later|within|until|extended|renew\w*|would|could)\b",
    re.I,
)


def asks_when_it_happened(question: str) -> bool:
    """Whether the question asks on what date something did happen or was done, with nothing that
    makes the date follow from a rule (`_RULED_DATE`)."""
    return bool(_WHEN_DID.search(question)) and not _RULED_DATE.search(question)


def cannot_have_happened(candidates: Sequence[Candidate]) -> list[bool]:
    """Per candidate, whether it is not a date the document writes: anything but a copy."""
    return [c.operation != "copy" for c in candidates]
