"""Models built from their config alone, with seeded random weights, for benchmarks at real size.

No weights file is read: the parameters are made in bfloat16 directly on the target device (never
first in float32 on the CPU), so an 8B-parameter configuration is ready in seconds on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

SEED = 0  # the same weights on every run of the same config and device
DTYPE = torch.bfloat16  # what real-size checkpoints ship in


def random_model(build: Callable[..., torch.nn.Module], device: str) -> torch.nn.Module:
    """`build(dtype=...)` (a transformers `from_config`) run on `device` in bfloat16 after seeding, in eval mode."""
    torch.manual_seed(SEED)
    with torch.device(device):
        model = build(dtype=DTYPE)
    return model.eval()
