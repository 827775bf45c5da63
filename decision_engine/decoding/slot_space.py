"""Which token sequences an answer slot may hold: the spaces answer kinds build their slots from.

A slot is a fixed number of positions. A pattern gives, per position, the committed
token id or None while it is still masked. Every space answers two questions for a
pattern and a set of allowed rule classes (see `decision_engine.rules`): which
classes can the slot still end in, and which tokens may each masked position take
so that the slot stays completable to a valid value of an allowed class.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..backends.vocabulary import Vocabulary
from ..errors import RequestError
from ..types import AnswerSchema, Value

if TYPE_CHECKING:
    from ..rules import SlotClasses  # rules reads the kinds, which build their spaces from this module

Pattern = Sequence[int | None]


class SlotSpace(ABC):
    """The valid token sequences of one answer slot."""

    length: int
    classes: SlotClasses
    choice_positions: tuple[int, ...] = ()  # positions the model does not read or score (grounded_space.py)
    choice_bias: list[float] | None = None  # per choice, log-odds added to the model's (ChoiceSpace; absence_gate.py)

    def ready(self, pattern: Pattern, position: int) -> bool:
        """Whether a masked position may be committed now (a grounded slot's digits wait for its choice)."""
        return True

    @abstractmethod
    def reachable(self, pattern: Pattern) -> set[int]:
        """Classes the slot can still end in."""

    @abstractmethod
    def allowed(self, pattern: Pattern, classes: set[int]) -> list[list[int] | None]:
        """Per position: the token ids a masked position may take (None for committed ones)."""

    @abstractmethod
    def decode(self, tokens: Sequence[int]) -> Value:
        """The value of a complete slot."""

    @abstractmethod
    def encode(self, value: Value) -> list[int]:
        """The token sequence of a value (what a model is trained to produce)."""


def _matches(sequence: Sequence[int], pattern: Pattern) -> bool:
    return all(p is None or p == s for s, p in zip(sequence, pattern))


class ChoiceSpace(SlotSpace):
    """Enum and boolean slots: one token sequence per choice, padded to the longest."""

    def __init__(self, values: Sequence[Value], sequences: Sequence[Sequence[int]], pad_id: int, classes: SlotClasses):
        self.values = list(values)
        self.length = max(len(s) for s in sequences)
        self.sequences = [tuple(s) + (pad_id,) * (self.length - len(s)) for s in sequences]
        self.classes = classes  # class i is choice i

    def reachable(self, pattern: Pattern) -> set[int]:
        return {i for i, seq in enumerate(self.sequences) if _matches(seq, pattern)}

    def token_bias(self, pattern: Pattern, position: int) -> dict[int, float]:
        """With a `choice_bias`: per token the masked `position` may take, the bias of the most favoured
        choice still reachable through it (tokens that lead only to unbiased choices are left out)."""
        by_token: dict[int, float] = {}
        for bias, seq in zip(self.choice_bias or (), self.sequences):
            if _matches(seq, pattern):
                by_token[seq[position]] = max(by_token.get(seq[position], bias), bias)
        return {token: bias for token, bias in by_token.items() if bias}

    def allowed(self, pattern: Pattern, classes: set[int]) -> list[list[int] | None]:
        live = [seq for i, seq in enumerate(self.sequences) if i in classes and _matches(seq, pattern)]
        return [None if p is not None else sorted({seq[j] for seq in live}) for j, p in enumerate(pattern)]

    def decode(self, tokens: Sequence[int]) -> Value:
        return self.values[self.sequences.index(tuple(tokens))]

    def encode(self, value: Value) -> list[int]:
        for v, seq in zip(self.values, self.sequences):
            if v == value and type(v) is type(value):
                return list(seq)
        raise KeyError(value)


def _count_le(bound: int, digits: Sequence[int | None]) -> int:
    """How many x in [0, bound] have a zero-padded decimal form matching `digits`."""
    if bound < 0:
        return 0
    width = len(digits)
    top = [int(c) for c in str(bound).zfill(width)]
    free_after = [0] * (width + 1)
    free_after[width] = 1
    for i in range(width - 1, -1, -1):
        free_after[i] = free_after[i + 1] * (10 if digits[i] is None else 1)
    total = 0
    for i in range(width):
        options = range(10) if digits[i] is None else (digits[i],)
        total += sum(free_after[i + 1] for d in options if d < top[i])
        if digits[i] is not None and digits[i] != top[i]:
            return total
    return total + 1


class IntegerSpace(SlotSpace):
    """Integer slots: an optional sign position, then zero-padded digits."""

    def __init__(self, minimum: int, maximum: int, vocab: Vocabulary, classes: SlotClasses):
        self.minimum, self.maximum = minimum, maximum
        self.signed = minimum < 0
        self.width = len(str(max(abs(minimum), abs(maximum))))
        self.length = self.width + int(self.signed)
        self.digit_ids = vocab.digit_ids
        self.digit_of = {t: d for d, t in enumerate(vocab.digit_ids)}
        self.plus_id, self.minus_id = vocab.plus_id, vocab.minus_id
        self.classes = classes
        # (N, length): the tokens of each named value, so matching a pattern is one vector comparison
        self._named = np.array([self.encode(v) for v in classes.named], dtype=np.int64).reshape(-1, self.length)

    def _split(self, pattern: Pattern) -> tuple[int | None, list[int | None]]:
        sign = pattern[0] if self.signed else self.plus_id
        digits = [None if t is None else self.digit_of[t] for t in pattern[int(self.signed):]]
        return sign, digits

    def _count(self, pattern: Pattern) -> int:
        sign, digits = self._split(pattern)
        total = 0
        if sign in (None, self.plus_id) and self.maximum >= 0:
            low = max(self.minimum, 0)
            total += _count_le(self.maximum, digits) - _count_le(low - 1, digits)
        if sign in (None, self.minus_id) and self.minimum < 0:
            low, high = max(1, -self.maximum), -self.minimum
            total += _count_le(high, digits) - _count_le(low - 1, digits)
        return total

    def _matching(self, pattern: Pattern) -> np.ndarray:
        """(N,) whether each named value's tokens match `pattern`."""
        mask = np.ones(len(self._named), dtype=bool)
        for j, t in enumerate(pattern):
            if t is not None:
                mask &= self._named[:, j] == t
        return mask

    def reachable(self, pattern: Pattern) -> set[int]:
        named = self._matching(pattern)
        out = set(np.flatnonzero(named).tolist())
        if self.classes.other is not None and self._count(pattern) > len(out):
            out.add(self.classes.other)
        return out

    def allowed(self, pattern: Pattern, classes: set[int]) -> list[list[int] | None]:
        """A token is allowed where some value of an allowed class (named, or OTHER) still matches."""
        base = self._matching(pattern)
        wanted = np.zeros(len(self._named), dtype=bool)
        wanted[[c for c in classes if c < len(wanted)]] = True
        other = self.classes.other
        other_wanted = other is not None and other in classes
        out: list[list[int] | None] = []
        for j, p in enumerate(pattern):
            if p is not None:
                out.append(None)
                continue
            candidates = (self.plus_id, self.minus_id) if self.signed and j == 0 else self.digit_ids
            trial = list(pattern)
            ok = []
            for token in candidates:
                trial[j] = token
                named = base & (self._named[:, j] == token)
                if (named & wanted).any() or (other_wanted and self._count(trial) > int(named.sum())):
                    ok.append(token)
            out.append(sorted(ok))
        return out

    def decode(self, tokens: Sequence[int]) -> Value:
        sign, digits = self._split(tokens)
        magnitude = int("".join(str(d) for d in digits))
        return -magnitude if sign == self.minus_id else magnitude

    def encode(self, value: Value) -> list[int]:
        digits = [self.digit_ids[int(c)] for c in str(abs(value)).zfill(self.width)]
        if not self.signed:
            return digits
        return [self.minus_id if value < 0 else self.plus_id, *digits]


@lru_cache(maxsize=16)
def _date_table(low: dt.date, high: dt.date) -> np.ndarray:
    """All dates in [low, high] as rows of 8 digits (YYYYMMDD); row i is `low` + i days."""
    days = np.arange(np.datetime64(low), np.datetime64(high) + 1, dtype="datetime64[D]")
    months = days.astype("datetime64[M]")
    year = months.astype("datetime64[Y]").astype(np.int64) + 1970
    month = months.astype(np.int64) % 12 + 1
    day = (days - months).astype(np.int64) + 1
    stamp = year * 10000 + month * 100 + day  # (N,) YYYYMMDD
    scale = 10 ** np.arange(7, -1, -1, dtype=np.int64)
    table = (stamp[:, None] // scale[None, :]) % 10
    return table.astype(np.uint8)


@lru_cache(maxsize=16)
def _open_digits(low: dt.date, high: dt.date) -> tuple[tuple[int, ...], ...]:
    """Per position of a date slot in [low, high] with nothing written yet: the digits some date has there."""
    table = _date_table(low, high)
    return tuple(tuple(np.flatnonzero(np.bincount(table[:, j], minlength=10)).tolist()) for j in range(table.shape[1]))


class DateSpace(SlotSpace):
    """Date slots: eight digit positions, YYYYMMDD, only real calendar dates in range."""

    length = 8

    def __init__(self, low: dt.date, high: dt.date, vocab: Vocabulary, classes: SlotClasses):
        self.table = _date_table(low, high)
        self.low, self.high = low, high
        self.digit_ids = vocab.digit_ids
        self.digit_of = {t: d for d, t in enumerate(vocab.digit_ids)}
        self.classes = classes
        self.named_rows = np.array([(dt.date.fromisoformat(v) - low).days for v in classes.named], dtype=np.int64)

    def _match_mask(self, pattern: Pattern) -> np.ndarray:
        mask = np.ones(len(self.table), dtype=bool)
        for j, t in enumerate(pattern):
            if t is not None:
                mask &= self.table[:, j] == self.digit_of[t]
        return mask

    def _class_mask(self, classes: set[int]) -> np.ndarray:
        other = self.classes.other
        mask = np.full(len(self.table), other is not None and other in classes)
        wanted = np.zeros(len(self.named_rows), dtype=bool)
        wanted[[c for c in classes if c < len(wanted)]] = True
        mask[self.named_rows] = wanted
        return mask

    def _row_of(self, pattern: Pattern) -> int | None:
        """The table row of a fully written date, or None (not a calendar date, or out of range)."""
        try:
            day = dt.date.fromisoformat(self.decode(pattern))
        except (KeyError, ValueError):
            return None
        row = (day - self.low).days
        return row if 0 <= row < len(self.table) else None

    def reachable(self, pattern: Pattern) -> set[int]:
        if all(t is not None for t in pattern):  # one date: a lookup, not a scan of the table
            row = self._row_of(pattern)
            if row is None:
                return set()
            named = np.flatnonzero(self.named_rows == row).tolist()
            return set(named) if named else ({self.classes.other} if self.classes.other is not None else set())
        mask = self._match_mask(pattern)
        out = set(np.flatnonzero(mask[self.named_rows]).tolist())
        if self.classes.other is not None and mask.sum() > len(out):
            out.add(self.classes.other)
        return out

    def allowed(self, pattern: Pattern, classes: set[int]) -> list[list[int] | None]:
        if all(p is None for p in pattern) and len(classes) >= self.classes.count:  # every date still open
            return [[self.digit_ids[d] for d in digits] for digits in _open_digits(self.low, self.high)]
        rows = self.table[self._match_mask(pattern) & self._class_mask(classes)]
        out: list[list[int] | None] = []
        for j, p in enumerate(pattern):
            present = np.bincount(rows[:, j], minlength=10) > 0 if p is None else None
            out.append(None if p is not None else [self.digit_ids[d] for d in np.flatnonzero(present)])
        return out

    def decode(self, tokens: Sequence[int]) -> Value:
        s = "".join(str(self.digit_of[t]) for t in tokens)
        return f"{s[:4]}-{s[4:6]}-{s[6:]}"

    def encode(self, value: Value) -> list[int]:
        return [self.digit_ids[int(c)] for c in value.replace("-", "")]


def choice_space(
    values: Sequence[Value], texts: Sequence[str], vocab: Vocabulary, classes: SlotClasses, field: str
) -> ChoiceSpace:
    """A slot choosing one of `values`, each written as the tokens of its text; `field` names the
    choices in errors (`field[i]` for the i-th)."""
    sequences = [tuple(vocab.encode(text)) for text in texts]
    seen: dict[tuple[int, ...], int] = {}
    for i, seq in enumerate(sequences):
        if not seq:
            raise RequestError(f"{field}[{i}]", "the model's tokenizer reads this choice as empty")
        if seq in seen:
            raise RequestError(
                f"{field}[{i}]",
                f"{texts[i]!r} and {texts[seen[seq]]!r} look the same to the model's tokenizer",
            )
        seen[seq] = i
    return ChoiceSpace(list(values), sequences, vocab.pad_id, classes)


def build_space(schema: AnswerSchema, vocab: Vocabulary, classes: SlotClasses, field: str) -> SlotSpace:
    """The slot space of a validated schema, as its answer kind builds it; `field` names the schema in errors."""
    from ..kinds import kind_of  # here, not at the top: the kinds import this module's spaces

    return kind_of(schema).space(schema, vocab, classes, field)
