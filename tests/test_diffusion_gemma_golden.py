"""A committed tiny DiffusionGemma and the logits it gave when recorded: fails when an upgrade of transformers
(or torch) changes the numbers the diffusion-gemma backend computes. Re-record with tests/golden_diffusion_gemma.py."""

from __future__ import annotations

import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "DiffusionGemmaForBlockDiffusion"):
    pytest.skip(f"transformers {transformers.__version__} has no DiffusionGemma", allow_module_level=True)

from golden_diffusion_gemma import FOLDER, golden_logits  # noqa: E402

from decision_engine.models import open_model  # noqa: E402


def test_logits_match_the_recorded_ones():
    record = json.loads((FOLDER / "golden_logits.json").read_text())
    steps = golden_logits(open_model(FOLDER))
    assert len(steps) == len(record["logits"])
    for step, (got, expected) in enumerate(zip(steps, record["logits"])):
        torch.testing.assert_close(
            got, torch.tensor(expected), atol=1e-5, rtol=0,
            msg=lambda text, step=step: (
                f"step {step + 1}: logits recorded with transformers {record['transformers']} and torch "
                f"{record['torch']} differ under transformers {transformers.__version__} and torch "
                f"{torch.__version__}\n{text}"
            ),
        )
