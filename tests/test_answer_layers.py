"""Answer layers over a frozen prefix pass: prefix states kept across steps equal fresh ones, the prefix
pass never trains, and such a model trains, saves and decides like any other."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from decision_engine.backends.native import pad_positions, pad_prefixes
from decision_engine.backends.protocol import PrefixInput
from decision_engine.cli import main
from decision_engine.model.loader import load_checkpoint, random_model
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.training.config import TrainConfig
from decision_engine.training.loop import build_model, prefix_encoder_keys
from decision_engine.training.prefix_cache import FrozenPrefixCache

PREFIXES = [
    PrefixInput([101, 5, 6, 7, 8, 9, 10, 102], [0, 1, 1, 1, 2, 2, 2, 0], positions=[0, 1, 2, 3, 1, 2, 3, 4]),
    PrefixInput([101, 11, 12, 102], [0, 1, 1, 0], positions=[0, 1, 2, 3]),
]


def _model():
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), answer_layers=True, question_summary=True, segments_read_alone=True)
    model = random_model(cfg, 0)
    torch.nn.init.normal_(model.slot_keys, std=0.1)  # trained slot keys: the answer view must add them
    return model


def _block_hidden(model, state):
    ids = torch.tensor([[103, 103], [103, 0]])
    slots = torch.tensor([[1, 2], [1, 0]])
    return model.block_hidden(state, ids, slots)


def test_kept_prefix_states_give_the_answers_a_fresh_encoding_gives():
    model = _model()
    ids, slots, mask = pad_prefixes(PREFIXES, 0, "cpu")
    cache = FrozenPrefixCache(1 << 30)
    with torch.no_grad():
        fresh = _block_hidden(model, model.encode_prefix(ids, slots, mask, pad_positions(PREFIXES, "cpu")))
        first = _block_hidden(model, model.answer_view(cache.states(model, PREFIXES, 0, "cpu"), slots))
        again = _block_hidden(model, model.answer_view(cache.states(model, PREFIXES, 0, "cpu"), slots))
    assert (cache.hits, cache.misses, len(cache)) == (2, 2, 2)
    assert torch.allclose(fresh, first, atol=1e-3)  # kept in fp16
    assert torch.equal(first, again)


def test_the_cache_keeps_no_more_than_its_bound_and_still_answers():
    model = _model()
    cache = FrozenPrefixCache(1)  # room for nothing
    state = cache.states(model, PREFIXES, 0, "cpu")
    assert len(cache) == 0 and cache.bytes == 0
    assert state.keys[0].shape[:3] == (2, model.cfg.heads, 8)
    cache.states(model, PREFIXES, 0, "cpu")
    assert cache.hits == 0 and cache.misses == 4


def test_slot_keys_tell_an_answer_which_question_is_its_own():
    """The prefix pass adds no slot numbers; the answer view's slot keys are what differ per question."""
    model = _model()
    ids, slots, mask = pad_prefixes(PREFIXES[:1], 0, "cpu")
    renumbered = torch.where(slots == 1, 2, torch.where(slots == 2, 1, slots))
    with torch.no_grad():
        raw = model.prefix_states(ids, slots, mask, pad_positions(PREFIXES[:1], "cpu"))
        raw_renumbered = model.prefix_states(ids, renumbered, mask, pad_positions(PREFIXES[:1], "cpu"))
        assert torch.equal(raw.keys[0], raw_renumbered.keys[0])
        assert not torch.equal(model.answer_view(raw, slots).keys[0], model.answer_view(raw, renumbered).keys[0])


def test_training_leaves_the_prefix_pass_as_built(tmp_path):
    settings = TrainConfig.load("smoke").to_dict() | {"answer_layers": True, "max_steps": 2, "name": "answer-smoke"}
    config = tmp_path / "answer.json"
    config.write_text(json.dumps(settings))
    before = build_model(TrainConfig(**settings)).state_dict()
    out = tmp_path / "out"
    assert main(["train", "--config", str(config), "--out", str(out), "--retrieval", "leading"]) == 0
    after, meta = load_checkpoint(out)
    assert after.cfg.answer_layers
    frozen = prefix_encoder_keys(after)
    assert frozen and all(torch.equal(after.state_dict()[k], before[k].half().float()) for k in frozen)
    assert not torch.equal(after.state_dict()["answer_layers.0.query.weight"], before["answer_layers.0.query.weight"].half().float())
    assert meta["training"]["prefix_cache"]["misses"] > 0


@pytest.fixture(scope="module")
def answer_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("answer-layers")
    settings = TrainConfig.load("smoke").to_dict() | {"answer_layers": True, "max_steps": 1}
    config = folder / "answer.json"
    config.write_text(json.dumps(settings))
    assert main(["train", "--config", str(config), "--out", str(folder / "model"), "--retrieval", "leading"]) == 0
    return folder / "model"


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_a_model_with_answer_layers_decides_in_every_mode(answer_checkpoint, tmp_path, mode, capsys):
    request = {
        "document": {"text": "The tenant gave notice on 2 May 2024. The deposit was 900."},
        "questions": [
            {"id": "notice", "text": "Was notice given?", "schema": {"type": "boolean"}},
            {"id": "kind", "text": "What kind?", "schema": {"type": "string", "enum": ["a", "b", "c"]}},
        ],
        "rules": [{"if": {"notice": [True]}, "then": {"kind": ["a"]}}],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    capsys.readouterr()
    argv = ["decide", str(path), "--model", str(answer_checkpoint), "--mode", mode, "--json", "--retrieval", "leading"]
    assert main(argv) == 0
    response = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    answers = {a["id"]: a["value"] for a in response["answers"]}
    assert response["mode"] == mode
    assert isinstance(answers["notice"], bool) and answers["kind"] in ("a", "b", "c")
    assert answers["notice"] is not True or answers["kind"] == "a"
