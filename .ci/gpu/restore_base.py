"""Turn `base_int8.safetensors` (from `base_files.py`) back into the base package's weights file (fp32)
inside a copy of the package, on a machine that lacks the package's own weights.

Usage: python .ci/gpu/restore_base.py BASE_INT8 PACKAGE_MODEL_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

from decision_engine.model.int8_storage import restored


if __name__ == "__main__":
    weights = {k: v.float().contiguous() for k, v in restored(load_file(sys.argv[1])).items()}
    save_file(weights, str(Path(sys.argv[2]) / "model.safetensors"), metadata={"format": "pt"})
