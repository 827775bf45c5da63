"""Opening the model the engine runs: the bundled weights by default, or a checkpoint folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .backends.protocol import DenoisingModel
from .model.loader import ModelLoadError

BUNDLED_WEIGHTS = Path(__file__).resolve().parent / "weights"


def open_model(path: str | Path | None = None, device: str = "cpu", trust_remote_code: bool = False) -> DenoisingModel:
    """A native checkpoint (config.json with a "config" entry), a Hugging Face masked LM folder,
    or with no path the bundled weights (the base encoder with an untrained head when none ship)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .backends.native import load_native

    if path is None:
        bundled = BUNDLED_WEIGHTS if (BUNDLED_WEIGHTS / "config.json").is_file() else None
        return load_native(bundled, device)
    folder = Path(path)
    config = folder / "config.json"
    if not config.is_file():
        raise ModelLoadError(f"{folder} has no config.json; expected a checkpoint folder")
    try:
        meta = json.loads(config.read_text())
    except json.JSONDecodeError as error:
        raise ModelLoadError(f"{config} is not valid JSON: {error}") from None
    if "config" in meta and "name" in meta:
        return load_native(folder, device)
    from .backends.hf_masked_lm import HFMaskedLMBackend

    try:
        return HFMaskedLMBackend(folder, device, trust_remote_code)
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot load {folder} as a masked LM: {error}") from None
