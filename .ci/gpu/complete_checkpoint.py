"""Make a checkpoint that needs nothing from the base package's SHA-checked weights: copy CHECKPOINT to
OUT with the tensors it takes from the base (the word embeddings) stored inside it, read from a base
weights file (the one `restore_base.py` writes, on a machine without the package's own).

Usage: python .ci/gpu/complete_checkpoint.py CHECKPOINT BASE_WEIGHTS OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

BASE_NAMES = {"embed.word.weight": "embeddings.word_embeddings.weight"}  # this model's name: the base file's


def main(checkpoint: Path, base_weights: Path, out: Path) -> None:
    meta = json.loads((checkpoint / "config.json").read_text())
    state = load_file(str(checkpoint / "model.safetensors"))
    if meta.get("from_base"):
        base = load_file(str(base_weights))
        state.update({name: base[BASE_NAMES[name]].half() for name in meta["from_base"]})
    meta["from_base"] = []
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
