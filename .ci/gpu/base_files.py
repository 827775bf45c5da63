"""Write what the GPU machine needs of the base encoder package, small enough to travel: the package's
code, configuration and tokenizer files (without its 90 MB weights file), and its weights in int8 with
one fp16 scale per row (`base_int8.safetensors`, about 23 MB; vectors in fp16). `restore_base.py`
turns them back into the package's weights file there. The restored encoder differs from the real
one by int8 rounding: spans rank as they do here within that rounding, and every figure that counts is
measured again here on the real weights.

Usage: python .ci/gpu/base_files.py OUT_FOLDER
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from decision_engine.model.loader import base_model_dir


def quantised(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each matrix as int8 rows and their fp16 scales (`NAME.int8`, `NAME.scale`); the rest in fp16."""
    out = {}
    for name, tensor in weights.items():
        tensor = tensor.float()
        if tensor.dim() < 2:
            out[name] = tensor.half().contiguous()
            continue
        scale = tensor.abs().amax(dim=1, keepdim=True).clamp_min(1e-8) / 127
        out[f"{name}.int8"] = (tensor / scale).round().clamp(-127, 127).to(torch.int8).contiguous()
        out[f"{name}.scale"] = scale.half().contiguous()
    return out


def main(out: Path) -> None:
    package = base_model_dir().parent
    shutil.copytree(
        package, out / package.name, ignore=shutil.ignore_patterns("model.safetensors", "__pycache__"), dirs_exist_ok=True
    )
    save_file(quantised(load_file(str(base_model_dir() / "model.safetensors"))), str(out / "base_int8.safetensors"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
