"""Confidence that means what it says: a Platt map per answer kind, fitted on training material.

A model's raw confidence (the product of its committed positions' constrained probabilities) can be
too sure. `Calibration` maps it through sigmoid(a * logit(c) + b), with (a, b) fitted per answer kind
(enum, boolean, integer, date) and mode (joint, independent; sequential uses joint's) by log loss
on answers to training documents; a kind with too few answers keeps its raw confidence. The map is monotone, so it never changes which answer is chosen,
only the confidence reported with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

PARENT_KIND = {"hypothesis": "enum"}  # a gated enum's map, where a checkpoint has none, is its kind's
MIN_ANSWERS = 50  # answers of a kind needed to fit its map
EPS = 1e-6  # confidences are clamped to [EPS, 1 - EPS] before the logit


def _logit(c: float) -> float:
    c = min(max(c, EPS), 1 - EPS)
    return math.log(c / (1 - c))


@dataclass(frozen=True)
class Calibration:
    """Per answer kind, the (a, b) of its Platt map; kinds not listed keep their raw confidence."""

    maps: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # "joint:enum" -> (a, b)

    def apply(self, kind: str, confidence: float, mode: str = "joint") -> float:
        """The calibrated confidence of an answer of `kind` decided in `mode` (sequential reads as joint);
        a kind without a map of its own goes through its parent kind's (`PARENT_KIND`), if any."""
        mode = "joint" if mode == "sequential" else mode
        key = f"{mode}:{kind}"
        if key not in self.maps and kind in PARENT_KIND:
            key = f"{mode}:{PARENT_KIND[kind]}"
        if key not in self.maps:
            return confidence
        a, b = self.maps[key]
        return 1 / (1 + math.exp(-(a * _logit(confidence) + b)))

    def to_dict(self) -> dict:
        return {kind: {"a": a, "b": b} for kind, (a, b) in self.maps.items()}

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Calibration | None:
        """The calibration a checkpoint records, or None when it records none."""
        if not data:
            return None
        return cls({kind: (float(v["a"]), float(v["b"])) for kind, v in data.items()})


def fit_platt(pairs: Sequence[tuple[float, bool]], steps: int = 500) -> tuple[float, float]:
    """(a, b) minimising the log loss of sigmoid(a * logit(c) + b) against rightness."""
    x = torch.tensor([_logit(c) for c, _ in pairs], dtype=torch.float64)
    y = torch.tensor([float(ok) for _, ok in pairs], dtype=torch.float64)
    params = torch.tensor([1.0, 0.0], dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([params], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(params[0] * x + params[1], y)
        loss.backward()
        return loss

    optimiser.step(closure)
    a, b = params.detach().tolist()
    return float(a), float(b)


def fit_calibration(answers: Iterable[tuple[str, float, bool]], min_answers: int = MIN_ANSWERS) -> Calibration:
    """A map per key ("mode:kind") from (key, raw confidence, right) triples; keys with fewer than
    `min_answers` answers are left out."""
    by_kind: dict[str, list[tuple[float, bool]]] = {}
    for kind, confidence, ok in answers:
        by_kind.setdefault(kind, []).append((confidence, ok))
    return Calibration({k: fit_platt(p) for k, p in sorted(by_kind.items()) if len(p) >= min_answers})
