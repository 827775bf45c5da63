"""The bundled model's shape: cached prefix, padding that does not leak, pinned base weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from decision_engine.backends.protocol import PrefixInput
from decision_engine.engine import DecisionEngine
from decision_engine.model import loader
from decision_engine.model.loader import ModelLoadError, load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.requests_file import read_requests


def _prefix(n: int, offset: int = 1000) -> PrefixInput:
    return PrefixInput(list(range(offset, offset + n)), [0] * (n // 2) + [1] * (n - n // 2))


def test_batched_rows_match_rows_alone(tiny_backend):
    short, long = _prefix(7), _prefix(40, 2000)
    block = torch.tensor([[103, 103, 5000], [103, 2000, 103]])
    slots = torch.tensor([[1, 1, 2], [1, 2, 2]])
    both = tiny_backend.block_logits(tiny_backend.encode_prefix([short, long]), block, slots)
    alone = tiny_backend.block_logits(tiny_backend.encode_prefix([short]), block[:1], slots[:1])
    assert torch.allclose(both[0], alone[0], atol=1e-4)
    assert not torch.allclose(both[0], both[1], atol=1e-4)


def test_block_padding_does_not_change_real_positions(tiny_backend):
    cache = tiny_backend.encode_prefix([_prefix(12)])
    short = tiny_backend.block_logits(cache, torch.tensor([[103, 103]]), torch.tensor([[1, 1]]))
    padded = tiny_backend.block_logits(cache, torch.tensor([[103, 103, 0, 0]]), torch.tensor([[1, 1, 0, 0]]))
    assert torch.allclose(short[0], padded[0, :2], atol=1e-4)


def test_cached_prefix_equals_one_full_pass(tiny_backend):
    """encode_prefix + block_logits (the decoding path) equals the training forward."""
    model = tiny_backend.model
    p = _prefix(10)
    ids, slots, mask = torch.tensor([p.token_ids]), torch.tensor([p.slot_ids]), torch.ones(1, 10, dtype=torch.bool)
    block, block_slots = torch.tensor([[103, 42, 103]]), torch.tensor([[1, 1, 2]])
    with torch.no_grad():
        full = model(ids, slots, mask, block, block_slots)
    cached = tiny_backend.block_logits(tiny_backend.encode_prefix([p]), block, block_slots)
    assert torch.allclose(full, cached, atol=1e-5)


def test_steps_on_one_cache_equal_fresh_caches(tiny_backend):
    """Later steps reuse the cache's joined prefix+block buffers in place; each step's logits must equal
    those of a cache used for the first time, and match the training (autograd) path."""
    model = tiny_backend.model
    prefixes = [_prefix(9), _prefix(14, 3000)]
    cache = tiny_backend.encode_prefix(prefixes)
    steps = [
        (torch.tensor([[103, 103, 103], [103, 103, 0]]), torch.tensor([[1, 1, 2], [1, 2, 0]])),
        (torch.tensor([[103, 42, 103], [77, 103, 0]]), torch.tensor([[1, 1, 2], [1, 2, 0]])),
        (torch.tensor([[5, 42, 103], [77, 9, 103]]), torch.tensor([[1, 1, 2], [1, 2, 2]])),  # another block mask
    ]
    for block, slots in steps:
        reused = tiny_backend.block_logits(cache, block, slots)
        fresh = tiny_backend.block_logits(tiny_backend.encode_prefix(prefixes), block, slots)
        assert torch.allclose(reused, fresh, atol=1e-5)
    wide = (torch.tensor([[103] * 5, [103] * 5]), torch.tensor([[1, 1, 1, 2, 2], [1, 1, 2, 2, 2]]))
    assert torch.allclose(
        tiny_backend.block_logits(cache, *wide), tiny_backend.block_logits(tiny_backend.encode_prefix(prefixes), *wide), atol=1e-5
    )
    p, (block, slots) = prefixes[0], steps[-1]
    ids, prefix_slots = torch.tensor([p.token_ids]), torch.tensor([p.slot_ids])
    trained = model(ids, prefix_slots, torch.ones(1, 9, dtype=torch.bool), block[:1], slots[:1])  # autograd path
    cached = tiny_backend.block_logits(tiny_backend.encode_prefix([p]), block[:1], slots[:1])
    assert torch.allclose(trained.detach(), cached, atol=1e-5)


def test_scoring_chosen_columns_equals_slicing_the_whole_vocabulary(tiny_backend):
    cache = tiny_backend.encode_prefix([_prefix(12)])
    block, slots = torch.tensor([[103, 103, 2003]]), torch.tensor([[1, 1, 2]])
    columns = torch.tensor([5, 1000, 2003, 30000])
    full = tiny_backend.block_logits(cache, block, slots)
    chosen = tiny_backend.block_logits(cache, block, slots, columns)
    assert chosen.shape == (1, 3, 4)
    assert torch.allclose(chosen, full[..., columns], atol=1e-5)


def test_engine_decides_the_same_with_or_without_column_scoring(tiny_backend, monkeypatch):
    """Confidence is renormalised over allowed tokens, so scoring only those cannot change a decision."""
    items = [i for i in read_requests(Path(__file__).parents[1] / "samples" / "lease_termination.jsonl") if i.request]
    engine = DecisionEngine(tiny_backend)
    scored = engine.decide_batch([i.request for i in items])
    real = tiny_backend.block_logits

    def whole_vocabulary(cache, block_ids, block_slots, columns=None):
        logits = real(cache, block_ids, block_slots)  # every column, sliced afterwards
        return logits if columns is None else logits[..., columns]

    monkeypatch.setattr(tiny_backend, "block_logits", whole_vocabulary)
    sliced = engine.decide_batch([i.request for i in items])
    assert [[a.value for a in r.answers] for r in scored] == [[a.value for a in r.answers] for r in sliced]


def test_slot_embedding_tells_slots_apart(tiny_backend):
    model = random_model(BlockDiffusionConfig.from_name("tiny"), seed=3)
    torch.nn.init.normal_(model.embed.slot.weight)
    cache = model.encode_prefix(torch.tensor([[101, 2000, 102]]), torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool))
    with torch.no_grad():
        a = model.logits(model.block_hidden(cache, torch.tensor([[103]]), torch.tensor([[1]])))
        b = model.logits(model.block_hidden(cache, torch.tensor([[103]]), torch.tensor([[2]])))
    assert not torch.allclose(a, b)


def test_checkpoint_round_trip(tmp_path, tiny_backend):
    save_checkpoint(tiny_backend.model, tmp_path, "round-trip")
    model, meta = load_checkpoint(tmp_path)
    assert meta["name"] == "round-trip"
    for (name, a), (_, b) in zip(tiny_backend.model.state_dict().items(), model.state_dict().items()):
        assert torch.allclose(a, b, atol=1e-2), name  # saved as fp16


def test_a_checkpoint_trained_on_split_digits_is_read_that_way(tmp_path):
    from decision_engine.backends.native import load_native

    model = random_model(BlockDiffusionConfig.from_name("tiny"))
    save_checkpoint(model, tmp_path / "plain", "plain")
    model.cfg.split_digits = True
    save_checkpoint(model, tmp_path / "digits", "digits")
    assert not load_native(tmp_path / "plain").vocab.split_digits
    assert load_native(tmp_path / "digits").vocab.split_digits


def test_a_checkpoint_recording_a_retired_knob_loads_when_it_was_off(tmp_path):
    """Older config.json files (the bundled one too) name `isolate_questions`: off, it is ignored;
    on, the checkpoint would be read differently, so loading it is a clear error."""
    model = random_model(BlockDiffusionConfig.from_name("tiny"))
    save_checkpoint(model, tmp_path, "old")
    meta = json.loads((tmp_path / "config.json").read_text())
    meta["config"]["isolate_questions"] = False
    (tmp_path / "config.json").write_text(json.dumps(meta))
    loaded, _ = load_checkpoint(tmp_path)
    assert loaded.cfg == model.cfg
    meta["config"]["isolate_questions"] = True
    (tmp_path / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="isolate_questions"):
        load_checkpoint(tmp_path)


def test_base_weights_load_and_are_pinned(monkeypatch):
    model = loader.from_base()
    assert model.cfg.hidden == 384 and model.cfg.layers == 6
    monkeypatch.setattr(loader, "BASE_WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(ModelLoadError, match="SHA-256"):
        loader.base_state_dict()


def test_the_bundled_weights_stay_under_30_mb():
    weights = Path(loader.__file__).resolve().parent.parent / "weights" / "model.safetensors"
    assert weights.stat().st_size < 30_000_000, f"{weights.stat().st_size:,} bytes"


def test_position_extension_keeps_the_ends():
    weight = torch.randn(512, 8)
    longer = loader.extend_positions(weight, 1024)
    assert longer.shape == (1024, 8)
    assert torch.allclose(longer[0], weight[0]) and torch.allclose(longer[-1], weight[-1])
