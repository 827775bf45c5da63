"""A model's value choosers with generic ones behind them: where the value choosers are unsure of a slot
(their top probability under a threshold), the generic choosers answer it instead.

The value choosers learn the generator's documents well and documents unlike them badly: on those their
odds spread thin. The generic choosers (`fit-chooser --generic`, `training/value_choice.py`), fitted on
questions the generator does not ask (values asked as written, `datasets/as_written.py`, or value
drills), read other documents a little better and the generator's a little worse; handing them
only the slots the value choosers cannot settle keeps the best of both. Its output is log-probabilities, read as logits like a
single chooser's (`decoding/grounded_space.py`).
"""

from __future__ import annotations

import torch
from torch import nn


class FallbackChooser(nn.Module):
    """`primary` answers each slot unless its top probability is under `below`; then `generic` does."""

    def __init__(self, primary: nn.Module, generic: nn.Module, below: float):
        super().__init__()
        self.primary, self.generic, self.below = primary, generic, below

    @property
    def operations(self) -> int:
        """The operations both have forms for (so the slots offer only those)."""
        return min(self.primary.operations, self.generic.operations)

    def forward(self, *inputs: torch.Tensor, siblings: torch.Tensor | None = None) -> torch.Tensor:
        """(B, K + 1) log-probabilities, each row the primary's or, where it is unsure, the generic's;
        `ValueChooser.forward`'s inputs. Only the primary weighs `siblings` (the generic ones are fitted without)."""
        primary = self.primary(*inputs, siblings=siblings).log_softmax(dim=-1)
        unsure = primary.exp().max(dim=-1).values < self.below  # (B,)
        if not bool(unsure.any()):
            return primary
        generic = self.generic(*(x[unsure] for x in inputs)).log_softmax(dim=-1)
        out = primary.clone()
        out[unsure] = generic
        return out


def grounding_chooser(model) -> nn.Module | None:
    """What grounds a model's integer and date slots: its value chooser, behind which its generic
    choosers stand where it has them; None without a value chooser."""
    chooser = getattr(model, "value_chooser", None)
    generic = getattr(model, "generic_chooser", None)
    if chooser is None or generic is None:
        return chooser
    below = model.generic_below if hasattr(model, "generic_below") else model.cfg.generic_below
    return FallbackChooser(chooser, generic, below)
