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

from decision_engine.model.int8_storage import quantised
from decision_engine.model.loader import base_model_dir


def main(out: Path) -> None:
    package = base_model_dir().parent
    shutil.copytree(
        package, out / package.name, ignore=shutil.ignore_patterns("model.safetensors", "__pycache__"), dirs_exist_ok=True
    )
    packed = quantised(load_file(str(base_model_dir() / "model.safetensors")), lambda name: True)
    packed = {k: v if v.dtype == torch.int8 else v.half() for k, v in packed.items()}  # vectors in fp16
    save_file(packed, str(out / "base_int8.safetensors"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
