"""Resuming a training run from its last finished epoch.

After each epoch but the last, the loop writes `resume.pt` into the run's folder: the model, the
optimiser, the step counters, the random states, the next epoch's lines (drawn while the epoch
trained) and the run time so far. `decision-engine train --resume` with the same config and `--out`
continues from there, on the groups and in the order an uninterrupted run would have had; the final
checkpoint removes the file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from .config import TrainConfig

RESUME_FILE = "resume.pt"
MAY_DIFFER = ("max_minutes", "data_workers")  # a resumed run may be given more time or other workers


class ResumeError(ValueError):
    """A run that cannot be resumed, with the reason."""


@dataclass
class ResumePoint:
    epoch: int  # epochs finished
    step: int
    seen: int
    total_steps: int
    history: list
    minutes: float  # training time so far
    model: dict
    optimiser: dict
    rng: Any  # random.Random state
    generator: torch.Tensor  # torch.Generator state
    next_plan: list  # the next epoch's lines (`PlannedLine`), drawn already while this epoch trained
    summary: dict  # what fits before the reader measured (pointer, value chooser)


def _comparable(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in MAY_DIFFER}


def save_resume_point(out: Path, cfg: TrainConfig, point: ResumePoint) -> None:
    """Write the point atomically, so an interruption while saving leaves the previous one."""
    out.mkdir(parents=True, exist_ok=True)
    partial = out / (RESUME_FILE + ".partial")
    torch.save({"config": cfg.to_dict(), **{f.name: getattr(point, f.name) for f in fields(point)}}, partial)
    partial.replace(out / RESUME_FILE)


def load_resume_point(out: Path, cfg: TrainConfig) -> ResumePoint:
    path = out / RESUME_FILE
    if not path.is_file():
        raise ResumeError(f"{out}: nothing to resume (no {RESUME_FILE}; a run writes one after each epoch but the last)")
    data = torch.load(path, weights_only=False)
    config = data.pop("config")
    if _comparable(config) != _comparable(cfg.to_dict()):
        changed = sorted(k for k in _comparable(cfg.to_dict()) if config.get(k) != cfg.to_dict()[k])
        raise ResumeError(f"{out}: the run there was started with another config (differs in {changed})")
    return ResumePoint(**data)


def clear_resume_point(out: Path) -> None:
    (out / RESUME_FILE).unlink(missing_ok=True)
