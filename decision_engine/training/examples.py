"""Training examples laid out exactly as the engine lays out requests at decision time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backends.protocol import PrefixInput
from ..decoding.layout import Layout
from ..errors import RequestError
from ..types import DecisionRequest
from ..validation import request_from_object

LayoutFunction = Callable[[DecisionRequest, str], Layout]  # (request, mode) -> its layout, e.g. a bound `lay_out`


@dataclass(frozen=True)
class Example:
    """One answer block with its prefix and gold tokens."""

    prefix: PrefixInput
    gold: list[int]  # gold token per block position
    slots: list[int]  # 1-based slot number per block position
    allowed: list[list[int]]  # per block position: every token its slot's schema lets it hold


def examples_from_line(layout: LayoutFunction, line: dict[str, Any], mode: str) -> list[Example]:
    """The blocks of one labelled request line (samples format) in `mode`; [] when it cannot be laid out."""
    labels = line.get("labels") or {}
    try:
        request = request_from_object(line)
        prepared = layout(request, mode)
    except RequestError:
        return []
    ids = [q.id for q in request.questions]
    if set(labels) != set(ids):
        return []
    spaces = prepared.group.constraints.spaces
    out = []
    for block in prepared.blocks:
        gold, slots, allowed = [], [], []
        for slot, number in zip(block.slots, block.numbers):
            space = spaces[slot]
            tokens = space.encode(labels[ids[slot]])
            gold.extend(tokens)
            slots.extend([number] * len(tokens))
            allowed.extend(space.allowed([None] * space.length, set(range(space.classes.count))))
        out.append(Example(block.prefix, gold, slots, allowed))
    return out
