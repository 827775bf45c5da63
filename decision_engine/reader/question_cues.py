"""Words in a question that say which step its value takes, read as a few flags.

A value chooser reads a question through its sentence vector, which tells "by what date was the
invoice due?" from "on what date was the invoice received?" only as well as the few phrasings it
was fitted on let it. These flags name the words themselves: a deadline, an event that happened, a
total, what is left after a deduction, a stretch between two points, a percentage, a sum owed.
A chooser weighs them per operation (`ValueChooser.cue_weights`), so a new wording that keeps such a
word keeps its step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
    ("deadline", r"\b(by (what|which) (date|day)|by when|deadline|due|last (day|date)|latest|no later|final date"
                 r"|expir\w*|cease\w*|until|have to|had to|has to|must|required?)\b"),
    ("happened", r"\b((on )?(what|which) (date|day) (did|was|were)|when (did|was|were))\b"),
    ("total", r"\b(total|in all|altogether|combined|sum|overall|aggregate)\b"),
    ("remaining", r"\b(after|less|net|remaining|balance|left|minus|deduct\w*|excess)\b"),
    ("between", r"\b(between|how long|elapsed|passed|from\b.*\b(to|until))\b"),
    ("percent", r"(%|\bper ?cent\b|\bpercentage\b)"),
    ("owed", r"\b(pay|paid|payable|owe[ds]?|entitled|refund\w*|reimburs\w*|compensat\w*)\b"),
))
QUESTION_CUES = len(CUES)


def question_cues(texts: Sequence[str]) -> torch.Tensor:
    """(Q, QUESTION_CUES) 1.0 where a question's text holds a cue's words, else 0.0."""
    return torch.tensor([[float(bool(pattern.search(text))) for _, pattern in CUES] for text in texts]).reshape(
        len(texts), QUESTION_CUES
    )


def with_cues(vectors: torch.Tensor, cues: torch.Tensor) -> torch.Tensor:
    """Each question's sentence vector (D,) or (Q, D) followed by its cue flags (`question_cues`): what a
    value chooser reads of a question (`ValueChooser.forward`)."""
    return torch.cat([vectors, cues.to(vectors.dtype)], dim=-1)
