"""Several value choosers answering as one: their probabilities over a slot's columns averaged.

The members read a mention differently (the first the cue before it, the second the cue around it;
`value_chooser.cue_view`), so each is wrong where the wording misleads it and the average is wrong
less often than either. The ensemble's output is the log of the averaged probabilities, which a
grounded slot reads as logits like a single chooser's (`decoding/grounded_space.py`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..grounding.candidates import OPERATIONS
from .value_chooser import ValueChooser, with_operations


class ChooserEnsemble(nn.Module):
    """Value choosers whose probabilities are averaged; member i reads the cue around a mention when i is odd."""

    def __init__(self, count: int = 2, operations: int = len(OPERATIONS)):
        super().__init__()
        if count < 2:
            raise ValueError(f"an ensemble needs at least two choosers, not {count}")
        self.members = nn.ModuleList(ValueChooser(around=bool(i % 2), operations=operations) for i in range(count))

    @property
    def operations(self) -> int:
        """How many operations (the first of OPERATIONS) its members have forms for."""
        return self.members[0].operations

    def forward(self, *inputs: torch.Tensor, siblings: torch.Tensor | None = None) -> torch.Tensor:
        """(B, K + 1) the log of the members' mean probabilities; `ValueChooser.forward`'s inputs.
        A column no member can take (an invalid candidate) stays -inf, without a NaN gradient."""
        logs = torch.stack([member(*inputs, siblings=siblings).log_softmax(dim=-1) for member in self.members])
        open_ = torch.isfinite(logs).any(dim=0)
        mean = torch.logsumexp(logs.masked_fill(~open_, 0.0), dim=0) - math.log(len(self.members))
        return mean.masked_fill(~open_, float("-inf"))


def value_chooser(count: int = 1, operations: int = len(OPERATIONS)) -> nn.Module:
    """The value chooser a model with `count` of them holds: one `ValueChooser`, or an ensemble; with
    forms for the first `operations` of OPERATIONS."""
    return ValueChooser(operations=operations) if count == 1 else ChooserEnsemble(count, operations)


def chooser_state_with_operations(state: dict[str, torch.Tensor], operations: int) -> dict[str, torch.Tensor]:
    """A value chooser's state (one chooser's or an ensemble's, keys relative to it) with forms for
    `operations` operations (`value_chooser.with_operations`, member by member)."""
    members = sorted({k.split(".")[1] for k in state if k.startswith("members.")}, key=int)
    if not members:
        return with_operations(state, operations)
    out = {}
    for m in members:
        prefix = f"members.{m}."
        grown = with_operations({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}, operations)
        out.update({prefix + k: v for k, v in grown.items()})
    return out


def chooser_count(cue: str) -> int:
    """How many value choosers a cue asks for: "both" one per cue, "before" or "around" one."""
    return 2 if cue == "both" else 1


def read_cue(chooser: nn.Module, cue: str) -> None:
    """Set a single chooser to read the cue before or around a mention; an ensemble's members keep theirs."""
    if cue != "both":
        chooser.around_cue.fill_(float(cue == "around"))


def first_chooser(chooser: nn.Module) -> ValueChooser:
    """The chooser itself, or an ensemble's first member (the one reading the cue before a mention)."""
    return chooser.members[0] if isinstance(chooser, ChooserEnsemble) else chooser
