"""A small ContractNLI-format file for tests that train, calibrate or evaluate on ContractNLI."""

from __future__ import annotations

import json
from pathlib import Path


def write_contractnli(tmp_path: Path, documents: int = 10) -> Path:
    """A ContractNLI-format file whose hypotheses mostly keep one label across documents."""
    keys = ["nda-1", "nda-2", "nda-3"]
    choices = ["Entailment", "Contradiction", "NotMentioned"]
    docs = []
    for d in range(documents):
        text = f"Agreement {d}. The Recipient shall return all materials. No license is granted."
        first = text.index("The Recipient")
        annotations = {
            key: {"choice": choices[(k + (d % 4 == 0)) % 3], "spans": [] if (k + (d % 4 == 0)) % 3 == 2 else [1]}
            for k, key in enumerate(keys)
        }
        docs.append({
            "id": d, "text": text, "spans": [[0, first - 1], [first, len(text)]],
            "annotation_sets": [{"annotations": annotations}],
        })
    labels = {key: {"hypothesis": f"Hypothesis {key}."} for key in keys}
    path = tmp_path / "contractnli.json"
    path.write_text(json.dumps({"documents": docs, "labels": labels}))
    return path
