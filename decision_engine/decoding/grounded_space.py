"""Grounded integer and date slots: a choice position before the digits.

The choice position takes one of the slot's candidate values (a mention of the document copied, or
one step over mentions; see `grounding.candidates`) or "write": the digits are then written one by
one as in a plain slot. Choosing a candidate fixes every digit, so it is committed like any other
position (threshold, forced progress) and bounds and rules narrow the candidates by construction:
a candidate whose value no rule-supported class allows is never offered. The digits wait until the
choice is made. Choice tokens are ids past any vocabulary; the model never reads them (its logits
for the choice come from the value chooser, `reader/value_chooser.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..grounding.candidates import Candidate
from ..grounding.mention import Mention
from ..types import Value
from .slot_space import Pattern, SlotSpace, _matches

CHOICE_BASE = 1 << 40  # choice token k is CHOICE_BASE + k: past every tokenizer's ids


def is_choice_token(token: int) -> bool:
    return token >= CHOICE_BASE


def _class_of(inner: SlotSpace, value: Value) -> set[int]:
    """The class of a candidate value (candidates lie within the slot's bounds): a lookup, where
    matching its tokens against every value of the slot would cost a pass over the slot's range."""
    try:
        return {inner.classes.index(value)}
    except KeyError:
        return set()


class GroundedSpace(SlotSpace):
    """A digit slot (`inner`) behind one choice position over `values` and "write"."""

    choice_positions = (0,)

    def __init__(
        self,
        inner: SlotSpace,
        values: Sequence[Value],
        choice_logits: torch.Tensor,  # (K + 1,) the chooser's logits: one per value, then "write"
        candidates: Sequence[Candidate] = (),  # how each value is reached, for evidence
        mentions: Sequence[Mention] = (),  # the mentions the candidates' operands index
        alone: bool = False,  # the chooser's odds of its values stand alone: readers weigh only the written answer
    ):
        if len(choice_logits) != len(values) + 1:
            raise ValueError("one choice logit per value, and one for writing the digits")
        self.inner = inner
        self.values = list(values)
        self.sequences = [tuple(inner.encode(v)) for v in self.values]
        self.write_id = CHOICE_BASE + len(self.values)
        self.length = 1 + inner.length
        self.classes = inner.classes
        self.choice_logits = choice_logits.float()
        self.candidates = list(candidates)
        self.mentions = list(mentions)
        self.alone = alone
        self._class_of = [_class_of(inner, v) for v in self.values]  # each a single class

    def chosen(self, pattern: Pattern) -> int | None:
        """The index of the chosen value, or None while the choice is open or is "write"."""
        first = pattern[0]
        return None if first is None or first == self.write_id else first - CHOICE_BASE

    def ready(self, pattern: Pattern, position: int) -> bool:
        return position == 0 or pattern[0] is not None

    def reachable(self, pattern: Pattern) -> set[int]:
        k = self.chosen(pattern)
        return set(self._class_of[k]) if k is not None else self.inner.reachable(pattern[1:])

    def allowed(self, pattern: Pattern, classes: set[int]) -> list[list[int] | None]:
        rest = list(pattern[1:])
        k = self.chosen(pattern)
        if k is not None:
            sequence = self.sequences[k]
            return [None, *(None if t is not None else [sequence[j]] for j, t in enumerate(rest))]
        digits = self.inner.allowed(rest, classes)
        if pattern[0] is not None:
            return [None, *digits]
        choices = [
            CHOICE_BASE + k
            for k, sequence in enumerate(self.sequences)
            if _matches(sequence, rest) and self._class_of[k] & classes
        ]
        if self.inner.reachable(rest) & classes:
            choices.append(self.write_id)
        return [choices, *digits]

    def decode(self, tokens: Sequence[int]) -> Value:
        return self.inner.decode(tokens[1:])

    def encode(self, value: Value) -> list[int]:
        digits = self.inner.encode(value)
        for k, sequence in enumerate(self.sequences):
            if list(sequence) == digits:
                return [CHOICE_BASE + k, *digits]
        return [self.write_id, *digits]

    @property
    def choice_bias(self) -> list[float] | None:  # type: ignore[override]
        """The inner slot's choice bias (a boolean's, from the choice reader): it weighs in once the
        choice position hands the slot to the model ("write")."""
        return getattr(self.inner, "choice_bias", None)

    def token_bias(self, pattern: Pattern, position: int) -> dict[int, float]:
        """The inner slot's per-token bias at a position after the choice, once "write" is chosen."""
        if position == 0 or pattern[0] != self.write_id or self.choice_bias is None:
            return {}
        return self.inner.token_bias(list(pattern[1:]), position - 1)

    def choice_logit(self, token: int) -> float:
        """The chooser's logit for a choice token."""
        return float(self.choice_logits[token - CHOICE_BASE])
