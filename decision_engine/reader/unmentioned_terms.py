"""Questions whose subject the document never names: odds on "not mentioned" for fact questions.

A fact question ("Was the trailer sealed after loading?", "Did the client hold cancellation
insurance?") whose choices include an absence choice ("not mentioned") is about something; where
most of the words that say what it is about appear nowhere in the document, the document does not
speak to it. Words are compared by their first `STEM` letters, so "insulated" finds "insulation" and
"terminate" finds "termination"; function words and the words every question or contract uses
("agreement", "party", "date") do not count. Hypothesis slots are left to the absence gate
(`absence_gate.py`), which is fitted on labelled documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .absence_gate import is_absence_choice, is_hypothesis_slot

STEM = 6  # letters a word is compared by
MIN_MISSING = 3  # content words of the question that must be missing from the document
MIN_SHARE = 0.5  # and the share of its content words they must be
ABSENT_BIAS = 3.0  # log-odds added to the absence choice of such a question

_WORD = re.compile(r"[a-z][a-z'\-]*[a-z]|[a-z]")
_FUNCTION_WORDS = frozenset("""
a an the of to in on at by for from with without and or but not no nor is are was were be been being
do does did done has have had having any all each every some this that these those it its their his her
hers him them they he she we you your our which what who whom whose when where why how whether if than
then there here as into onto over under about after before during between within upon per via must may
might shall should would could can will also only such other same own more most less least very just so
yet either neither both one ever still already
agreement document contract clause section party parties date time file person company
""".split())


def _stems(text: str) -> list[str]:
    return [w[:STEM] for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS and len(w) > 2]


@lru_cache(maxsize=8)
def _document_stems(document: str) -> frozenset[str]:
    """Every word of the document by its first `STEM` letters, read once for all its questions."""
    return frozenset(w[:STEM] for w in _WORD.findall(document.lower()))


def missing_terms(question: str, document: str) -> tuple[int, int]:
    """(how many of the question's content words the document lacks, how many it has in all)."""
    asked = set(_stems(question))
    return len(asked - _document_stems(document)), len(asked)


def unnamed(question: str, document: str) -> bool:
    """Whether the document lacks at least `MIN_MISSING` of the question's content words, and at least
    `MIN_SHARE` of them."""
    missing, asked = missing_terms(question, document)
    return missing >= MIN_MISSING and missing >= MIN_SHARE * asked


def absence_bias(values: Sequence[object], question: str, document: str) -> list[float] | None:
    """Per choice, `ABSENT_BIAS` on the absence choice of a fact question (not a hypothesis) whose
    subject the document does not name, 0 elsewhere; None where nothing is added."""
    absent = [isinstance(v, str) and is_absence_choice(v) for v in values]  # choices may be numbers or booleans
    if is_hypothesis_slot(values) or not any(absent) or not unnamed(question, document):
        return None
    return [ABSENT_BIAS if a else 0.0 for a in absent]
