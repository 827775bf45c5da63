"""Matrices stored in int8 with a scale per row: the round trip's bound, and checkpoints that keep parts so."""

from __future__ import annotations

import json

import torch

from decision_engine.model.int8_storage import CODES, SCALES, quantised, restored
from decision_engine.model.loader import INT8_PARTS, load_checkpoint, random_model, save_checkpoint, save_refitted
from decision_engine.model.transformer import BlockDiffusionConfig


def test_the_round_trip_moves_each_weight_by_little_more_than_half_its_rows_step():
    torch.manual_seed(0)
    state = {"part.matrix": torch.randn(5, 7), "part.stack": torch.randn(3, 4, 6), "part.vector": torch.randn(7)}
    packed = quantised(state, lambda name: name.startswith("part."))
    assert packed["part.matrix" + CODES].dtype == torch.int8 and packed["part.stack" + SCALES].shape == (3, 4, 1)
    assert packed["part.vector"] is state["part.vector"]  # vectors stay as they are
    back = restored(packed)
    assert set(back) == set(state)
    for name in ("part.matrix", "part.stack"):
        step = state[name].abs().amax(dim=-1, keepdim=True) / 127
        assert ((back[name] - state[name]).abs() <= 0.6 * step).all()  # half a step, the scale itself in fp16


def test_a_checkpoint_keeps_its_int8_parts_through_a_refit(tmp_path):
    model = random_model(BlockDiffusionConfig.from_name("tiny"), seed=0)
    save_checkpoint(model, tmp_path / "plain", "tiny")
    save_checkpoint(model, tmp_path / "packed", "tiny", extra={INT8_PARTS: ["embed"]})
    plain_bytes = (tmp_path / "plain" / "model.safetensors").stat().st_size
    assert (tmp_path / "packed" / "model.safetensors").stat().st_size < 0.75 * plain_bytes
    loaded, meta = load_checkpoint(tmp_path / "packed")
    before, after = model.state_dict(), loaded.state_dict()
    for name, tensor in before.items():
        tolerance = tensor.abs().max().item() / 127 if name.startswith("embed.") and tensor.dim() > 1 else 2e-3
        assert torch.allclose(after[name], tensor.float(), atol=tolerance, rtol=1e-3), name
    save_refitted(loaded, meta, tmp_path / "refitted", tmp_path / "packed", "something", {"done": True})
    again = json.loads((tmp_path / "refitted" / "config.json").read_text())
    assert again[INT8_PARTS] == ["embed"]
    assert (tmp_path / "refitted" / "model.safetensors").stat().st_size < 0.75 * plain_bytes


def test_rounding_in_int8_in_place_matches_what_a_saved_checkpoint_loads(tmp_path):
    from decision_engine.model.int8_storage import round_in_int8

    model = random_model(BlockDiffusionConfig.from_name("tiny"), seed=0)
    save_checkpoint(model, tmp_path / "packed", "tiny", extra={INT8_PARTS: ["embed"]})
    loaded, _ = load_checkpoint(tmp_path / "packed")
    fresh = random_model(BlockDiffusionConfig.from_name("tiny"), seed=0)
    round_in_int8(fresh, ["embed"])
    rounded, original, saved = fresh.state_dict(), model.state_dict(), loaded.state_dict()
    moved = [name for name in original if not torch.equal(rounded[name], original[name])]
    assert moved and all(name.startswith("embed.") for name in moved)  # only the named part is rounded
    for name in moved:  # as the stored codes and scales give it back, up to fp16 storage of the rest
        assert torch.allclose(rounded[name], saved[name], atol=2e-3, rtol=1e-3), name
