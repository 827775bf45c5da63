"""Whether an integer question asks for an amount of money ("How much of the deposit did the landlord
retain?"), and the candidates that cannot be one: any that reads a number the document writes with a
physical unit after it ("240 km away", "a payload of 12 kg")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .candidates import Candidate
from .mention import Mention

_HOW_MUCH = re.compile(r"\bhow\s+much\b|\bwhat\s+(?:\w+\s+)?(?:amount|sum)\b", re.I)
# a question naming a physical quantity, or time, may ask "how much" of it
_NOT_MONEY = re.compile(
    r"\b(?:weigh\w*|heav\w*|far|distance|speed|fast|wind|temperature|area|volume|capacity|load|payload|"
    r"altitude|height|range|fuel|energy|power|electricity|data|storage|rain\w*|snow\w*|water|time|notice|"
    r"km|kg|miles?|met(?:re|er)s?|tonnes?|lit(?:re|er)s?|hours?|minutes?|days?|weeks?|months?|years?|"
    r"per\s?cent\w*|percentage)\b",
    re.I,
)
# a physical unit right after a number; "pounds" is left out, being money too
_PHYSICAL_UNIT = re.compile(
    r"\s?(?:km/h|kph|mph|m/s|knots?|km|kilomet(?:re|er)s?|miles?|met(?:re|er)s?|cm|mm|m|kg|kilograms?|"
    r"grams?|tonnes?|tons?|lbs?|lit(?:re|er)s?|gallons?|°\s?[CF]|degrees|kWh|kW|MWh|MW|GB|MB|TB|m²|m2|"
    r"square\s+(?:met(?:re|er)s?|feet|foot)|acres?|hectares?)(?![\w/²])",
    re.I,
)


def asks_for_money(question: str) -> bool:
    """Whether the question asks how much, or what amount or sum, and names no physical quantity,
    time or percentage it could be asking about instead."""
    return bool(_HOW_MUCH.search(question)) and not _NOT_MONEY.search(question)


def physical(document: str, mention: Mention) -> bool:
    """Whether a number mention, with no currency, percent or duration of its own, is followed by a
    physical unit in the document."""
    if mention.kind != "number" or mention.unit is not None or mention.currency is not None:
        return False
    return _PHYSICAL_UNIT.match(document, mention.end) is not None


def cannot_be_money(candidates: Sequence[Candidate], mentions: Sequence[Mention], document: str) -> list[bool]:
    """Per candidate, whether it reads a number written with a physical unit (`physical`), so cannot
    be an amount of money."""
    measured = {j for j, m in enumerate(mentions) if physical(document, m)}
    return [any(j in measured for j in c.operands) for c in candidates]
