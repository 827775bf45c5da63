"""Inputs for batch-job tests (samples lines with distinct ids, plus planted bad lines) and readers of the results."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from decision_engine.store import schema as db
from decision_engine.store.database import create_db_engine

from service_helpers import sample_lines

SAMPLE_FILES = ("lease_termination.jsonl", "nda.jsonl", "compliance_checklist.jsonl")


@dataclass
class PlantedInput:
    path: Path
    good: dict[str, dict] = field(default_factory=dict)  # id -> labels of each line that should be decided
    bad: dict[int, str] = field(default_factory=dict)  # line number -> what is wrong with it


def good_lines(copies: int) -> list[dict]:
    """`copies` rounds of every samples line, each with its own id (and its gold labels)."""
    samples = [line for name in SAMPLE_FILES for line in sample_lines(name)]
    return [{**line, "id": f"{line['id']}-{k}"} for k in range(copies) for line in samples]


def write_planted(path: Path, copies: int = 4) -> PlantedInput:
    """A JSON Lines input of samples lines with planted problems: invalid JSON, a bad schema, a duplicate
    id, a label outside its question's schema, and a request too large for the tiny model."""
    lines = [json.dumps(line) for line in good_lines(copies)]
    planted = PlantedInput(path)
    for line in good_lines(copies):
        planted.good[line["id"]] = line["labels"]
    first = good_lines(1)[0]
    bad_label = {**first, "id": "bad-label", "labels": {**first["labels"], first["questions"][0]["id"]: "no such value"}}
    too_large = {
        **first,
        "id": "too-large",
        "questions": [
            {"id": f"q{i}", "text": f"Question {i}: " + "is the tenant liable for the damage " * 50,
             "schema": {"type": "boolean"}}
            for i in range(8)
        ],
        "rules": [],
    }
    too_large.pop("labels")
    inserts = {
        3: ('{"id": "broken", "document": ', "invalid JSON"),
        7: (json.dumps({**first, "id": "bad-schema", "questions": [{"id": "q", "text": "?", "schema": {"type": "float"}}]}), "bad schema"),
        11: (json.dumps({**first}), "duplicate id"),  # same id as the first line
        15: (json.dumps(bad_label), "label outside its schema"),
        19: (json.dumps(too_large), "refused by the engine"),
    }
    for number in sorted(inserts):  # a short input gets the planted lines at its end
        at = min(number - 1, len(lines))
        lines.insert(at, inserts[number][0])
        planted.bad[at + 1] = inserts[number][1]
    path.write_text("\n".join(lines) + "\n")
    return planted


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stored_ids(url: str, run: str) -> Counter:
    """How many times each external id is stored under `run`."""
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(db.DecisionGroup.external_id).join(db.Run).where(db.Run.name == run)
            ).scalars()
            return Counter(rows)
    finally:
        engine.dispose()
