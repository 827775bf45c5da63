"""ContractNLI (Koreeda & Manning, 2021; CC BY 4.0): NDAs judged against 17 hypotheses, as requests.

Reads the dataset's JSON, splits it by document, and turns each document into requests of up to
eight hypotheses with gold labels and gold evidence ranges.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..retrieval.coverage import evidence_recall as ranges_recall
from ..retrieval.spans import Span
from ..types import MAX_QUESTIONS

T = TypeVar("T")

LABELS = ("entailment", "contradiction", "not mentioned")
LABEL_OF = {"Entailment": "entailment", "Contradiction": "contradiction", "NotMentioned": "not mentioned"}


class ContractNliError(ValueError):
    """A file that is not in ContractNLI's format, with where it goes wrong."""


@dataclass
class NliDocument:
    id: str
    text: str
    spans: list[tuple[int, int]]  # ContractNLI's own segmentation, character offsets
    labels: dict[str, str] = field(default_factory=dict)  # hypothesis key ("nda-1") -> one of LABELS
    evidence: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # key -> gold character ranges


def hypothesis_order(key: str) -> tuple[int, str]:
    """Sort key for "nda-2" before "nda-10"."""
    tail = key.rsplit("-", 1)[-1]
    return (int(tail), key) if tail.isdigit() else (1 << 30, key)


def load_contractnli(path: str | Path) -> tuple[list[NliDocument], dict[str, str]]:
    """Documents and hypothesis texts (key -> hypothesis) of one ContractNLI split file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        hypotheses = {key: entry["hypothesis"] for key, entry in data["labels"].items()}
        raw_documents = data["documents"]
    except (KeyError, TypeError, AttributeError) as error:
        raise ContractNliError(f"{path}: missing {error} at the top level") from None
    documents = []
    for i, raw in enumerate(raw_documents):
        try:
            text = raw["text"]
            spans = [(int(s), int(e)) for s, e in raw["spans"]]
            annotations = raw["annotation_sets"][0]["annotations"]
            labels, evidence = {}, {}
            for key, annotation in annotations.items():
                labels[key] = LABEL_OF[annotation["choice"]]
                evidence[key] = [spans[j] for j in annotation.get("spans", [])]
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ContractNliError(f"{path}: documents[{i}] is malformed ({error!r})") from None
        documents.append(NliDocument(str(raw.get("id", i)), text, spans, labels, evidence))
    if not documents:  # else a fit would run on nothing from it and say nothing
        raise ContractNliError(f"{path}: holds no documents")
    return documents, hypotheses


def split_documents(
    docs: Sequence[NliDocument], validation_fraction: float = 0.2, seed: int = 0
) -> tuple[list[NliDocument], list[NliDocument]]:
    """(train, validation), split by document so no contract is on both sides; same seed, same split."""
    if not 0.0 <= validation_fraction <= 1.0:
        raise ValueError("validation_fraction must lie in [0, 1]")
    order = sorted(range(len(docs)), key=lambda i: docs[i].id)
    random.Random(seed).shuffle(order)
    held = set(order[: round(len(docs) * validation_fraction)])
    train = [d for i, d in enumerate(docs) if i not in held]
    validation = [d for i, d in enumerate(docs) if i in held]
    return train, validation


def deal(items: Sequence[T], folds: int, seed: int | str) -> list[list[T]]:
    """`items` dealt into `folds` folds of near-equal size, in a seeded shuffle of their order."""
    if folds < 1:
        raise ValueError("folds must be at least 1")
    order = list(items)
    random.Random(seed).shuffle(order)
    return [order[k::folds] for k in range(folds)]


def deal_documents(docs: Sequence[NliDocument], folds: int, seed: int = 0) -> list[list[NliDocument]]:
    """The documents dealt into `folds` folds (`deal`) in the order of their ids; same seed, same folds."""
    return deal(sorted(docs, key=lambda d: d.id), folds, f"folds:{seed}")


def training_documents(
    docs: Sequence[NliDocument], validation_fraction: float = 0.2, seed: int = 0, folds: int = 0, left_out: int = 0
) -> list[NliDocument]:
    """The documents a run learns from: `split_documents`' training side, less fold `left_out` of
    `folds` (`deal_documents`) where `folds` is 2 or more."""
    train, _ = split_documents(docs, validation_fraction, seed)
    if folds < 2:
        return train
    unseen = {d.id for d in deal_documents(train, folds, seed)[left_out]}
    return [d for d in train if d.id not in unseen]


def to_requests(
    doc: NliDocument,
    hypotheses: dict[str, str],
    group_size: int = MAX_QUESTIONS,
    rng: random.Random | None = None,
) -> list[dict]:
    """Samples-format requests asking the document's labelled hypotheses, `group_size` at a time.

    Hypotheses are grouped in key order ("nda-1", "nda-2", ...), or shuffled by `rng` when given.
    """
    if not 1 <= group_size <= MAX_QUESTIONS:
        raise ValueError(f"group_size must be 1 to {MAX_QUESTIONS}")
    keys = sorted((k for k in doc.labels if k in hypotheses), key=hypothesis_order)
    if rng is not None:
        rng.shuffle(keys)
    requests = []
    for g, first in enumerate(range(0, len(keys), group_size)):
        group = keys[first : first + group_size]
        requests.append(
            {
                "id": f"contractnli-{doc.id}-{g + 1}",
                "document": {"text": doc.text, "id": f"contractnli-{doc.id}"},
                "questions": [
                    {"id": k, "text": hypotheses[k], "schema": {"type": "string", "enum": list(LABELS)}}
                    for k in group
                ],
                "labels": {k: doc.labels[k] for k in group},
                "evidence": {k: [[s, e] for s, e in doc.evidence.get(k, [])] for k in group},
            }
        )
    return requests


def evidence_recall(gold: Sequence[tuple[int, int]], selected: Sequence[Span]) -> tuple[int, int]:
    """(covered, total): gold ranges with at least half their characters inside the selected spans."""
    return ranges_recall(gold, [(s.start, s.end) for s in selected])
