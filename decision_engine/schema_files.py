"""JSON Schema files for the request and response, generated from the Structs."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from .types import DecisionRequest, DecisionResponse

SCHEMA_FILES = {
    "decision_request.schema.json": DecisionRequest,
    "decision_response.schema.json": DecisionResponse,
}


def render(struct: type) -> str:
    """The JSON Schema text of one Struct, stable across runs."""
    schema = msgspec.json.schema(struct)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, struct in SCHEMA_FILES.items():
        path = folder / name
        path.write_text(render(struct))
        written.append(path)
    return written


def stale(folder: Path) -> list[str]:
    """Names of schema files that are missing or differ from the Structs."""
    return [
        name
        for name, struct in SCHEMA_FILES.items()
        if not (folder / name).is_file() or (folder / name).read_text() != render(struct)
    ]
