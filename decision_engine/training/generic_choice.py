"""Fitting generic value choosers beside a checkpoint's own: they answer a grounded slot where its value
choosers are unsure (`reader/fallback_chooser.py`).

They are fitted as the value choosers are (`value_choice.fit_value_chooser`), on generated groups and
value drills (`datasets/value_drills.py`), whose general questions teach them less of the generator's
templates and more of how a question names its value; the checkpoint's value choosers stay as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..reader.chooser_ensemble import chooser_count, read_cue
from .config import CHOOSER_CUES
from .generated_fit import model_pointer
from .value_choice import fit_value_chooser


def add_generic_chooser(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    question_variants: int = 0,
    cue: str = "both",
    reword_documents: bool = False,
    int8_parts: Sequence[str] = (),
    drills: int = 0,
    below: float = 0.2,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with generic value choosers fitted beside
    its value choosers, answering where their top probability is under `below`; the rest as
    `value_choice.add_value_chooser`."""
    from ..model.loader import ModelLoadError, checkpoint_config, load_checkpoint, save_refitted, store_in_int8

    if cue not in CHOOSER_CUES:
        raise ValueError(f"cue must be one of {', '.join(CHOOSER_CUES)}, not {cue!r}")
    if not 0.0 < below <= 1.0:
        raise ValueError(f"--generic-below must be above 0 and at most 1, not {below}")
    saved, meta = checkpoint_config(folder)
    if not saved.chooses_values:
        raise ModelLoadError(f"{folder} has no value choosers to stand beside; fit them first with `decision-engine fit-chooser`")
    cfg = replace(saved, generic_choosers=chooser_count(cue), generic_below=below)
    model, meta = load_checkpoint(folder, cfg=cfg, fresh_generic=True)
    store_in_int8(model, meta, folder, int8_parts)
    read_cue(model.generic_chooser, cue)
    fitted = fit_value_chooser(
        model.generic_chooser, groups, epochs, seed, log, held_out, model_pointer(model), question_variants,
        reword_documents, drills=drills,
    )
    fitted.update(cue=cue, below=below)
    save_refitted(model, meta, out, folder, "generic_chooser", fitted)
    return fitted
