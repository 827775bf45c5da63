"""The bundled samples' decisions under the bundled model, in every mode, as plain data.

`python tests/sample_decisions.py` rewrites `tests/fixtures/sample_decisions.json`; do so only when
the bundled model itself changes (the fixture records which model version it was made with).
"""

from __future__ import annotations

import json
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "sample_decisions.json"
MODES = ("joint", "independent", "sequential")


def sample_requests():
    """(sample id, request) for every line of the bundled sample files, in file order."""
    from decision_engine.validation import request_from_object

    for path in sorted(SAMPLES.glob("*.jsonl")):
        for raw in path.read_text().splitlines():
            line = json.loads(raw)
            yield line["id"], request_from_object(line)


def decide_samples(engine) -> dict:
    """{sample id: {mode: [answer as a dict]}} plus the model version."""
    decisions: dict = {}
    for sample_id, request in sample_requests():
        for mode in MODES:
            response = engine.decide(request, mode)
            decisions.setdefault(sample_id, {})[mode] = [
                {
                    "id": a.id,
                    "value": a.value,
                    "confidence": a.confidence,
                    "step": a.step,
                    "evidence": [[e.start, e.end] for e in a.evidence or []],
                }
                for a in response.answers
            ]
    return {"model_version": engine.model.version, "decisions": decisions}


if __name__ == "__main__":
    from decision_engine.factory import build_engine
    from decision_engine.options import EngineOptions

    engine = build_engine(EngineOptions(precision="float32"))  # float32 decides alike on every CPU
    FIXTURE.write_text(json.dumps(decide_samples(engine), indent=1) + "\n")
    print(f"wrote {FIXTURE}")
