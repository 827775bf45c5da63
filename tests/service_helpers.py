"""Building a test app over a tiny model and a migrated store, with API keys of every scope."""

from __future__ import annotations

import json
from pathlib import Path

from decision_engine.engine import DecisionEngine
from decision_engine.service.app import create_app
from decision_engine.service.settings import ServiceSettings
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.keys import SCOPES, create_key
from decision_engine.store.migrate import upgrade

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def sample_lines(name: str = "lease_termination.jsonl") -> list[dict]:
    return [json.loads(line) for line in (SAMPLES / name).read_text().splitlines() if line.strip()]


def sample_request(index: int = 0, name: str = "lease_termination.jsonl") -> tuple[dict, dict]:
    """A samples-file request without its labels, and the labels."""
    obj = sample_lines(name)[index]
    labels = obj.pop("labels")
    obj.pop("id", None)
    return obj, labels


def migrated_keys(url: str) -> dict[str, str]:
    """Migrate the store at `url` to head and create one key per scope."""
    engine = create_db_engine(url)
    upgrade(engine)
    sessions = session_factory(engine)
    keys = {}
    with sessions() as session:
        for scope in SCOPES:
            keys[scope] = create_key(session, scope)[1]
    engine.dispose()
    return keys


def build_app(url: str, model, **settings):
    """An app over `model` (no model loading) and the store at `url`."""
    return create_app(ServiceSettings(database_url=url, **settings), DecisionEngine(model))


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
