"""Numbers that name rather than count: reference codes, clause and list numbers, addresses, versions.

A contract writes many numbers that no question's answer is: "ref. IA-2024-113", "AES-256",
"Section 4", "Suite 12", "company no. 08817342", a phone number, the "1." of a heading, the "one" of
"one-way". Left in, each is a candidate the value chooser must learn to pass over, and one it meets
in no generated document. `is_label` tells `read_quantities` to leave such a number out.
"""

from __future__ import annotations

import re

# A word that makes the number after it a name: "Section 4", "clause 3", "Suite 12", "no. 0881".
_NAMING_WORD = re.compile(
    r"\b(?:sections?|clauses?|articles?|parts?|schedules?|annex(?:es)?|annexure|appendix|exhibits?|paragraphs?"
    r"|para|item|page|version|rev|revision|unit|suite|flat|apartment|apt|floor|room|building|no|nos|number"
    r"|ref|reference|line|table|figure|step|chapter|box|lot|plot|tier|level|phase|rule|regulation|ticket"
    r"|invoice|account|policy|iso|tel|telephone|phone|fax|mobile)\.?\s*(?:no\.?\s*|#\s*)?$",
    re.IGNORECASE,
)
# A code to the left, joined by hyphens or slashes and starting with a letter: "IA-2024-", "RTM-24-", "AES-".
_CODE_BEFORE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[-/][A-Za-z0-9]+)*[-/]$")
# "2016/679", "24/7": numbers joined by a slash (dates are read before and never get here).
_SLASH_BEFORE = re.compile(r"\d/$")
_SLASH_AFTER = re.compile(r"/\d")
# Compounds in which the number does not count anything: "one-way", "256-bit", "two-thirds".
_NAMING_COMPOUND = re.compile(
    r"-(?:way|bit|off|time|sided|party|stop|step|fold|thirds?|quarters?|halves|fifths?|tenths?)\b", re.IGNORECASE
)
# The number of a heading or list item at the start of a line: "1. Rent", "2) Term", "(3) Notice".
_OUTLINE = re.compile(r"(?:^|\n)[ \t]*\(?$")
_OUTLINE_AFTER = re.compile(r"^(?:[.)]|\)\.?)[ \t]")
# A street after the number: "400 Fifth Avenue", "41 Harbour Road", "118 Kanaalweg".
_STREET_AFTER = re.compile(
    r"^\s+(?:(?:[A-Z][\w'-]*\s+){0,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Way|Drive|Dr|Boulevard|Blvd|Place|Pl"
    r"|Square|Sq|Court|Ct|Close|Crescent|Terrace|Row|Walk|Quay|Wharf|Hill|Gardens|Parade|Highway|Hwy)\b"
    r"|[A-Z]\w*(?:weg|straat|strasse|straße|gasse|laan|plein|gade|vej)\b)"
)
# A street before the number, as continental addresses write it: "Kanaalweg 118", "Hauptstrasse 5".
_STREET_BEFORE = re.compile(r"\b[A-Z]\w*(?:weg|straat|strasse|straße|gasse|laan|plein|gade|vej)\s+$")
# A phone number: international ("+44 20 7946 0018") or national with a leading zero ("(020) 7946 0018").
_PHONE = re.compile(r"(?<![\w.])(?:\+\d{1,4}|\(?0\d{1,4}\)?)(?:[ \-.]\(?\d{2,5}\)?){1,5}(?![\w.])")
_PHONE_DIGITS = 9  # fewer digits than this in a run of groups is not read as a phone number

_LOOK_BACK = 40  # characters before a number that can name it


def phone_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each phone number written in groups of digits."""
    spans = []
    for match in _PHONE.finditer(text):
        written = match.group()
        if sum(c.isdigit() for c in written) >= _PHONE_DIGITS:
            spans.append((match.start(), match.end()))
    return spans


def is_label(text: str, start: int, digits_end: int, end: int) -> bool:
    """Whether the number read at text[start:end] names something rather than counts it.

    `digits_end` is where the number itself ends, before any unit or twin read after it."""
    before = text[max(0, start - _LOOK_BACK) : start]
    written = text[start:digits_end]
    if any(pattern.search(before) for pattern in (_NAMING_WORD, _CODE_BEFORE, _SLASH_BEFORE, _STREET_BEFORE)):
        return True
    if len(written) > 1 and written[0] == "0" and written[1].isdigit():
        return True  # "0417", "08817342": a code, never an amount
    after = text[end : end + 60]
    if _SLASH_AFTER.match(after) or _NAMING_COMPOUND.match(after) or (end == digits_end and _STREET_AFTER.match(after)):
        return True
    if end == digits_end and _OUTLINE.search(before) and _OUTLINE_AFTER.match(after):
        return True
    return False
