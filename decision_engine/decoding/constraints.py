"""The constraint state of one request: every slot's committed tokens plus the rules between slots.

Invariant: after every commit, each slot can still be completed to a valid value,
and some completion of all slots together satisfies every rule. A token is only
offered to the model at a position when committing it keeps that invariant.
"""

from __future__ import annotations

from ..rules import RuleSet
from ..types import Value
from .slot_space import SlotSpace


class GroupConstraints:
    """Committed tokens and allowed tokens for the slots of one request."""

    def __init__(self, spaces: list[SlotSpace], rules: RuleSet):
        self.spaces = spaces
        self.rules = rules
        self.patterns: list[list[int | None]] = [[None] * s.length for s in spaces]
        self._reachable = [s.reachable(p) for s, p in zip(spaces, self.patterns)]
        self._allowed: list[list[list[int] | None] | None] = [None] * len(spaces)
        self.supported: list[set[int]] = []
        self._refresh(None)

    def _refresh(self, changed: int | None) -> None:
        """Recompute what the rules support after a commit to slot `changed` (None: everything)."""
        if changed is not None:
            self._reachable[changed] = self.spaces[changed].reachable(self.patterns[changed])
        before = self.supported
        self.supported = self.rules.supported(self._reachable)
        if any(not classes for classes in self.supported):
            raise AssertionError("constraint state lost every valid completion")
        for slot in range(len(self.spaces)):  # a slot's allowed tokens depend on its pattern and its support
            if slot == changed or not before or before[slot] != self.supported[slot]:
                self._allowed[slot] = None

    def allowed(self, slot: int) -> list[list[int] | None]:
        """Per position of `slot`: allowed token ids, or None once committed."""
        cached = self._allowed[slot]
        if cached is None:
            cached = self.spaces[slot].allowed(self.patterns[slot], self.supported[slot])
            self._allowed[slot] = cached
        return cached

    def is_open(self, slot: int, position: int) -> bool:
        return self.patterns[slot][position] is None

    def is_ready(self, slot: int, position: int) -> bool:
        """Open, and free to be committed now."""
        pattern = self.patterns[slot]
        return pattern[position] is None and self.spaces[slot].ready(pattern, position)

    def slot_done(self, slot: int) -> bool:
        return all(t is not None for t in self.patterns[slot])

    def supported_if(self, slot: int, position: int, token: int) -> list[set[int]]:
        """Per slot, the classes the rules would still support were `token` committed at `position`
        of `slot` (nothing is committed)."""
        pattern = list(self.patterns[slot])
        pattern[position] = token
        reachable = list(self._reachable)
        reachable[slot] = self.spaces[slot].reachable(pattern)
        return self.rules.supported(reachable)

    def commit(self, slot: int, position: int, token: int) -> bool:
        """Fix one position; False (and nothing changes) when the token is no longer allowed."""
        options = self.allowed(slot)[position]
        if options is None or token not in options:
            return False
        self.patterns[slot][position] = token
        self._refresh(slot)
        return True

    def fill_forced(self) -> list[tuple[int, int, int]]:
        """Commit every masked position that has exactly one allowed token; return (slot, position, token)."""
        filled = []
        progress = True
        while progress:
            progress = False
            for slot in range(len(self.spaces)):
                for position, options in enumerate(self.allowed(slot)):
                    if options is not None and len(options) == 1:
                        self.commit(slot, position, options[0])
                        filled.append((slot, position, options[0]))
                        progress = True
                        break
        return filled

    def value(self, slot: int) -> Value:
        return self.spaces[slot].decode(self.patterns[slot])
