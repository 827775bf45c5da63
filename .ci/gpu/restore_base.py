"""Turn `base_int8.safetensors` (from `base_files.py`) back into the base package's weights file (fp32)
inside a copy of the package, on a machine that lacks the package's own weights.

Usage: python .ci/gpu/restore_base.py BASE_INT8 PACKAGE_MODEL_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def restored(packed: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for name, tensor in packed.items():
        if name.endswith(".scale"):
            continue
        if name.endswith(".int8"):
            base = name.removesuffix(".int8")
            out[base] = (tensor.float() * packed[f"{base}.scale"].float()).contiguous()
        else:
            out[name] = tensor.float().contiguous()
    return out


if __name__ == "__main__":
    save_file(restored(load_file(sys.argv[1])), str(Path(sys.argv[2]) / "model.safetensors"), metadata={"format": "pt"})
