"""Writes the golden DiffusionGemma fixture: a tiny random checkpoint and the logits it gives for a fixed input.

Run from the repository root (`python tests/golden_diffusion_gemma.py`) only on purpose: after a transformers
upgrade that is known to change the numbers, and with the new figures checked by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

FOLDER = Path(__file__).parent / "fixtures" / "diffusion_gemma_golden"
TEXTS = ["the agreement is mutual and was signed on the first day of notice"]
PREFIX = [2, *range(14, 28), 1]  # bos, fourteen word ids, eos
BLOCK = [0, 5, 0, 0]  # 0: an open position (the placeholder mask id is the pad id); 5: a committed digit
SLOTS = [1, 1, 1, 2]
STEPS = 2  # the second step is self-conditioned on the first
INITIALIZER_RANGE = 0.5  # weights this large give logits of order 1, so that small changes in the numbers show


def golden_logits(model) -> list[torch.Tensor]:
    """Logits (L, V) of each of STEPS denoising steps over the fixed input."""
    from decision_engine.backends.protocol import PrefixInput

    cache = model.encode_prefix([PrefixInput(PREFIX, [0] * len(PREFIX))])
    block, slots = torch.tensor([BLOCK]), torch.tensor([SLOTS])
    return [model.block_logits(cache, block, slots)[0] for _ in range(STEPS)]


def main() -> int:
    import transformers

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_diffusion_gemma import save_tiny_diffusion_gemma

    from decision_engine.models import open_model

    FOLDER.mkdir(parents=True, exist_ok=True)
    save_tiny_diffusion_gemma(FOLDER, TEXTS, initializer_range=INITIALIZER_RANGE)
    steps = golden_logits(open_model(FOLDER))
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "logits": [step.tolist() for step in steps],
    }
    (FOLDER / "golden_logits.json").write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
