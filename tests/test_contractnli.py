"""The ContractNLI reader: a tiny synthetic file always, the real split when it is on this machine."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from decision_engine.datasets.contractnli import (
    LABELS,
    ContractNliError,
    evidence_recall,
    load_contractnli,
    split_documents,
    to_requests,
)
from decision_engine.evaluation import LabelledGroup, majority_answers, prior_accuracy
from decision_engine.retrieval.spans import Span
from decision_engine.training.config import TrainConfig
from decision_engine.training.loop import epoch_lines
from decision_engine.validation import request_from_object

REAL_SPLIT = Path(__file__).resolve().parents[2] / "shared" / "data" / "contractnli" / "contractnli_test_split.json"

TEXT_A = "NDA\nThe Recipient shall return all materials. No license is granted. Governing law: Ohio."
TEXT_B = "Agreement. Obligations survive for 3 years."
KEYS = [f"nda-{n}" for n in (1, 2, 3, 4, 5, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20)]  # ContractNLI's 17


def offsets(text: str, pieces: list[str]) -> list[list[int]]:
    start = [text.index(p) for p in pieces]
    return [[s, s + len(p)] for s, p in zip(start, pieces)]


def synthetic_file(tmp_path: Path) -> Path:
    choices = ["Entailment", "Contradiction", "NotMentioned"]
    pieces_a = ["NDA", "The Recipient shall return all materials.", "No license", "Governing law: Ohio."]
    spans_a = offsets(TEXT_A, pieces_a)
    spans_b = offsets(TEXT_B, ["Agreement.", "Obligations survive for 3 years."])

    def annotations(n_spans: int, offset: int) -> dict:
        out = {}
        for i, key in enumerate(KEYS):
            choice = choices[(i + offset) % 3]
            evidence = [] if choice == "NotMentioned" else [1 + i % (n_spans - 1)]
            out[key] = {"choice": choice, "spans": evidence}
        return out

    data = {
        "documents": [
            {
                "id": 7, "file_name": "a.txt", "text": TEXT_A, "spans": spans_a,
                "annotation_sets": [{"annotations": annotations(4, 0)}], "document_type": "txt", "url": "",
            },
            {
                "id": 9, "file_name": "b.txt", "text": TEXT_B, "spans": spans_b,
                "annotation_sets": [{"annotations": annotations(2, 1)}], "document_type": "txt", "url": "",
            },
        ],
        "labels": {key: {"short_description": key, "hypothesis": f"Hypothesis {key}."} for key in KEYS},
    }
    path = tmp_path / "tiny_contractnli.json"
    path.write_text(json.dumps(data))
    return path


def test_reader_on_synthetic_file(tmp_path):
    docs, hypotheses = load_contractnli(synthetic_file(tmp_path))
    assert [d.id for d in docs] == ["7", "9"]
    assert set(hypotheses) == set(KEYS) and hypotheses["nda-10"] == "Hypothesis nda-10."
    a = docs[0]
    assert a.text == TEXT_A and a.spans[1] == (4, 45)
    assert a.labels["nda-1"] == "entailment"
    assert a.labels["nda-2"] == "contradiction"
    assert a.labels["nda-3"] == "not mentioned"
    assert a.evidence["nda-1"] == [(4, 45)] and a.evidence["nda-3"] == []
    assert a.text[slice(*a.evidence["nda-1"][0])] == "The Recipient shall return all materials."
    assert docs[1].labels["nda-1"] == "contradiction"


def test_reader_names_the_bad_document(tmp_path):
    path = synthetic_file(tmp_path)
    data = json.loads(path.read_text())
    data["documents"][1]["annotation_sets"][0]["annotations"]["nda-1"]["choice"] = "Maybe"
    path.write_text(json.dumps(data))
    with pytest.raises(ContractNliError, match=r"documents\[1\]"):
        load_contractnli(path)


@pytest.mark.parametrize("group_size", [1, 3, 8])
@pytest.mark.parametrize("shuffled", [False, True], ids=["sorted", "shuffled"])
def test_requests_cover_every_hypothesis_once(tmp_path, group_size, shuffled):
    docs, hypotheses = load_contractnli(synthetic_file(tmp_path))
    doc = docs[0]
    requests = to_requests(doc, hypotheses, group_size, random.Random(1) if shuffled else None)
    asked = [q["id"] for r in requests for q in r["questions"]]
    assert sorted(asked) == sorted(KEYS)
    assert all(1 <= len(r["questions"]) <= group_size for r in requests)
    assert len(requests) == -(-len(KEYS) // group_size)
    if not shuffled:
        assert asked == KEYS  # key-number order: nda-2 before nda-10
    for request in requests:
        parsed = request_from_object(request)
        assert parsed.document.text == doc.text
        for question in request["questions"]:
            key = question["id"]
            assert question["schema"] == {"type": "string", "enum": list(LABELS)}
            assert question["text"] == hypotheses[key]
            assert request["labels"][key] == doc.labels[key] and request["labels"][key] in LABELS
            assert request["evidence"][key] == [list(r) for r in doc.evidence[key]]
    assert len({r["id"] for r in requests}) == len(requests)


def test_shuffled_groups_are_reproducible(tmp_path):
    docs, hypotheses = load_contractnli(synthetic_file(tmp_path))
    first = to_requests(docs[0], hypotheses, 8, random.Random(5))
    again = to_requests(docs[0], hypotheses, 8, random.Random(5))
    assert first == again
    assert [q["id"] for q in first[0]["questions"]] != KEYS[:8]


def test_split_by_document_is_deterministic(tmp_path):
    docs, _ = load_contractnli(synthetic_file(tmp_path))
    many = [type(docs[0])(str(i), "text", [], {}, {}) for i in range(50)]
    train, validation = split_documents(many, 0.2, seed=3)
    assert len(validation) == 10 and len(train) == 40
    assert {d.id for d in train}.isdisjoint(d.id for d in validation)
    assert split_documents(many, 0.2, seed=3) == (train, validation)
    assert split_documents(list(reversed(many)), 0.2, seed=3)[1] == sorted(validation, key=lambda d: -int(d.id))
    assert split_documents(many, 0.2, seed=4)[1] != validation


def test_evidence_recall_counts_ranges_at_least_half_covered():
    gold = [(0, 10), (20, 30), (40, 50), (60, 60)]
    selected = [Span(0, 10, "x" * 10), Span(24, 26, "xx"), Span(26, 29, "xxx"), Span(45, 70, "x" * 25)]
    # (0,10) fully in; (20,30) only 5 of 10 chars (24..29) -> exactly half counts; (40,50) half; (60,60) empty
    assert evidence_recall(gold, selected) == (3, 4)
    assert evidence_recall([(0, 10)], [Span(6, 20, "x" * 14)]) == (0, 1)
    assert evidence_recall([], selected) == (0, 0)
    assert evidence_recall([(0, 20)], [Span(0, 6, "x" * 6), Span(2, 8, "x" * 6)]) == (0, 1)  # overlap counted once


@pytest.mark.skipif(not REAL_SPLIT.is_file(), reason="ContractNLI test split not on this machine")
def test_real_split():
    docs, hypotheses = load_contractnli(REAL_SPLIT)
    assert len(docs) == 123 and len(hypotheses) == 17
    counts = {label: 0 for label in LABELS}
    for doc in docs:
        for label in doc.labels.values():
            counts[label] += 1
        for key, ranges in doc.evidence.items():
            assert bool(ranges) == (doc.labels[key] != "not mentioned")
    assert counts == {"entailment": 968, "contradiction": 220, "not mentioned": 903}
    for request in to_requests(docs[0], hypotheses):
        request_from_object(request)


def test_training_groups_hold_two_to_eight_hypotheses(tmp_path):
    cfg = TrainConfig(contractnli_path=str(synthetic_file(tmp_path)), generated_groups_per_epoch=0, contractnli_repeats=30)
    first_groups = [line for line in epoch_lines(cfg, 0, random.Random(0)) if line["id"].endswith("-1")]
    assert {len(line["questions"]) for line in first_groups} == set(range(2, 9))  # drawn per pass



def test_majority_answers_take_each_question_most_common_answer():
    label_sets = [
        {"nda-1": "entailment", "nda-2": "not mentioned", "days": 30, "ok": True},
        {"nda-1": "entailment", "nda-2": "contradiction", "days": 1, "ok": 1},
        {"nda-1": "not mentioned", "days": 30, "ok": True},
    ]
    # nda-2 is a tie: the smaller answer in JSON order wins, so the result never depends on input order;
    # True and 1 are counted apart.
    expected = {"nda-1": "entailment", "nda-2": "contradiction", "days": 30, "ok": True}
    assert majority_answers(label_sets) == expected
    assert majority_answers(reversed(label_sets)) == expected
    assert majority_answers([{"ok": 1}, {"ok": True}, {"ok": 1}])["ok"] is not True


def test_prior_accuracy_counts_questions_and_whole_groups():
    groups = [
        LabelledGroup({}, {"nda-1": "entailment", "nda-2": "contradiction"}),
        LabelledGroup({}, {"nda-1": "entailment", "nda-2": "entailment"}),
        LabelledGroup({}, {"nda-3": "not mentioned"}),
    ]
    priors = {"nda-1": "entailment", "nda-2": "contradiction"}  # nothing known of nda-3
    assert prior_accuracy(groups, priors) == {"prior_accuracy": 3 / 5, "prior_group_accuracy": 1 / 3}
    assert prior_accuracy([], priors) == {"prior_accuracy": 0.0, "prior_group_accuracy": 0.0}
