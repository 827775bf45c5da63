"""The question summary: answer positions also read the pooled last-layer states of their own question."""

from __future__ import annotations

import json
from dataclasses import replace

import torch

from decision_engine.backends.native import NativeBackend
from decision_engine.backends.protocol import PrefixInput
from decision_engine.cli import main
from decision_engine.model.loader import load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig, question_means
from decision_engine.training.config import TrainConfig

QUESTIONS = PrefixInput([101, *range(2000, 2006), *range(3000, 3004), 102, *range(4000, 4010), 102],
                        [0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0, *[0] * 10, 0])
BLOCK, BLOCK_SLOTS = torch.tensor([[103, 103, 103, 103]]), torch.tensor([[1, 1, 2, 2]])


def _tiny(summary: bool, seed: int = 0):
    cfg = BlockDiffusionConfig.from_name("tiny")
    cfg.question_summary = summary
    return random_model(cfg, seed)


def test_means_pool_each_question_and_leave_row_zero_empty():
    x = torch.arange(12, dtype=torch.float32).reshape(1, 6, 2)  # (B, T, C)
    slots = torch.tensor([[0, 1, 1, 2, 0, 2]])
    mask = torch.tensor([[True, True, True, True, True, False]])  # the last token is padding
    means = question_means(x, slots, mask, max_slots=3)
    assert means.shape == (1, 4, 2)
    assert torch.equal(means[0, 0], torch.zeros(2))
    assert torch.allclose(means[0, 1], (x[0, 1] + x[0, 2]) / 2)
    assert torch.allclose(means[0, 2], x[0, 3])  # padding is not pooled
    assert torch.equal(means[0, 3], torch.zeros(2))  # a question that is not asked


def test_adding_the_summary_to_a_model_changes_nothing_until_trained(vocab, tmp_path):
    save_checkpoint(_tiny(False), tmp_path / "plain", "tiny")
    plain, _ = load_checkpoint(tmp_path / "plain")
    unchanged = NativeBackend(plain, vocab, "tiny")
    before = unchanged.block_logits(unchanged.encode_prefix([QUESTIONS]), BLOCK, BLOCK_SLOTS)
    grown = replace(plain.cfg, question_summary=True)
    model, _ = load_checkpoint(tmp_path / "plain", cfg=grown)  # built with the summary, which starts at zero
    assert model.cfg.question_summary and model.question_summary is not None
    backend = NativeBackend(model, vocab, "tiny")
    after = backend.block_logits(backend.encode_prefix([QUESTIONS]), BLOCK, BLOCK_SLOTS)
    assert torch.equal(before, after)
    with torch.no_grad():
        torch.nn.init.normal_(model.question_summary.weight, std=0.5)
    moved = backend.block_logits(backend.encode_prefix([QUESTIONS]), BLOCK, BLOCK_SLOTS)
    assert not torch.allclose(before, moved, atol=1e-3)


def test_each_slot_reads_its_own_question(vocab):
    """Changing question 2's words changes slot 2's logits through the summary more than slot 1's."""
    model = _tiny(True)
    with torch.no_grad():
        torch.nn.init.normal_(model.question_summary.weight, std=0.5)
    backend = NativeBackend(model, vocab, "tiny")
    other = PrefixInput([*QUESTIONS.token_ids[:7], 5000, 5001, 5002, 5003, *QUESTIONS.token_ids[11:]], QUESTIONS.slot_ids)
    a = backend.block_logits(backend.encode_prefix([QUESTIONS]), BLOCK, BLOCK_SLOTS)
    b = backend.block_logits(backend.encode_prefix([other]), BLOCK, BLOCK_SLOTS)
    change = (a - b).abs().amax(dim=-1)[0]  # per block position
    assert change[2:].min() > change[:2].max()


def test_cached_rows_keep_their_summaries(vocab):
    """Selecting cache rows (as decoding does when blocks finish) keeps each row's own summaries."""
    backend = NativeBackend(_tiny(True), vocab, "tiny")
    with torch.no_grad():
        torch.nn.init.normal_(backend.model.question_summary.weight, std=0.5)
    other = PrefixInput(list(range(6000, 6012)), [0, 1, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0])
    both = backend.encode_prefix([other, QUESTIONS])
    kept = backend.block_logits(both.select([1]), BLOCK, BLOCK_SLOTS)
    alone = backend.block_logits(backend.encode_prefix([QUESTIONS]), BLOCK, BLOCK_SLOTS)
    assert torch.allclose(kept, alone, atol=1e-5)


def test_checkpoints_keep_the_summary(tmp_path, vocab):
    model = _tiny(True, seed=1)
    with torch.no_grad():
        torch.nn.init.normal_(model.question_summary.weight, std=0.5)
    save_checkpoint(model, tmp_path / "ckpt", "tiny")
    loaded, meta = load_checkpoint(tmp_path / "ckpt")
    assert meta["config"]["question_summary"] and loaded.question_summary is not None
    assert torch.allclose(loaded.question_summary.weight, model.question_summary.weight.half().float())


def test_training_with_the_summary_learns_its_projection(tmp_path):
    config = tmp_path / "summary.json"
    config.write_text(json.dumps(TrainConfig.load("smoke").to_dict() | {"question_summary": True, "learning_rate": 1e-2}))
    out = tmp_path / "run"
    assert main(["train", "--config", str(config), "--out", str(out), "--retrieval", "leading"]) == 0
    model, meta = load_checkpoint(out)
    assert meta["config"]["question_summary"]
    start = _tiny(True, seed=TrainConfig.load("smoke").seed)  # the smoke run's initial model
    moved = (model.question_summary.weight - start.question_summary.weight.half().float()).abs().max()
    assert moved > 1e-3
