"""A model that reads whole documents, end to end through the engine: every mode, evidence, the cache."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from decision_engine.backends.native import NativeBackend
from decision_engine.engine import DecisionEngine
from decision_engine.model.loader import from_base, frozen_document_keys, load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.validation import request_from_object
from decision_engine.values import value_problem

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture(scope="module")
def reader(vocab):
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True, reads_documents=True)
    return NativeBackend(random_model(cfg, seed=3), vocab, "tiny-reader")


@pytest.fixture(scope="module")
def lease_request():
    line = json.loads((SAMPLES / "lease_termination.jsonl").read_text().splitlines()[0])
    return request_from_object(line)


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_reading_model_decides_valid_answers_with_evidence_from_the_document(reader, lease_request, mode):
    response = DecisionEngine(reader).decide(lease_request, mode)
    text = lease_request.document.text
    assert [a.id for a in response.answers] == [q.id for q in lease_request.questions]
    for question, answer in zip(lease_request.questions, response.answers):
        assert value_problem(question.schema, answer.value) is None
        if answer.step:  # decided by the model: its pointer names spans of the document
            assert answer.evidence, answer.id
            for e in answer.evidence:
                assert text[e.start : e.end] == e.text and 0 < e.score <= 1
            scores = [e.score for e in answer.evidence]
            assert scores == sorted(scores, reverse=True)


def test_the_second_group_about_a_document_reuses_its_encoding(reader, lease_request):
    engine = DecisionEngine(reader)
    reader.documents.clear()
    first = engine.decide(lease_request)
    hits = reader.documents.hits
    second = engine.decide(lease_request)
    assert reader.documents.hits == hits + 1 and len(reader.documents) == 1
    assert [(a.value, a.confidence) for a in first.answers] == [(a.value, a.confidence) for a in second.answers]


def test_another_document_is_read_afresh(reader, lease_request):
    engine = DecisionEngine(reader)
    reader.documents.clear()
    engine.decide(lease_request)
    other = msgspec.structs.replace(
        lease_request, document=msgspec.structs.replace(lease_request.document, text="A different lease. " * 40)
    )
    engine.decide(other)
    assert len(reader.documents) == 2


def test_checkpoint_round_trip_keeps_the_document_encoder_out_of_the_file(tmp_path, vocab):
    cfg = replace(BlockDiffusionConfig.from_name("minilm-l6"), question_summary=True, reads_documents=True)
    model = from_base(cfg)
    omitted = ["embed.word.weight", *frozen_document_keys(model)]
    save_checkpoint(model, tmp_path, "reader", omit_from_base=omitted)
    loaded, meta = load_checkpoint(tmp_path)
    assert set(meta["from_base"]) == set(omitted)
    for key, tensor in model.state_dict().items():
        assert (loaded.state_dict()[key].float() - tensor.float()).abs().max() < 1e-2, key
