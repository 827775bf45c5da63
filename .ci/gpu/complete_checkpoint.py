"""Make a checkpoint that needs nothing from the base package: copy CHECKPOINT to OUT with the
word embeddings (from `base_files.py`) stored inside it, for a machine without the base weights.

Usage: python .ci/gpu/complete_checkpoint.py CHECKPOINT WORD_EMBEDDINGS OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file


def main(checkpoint: Path, embeddings: Path, out: Path) -> None:
    meta = json.loads((checkpoint / "config.json").read_text())
    state = load_file(str(checkpoint / "model.safetensors"))
    if meta.get("from_base"):
        from_base = load_file(str(embeddings))
        state.update({name: from_base[name] for name in meta["from_base"]})
    meta["from_base"] = []
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
