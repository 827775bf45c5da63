"""Write what the bundled checkpoint takes from the base encoder package, small enough to travel:
the package's code, configuration and tokenizer files (without its 90 MB weights file), and the
word embeddings alone, in fp16, as `word_embeddings.safetensors`.

Usage: python .ci/gpu/base_files.py OUT_FOLDER
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from decision_engine.model.loader import base_model_dir, base_state_dict


def main(out: Path) -> None:
    package = base_model_dir().parent
    shutil.copytree(
        package, out / package.name, ignore=shutil.ignore_patterns("model.safetensors", "__pycache__"), dirs_exist_ok=True
    )
    word = base_state_dict()["embed.word.weight"]  # SHA-256 of the base weights checked here
    save_file({"embed.word.weight": word.to(torch.float16).contiguous()}, str(out / "word_embeddings.safetensors"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
