"""Cutting a document into retrievable spans: clauses, sentences and list items, as character offsets."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words that end in a period without ending a sentence (lowercase, without the period).
ABBREVIATIONS = frozenset(
    """
    e.g i.e cf viz vs v al approx inc ltd co corp llc llp plc bv gmbh pty no nos nr art arts sec secs
    sect para paras cl ch pp p vol mr mrs ms dr prof st jr sr messrs fig figs dept est ref u.s u.k
    jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)

# A line break starts a new span unless it only wraps a sentence: a letter or comma before it,
# a lowercase letter after it.
_LINE_BREAK = re.compile(r"\n")
_WRAPPED = re.compile(r"[A-Za-z,]")
# End of a sentence: terminal punctuation, optional closing quotes/brackets, whitespace, then
# something that can open a sentence.
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9\u2022])")
# An inline list item such as "; (b) was known" or ", and (iv) the": split before the bracket.
_INLINE_ITEM = re.compile(r"(?<=[;:,.])\s+(?:(?:and|or)\s+)?(\((?:[a-z]|[ivx]{1,6}|[A-Z]|\d{1,2})\))\s")
_INLINE_BULLET = re.compile(r"\s([\u2022\u25cf\u25aa\u25e6\u00b7])\s")
# A token that only numbers or letters an item: "3", "3.2", "iv", "b" (the period already removed).
_MARKER = re.compile(r"\(?(?:\d{1,3}(?:\.\d{1,3})*|[ivx]{1,5}|[a-z])\)?", re.I)
_INITIALS = re.compile(r"(?:[a-z]\.)+[a-z]")
_WORD = re.compile(r"[A-Za-z]{4,}")
_OPENERS = "(\"'\u201c\u2018["

STUB_CHARS = 10  # shorter pieces without a real word ("1.", "(a)", "By:") join the next span


@dataclass(frozen=True)
class Span:
    """A piece of the document: `text == document[start:end]`."""

    start: int
    end: int
    text: str


def _is_sentence_end(text: str, period: int) -> bool:
    """Whether the punctuation at `period` closes a sentence rather than an abbreviation or a marker."""
    if text[period] != ".":
        return True
    word_start = period
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    token = text[word_start:period].lstrip(_OPENERS).lower()
    if not token:
        return True
    if token in ABBREVIATIONS or _INITIALS.fullmatch(token):
        return False
    if len(token) == 1 and token.isalpha():  # an initial, as in "J. Smith"
        return False
    if _MARKER.fullmatch(token):
        # "1. Purpose" opening a line numbers a clause; "under clause 7. The" ends a sentence.
        line_start = text.rfind("\n", 0, word_start) + 1
        return bool(text[line_start:word_start].strip())
    return True


def _boundaries(text: str) -> list[int]:
    """Sorted offsets where a new span may start."""
    cuts = {0, len(text)}
    for m in _LINE_BREAK.finditer(text):
        at = m.start()
        back = at - 1
        while back >= 0 and text[back] in " \t":
            back -= 1
        after = text[at + 1 : at + 2]
        if back >= 0 and after.islower() and _WRAPPED.match(text[back]):
            continue
        cuts.add(at + 1)
    for m in _SENTENCE_END.finditer(text):
        if _is_sentence_end(text, m.start()):
            cuts.add(m.end())
    for m in _INLINE_ITEM.finditer(text):
        cuts.add(m.start(1))
    for m in _INLINE_BULLET.finditer(text):
        cuts.add(m.start(1))
    return sorted(cuts)


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return start, start
    left = start + piece.index(stripped[0])
    return left, left + len(stripped)


def _cut_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Pieces of at most `max_chars`, cut after ";" or "," or at whitespace where possible."""
    out = []
    while end - start > max_chars:
        limit = start + max_chars
        floor = start + max_chars // 3  # do not leave slivers
        cut = -1
        for mark in (";", ","):
            at = text.rfind(mark, floor, limit)
            if at != -1:
                cut = at + 1
                break
        if cut == -1:
            at = max(text.rfind(" ", floor, limit + 1), text.rfind("\n", floor, limit + 1))
            cut = at if at > start else limit
        piece = _strip(text, start, cut)
        if piece[1] > piece[0]:
            out.append(piece)
        start, _ = _strip(text, cut, end)
    if end > start:
        out.append((start, end))
    return out


def split_spans(text: str, max_chars: int = 400) -> list[Span]:
    """Clauses, sentences and list items of `text`, in order, non-overlapping, each at most `max_chars` long."""
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    cuts = _boundaries(text)
    pieces: list[tuple[int, int]] = []
    for a, b in zip(cuts, cuts[1:]):
        start, end = _strip(text, a, b)
        if end > start:
            pieces.extend(_cut_long(text, start, end, max_chars))
    merged: list[tuple[int, int]] = []
    stub: tuple[int, int] | None = None  # a bare marker waiting to join the next piece
    for start, end in pieces:
        if stub is not None:
            if end - stub[0] <= max_chars:
                start = stub[0]
            else:
                merged.append(stub)
            stub = None
        if end - start < STUB_CHARS and not _WORD.search(text, start, end):
            stub = (start, end)
        else:
            merged.append((start, end))
    if stub is not None:
        merged.append(stub)
    return [Span(a, b, text[a:b]) for a, b in merged]
