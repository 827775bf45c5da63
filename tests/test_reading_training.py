"""Training the reading model: its examples, the evidence it learns to point at, and a saved checkpoint that decides."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import torch

from decision_engine.datasets.contractnli import LABELS
from decision_engine.factory import build_engine
from decision_engine.model.loader import random_model
from decision_engine.model.reading import ReadingModel, evidence_loss
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.options import EngineOptions
from decision_engine.training.config import TrainConfig
from decision_engine.training.loop import train
from decision_engine.training.reading import batch_tensors, encode_documents, hidden_evidence_examples, lay_out_line, token_mask
from decision_engine.validation import request_from_object

TEXT = (
    "1. Purpose. The parties wish to explore a business opportunity. "
    "2. Return of materials. The Recipient shall return or destroy all Confidential Information on request. "
    "3. Term. This Agreement lasts five years."
)
EVIDENCE = [TEXT.index("2. Return"), TEXT.index(" 3. Term")]


def nli_line() -> dict:
    question = {"id": "nda-11", "text": "The Recipient shall return or destroy Confidential Information.",
                "schema": {"type": "string", "enum": list(LABELS)}}
    other = {"id": "nda-2", "text": "The agreement lasts at least ten years.", "schema": {"type": "string", "enum": list(LABELS)}}
    return {"document": {"text": TEXT}, "questions": [question, other],
            "labels": {"nda-11": "entailment", "nda-2": "contradiction"},
            "evidence": {"nda-11": [EVIDENCE], "nda-2": []}}


def tiny_reader() -> ReadingModel:
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True, reads_documents=True)
    return random_model(cfg, seed=0)


def test_a_line_is_laid_out_as_the_engine_lays_it_out_for_a_reading_model(vocab):
    line = nli_line()
    examples = lay_out_line(vocab, line, independent=1)
    assert len(examples) == 2  # the group, and question 2 alone
    group, alone = examples
    assert group.prefix.document == TEXT and vocab.encode("purpose")[0] not in group.prefix.token_ids
    engine_prefix = build_engine(EngineOptions(), model=_Reading(vocab)).prepare(request_from_object(line), "joint").blocks[0].prefix
    assert group.prefix == engine_prefix
    assert group.evidence == {1: [tuple(EVIDENCE)], 2: []} and alone.evidence == {1: []}
    assert set(alone.slots) == {1}


class _Reading:
    """Just what the engine reads of a model to lay requests out for a reading model."""

    def __init__(self, vocab):
        self.vocab, self.name, self.version, self.device = vocab, "layout", "", torch.device("cpu")
        self.max_positions, self.context_tokens, self.reads_documents = 512, None, True


def test_hidden_evidence_asks_the_question_again_with_the_answer_not_mentioned(vocab):
    hidden = hidden_evidence_examples(vocab, nli_line(), random.Random(0), share=1.0)
    assert len(hidden) == 1  # only the question with evidence
    (example,) = hidden
    assert example.hidden == (tuple(EVIDENCE),) and example.evidence == {}
    space_tokens = vocab.encode("not mentioned")
    assert example.gold[: len(space_tokens)] == space_tokens


def test_gold_and_hidden_tokens_are_the_ones_inside_the_ranges(vocab):
    model = tiny_reader()
    states = encode_documents(model, vocab, [TEXT], lambda _: None)[TEXT]
    inside = token_mask(states, [EVIDENCE])
    for (a, b), flag in zip(states.offsets.tolist(), inside.tolist()):
        assert flag == (a < EVIDENCE[1] and b > EVIDENCE[0])
    assert 0 < int(inside.sum()) < len(states)


def test_the_pointer_learns_where_the_evidence_is(vocab):
    torch.manual_seed(0)
    model = tiny_reader()
    states = encode_documents(model, vocab, [TEXT], lambda _: None)
    examples = lay_out_line(vocab, nli_line())
    batch = batch_tensors(examples, states, vocab.pad_id, "cpu")
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    losses = []
    for _ in range(40):
        _, prefix = model(batch["prefix_ids"], batch["prefix_slots"], batch["prefix_mask"], batch["gold"],
                          batch["block_slots"], batch["columns"], batch["memory"])
        loss = evidence_loss(prefix.pointer, batch["gold_tokens"][:, : prefix.pointer.shape[1]])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_evidence_loss_is_zero_without_gold():
    pointer = torch.tensor([[[0.0, float("-inf")]]])
    assert evidence_loss(pointer, torch.zeros_like(pointer, dtype=torch.bool)).item() == 0.0


def test_train_saves_a_reading_model_that_decides_with_evidence(tmp_path, vocab):
    config = tmp_path / "reader.json"
    data = tmp_path / "nli.jsonl"
    data.write_text(json.dumps(nli_line()) + "\n")
    cfg = dict(name="tiny-reader", model="tiny", from_base=False, reads_documents=True, generated_groups_per_epoch=4,
               epochs=1, batch_size=2, max_steps=2, warmup_steps=1, freeze_word_embeddings=False)
    config.write_text(json.dumps(cfg))
    summary = train(TrainConfig.load(str(config)), tmp_path / "run", log=lambda _: None)
    assert summary["steps"] == 2
    engine = build_engine(EngineOptions(model=str(tmp_path / "run")))
    assert engine.model.reads_documents
    response = engine.decide(request_from_object(nli_line()))
    assert [a.value in LABELS for a in response.answers] == [True, True]
    assert all(a.evidence for a in response.answers if a.step)
