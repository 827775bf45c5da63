"""Grafting: one checkpoint's reader under another's heads, each weight from the right one."""

from __future__ import annotations

import json
from dataclasses import replace

import torch

from decision_engine.cli import main
from decision_engine.model.loader import load_checkpoint, random_model, save_checkpoint, store_in_int8
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.training.graft import graft_heads, is_reader_key

TINY = BlockDiffusionConfig.from_name("tiny")


def _save(folder, cfg, seed, extra=None):
    model = random_model(cfg, seed)
    save_checkpoint(model, folder, folder.name, extra=extra)
    return load_checkpoint(folder)[0]


def _heads_checkpoint(folder):
    cfg = replace(TINY, chooses_values=True, value_choosers=2, points_at_spans=True, question_summary=True)
    calibration = {"joint:integer": {"a": 1.5, "b": -0.25}}
    meta = {"calibration": calibration, "absence_gate": {"weight": -1.0, "centre": 2.0}}
    model = random_model(cfg, 1)
    store_in_int8(model, meta, folder, ["value_chooser"])
    save_checkpoint(model, folder, "heads", extra={**meta, "train_config": {"name": "heads-reader"}})
    return load_checkpoint(folder)[0]


def test_the_reader_comes_from_one_checkpoint_and_every_head_from_the_other(tmp_path):
    reader = _save(tmp_path / "reader", replace(TINY, answer_layers=True, question_summary=True), 0,
                   extra={"train_config": {"name": "fast-reader"}, "context_tokens": 96})
    heads = _heads_checkpoint(tmp_path / "heads")
    summary = graft_heads(tmp_path / "reader", tmp_path / "heads", tmp_path / "out")
    grafted, meta = load_checkpoint(tmp_path / "out")
    assert grafted.cfg.answer_layers and grafted.cfg.chooses_values and grafted.cfg.points_at_spans
    assert summary["reader_config"] == {"answer_layers": True}
    own_reader, own_heads = reader.state_dict(), heads.state_dict()
    seen = {"reader": 0, "heads": 0}
    for key, value in grafted.state_dict().items():
        source = own_reader if is_reader_key(key) else own_heads
        seen["reader" if source is own_reader else "heads"] += 1
        assert torch.equal(value, source[key]), key  # fp16 and int8 storage read back as they were saved
    assert seen["reader"] > 0 and seen["heads"] > 0
    assert any(k.startswith("answer_layers.") for k in grafted.state_dict())
    assert any(k.startswith("value_chooser.") for k in grafted.state_dict())
    assert meta["calibration"] == {"joint:integer": {"a": 1.5, "b": -0.25}}
    assert meta["absence_gate"]["weight"] == -1.0 and meta["stored_in_int8"] == ["value_chooser"]
    assert meta["train_config"] == {"name": "fast-reader"} and meta["context_tokens"] == 96
    assert meta["grafted"]["heads_train_config"] == {"name": "heads-reader"}  # the run the heads were fitted over
    # grafted again (a newer reader under the same heads), the heads' run is still the one named
    graft_heads(tmp_path / "reader", tmp_path / "out", tmp_path / "again")
    assert load_checkpoint(tmp_path / "again")[1]["grafted"]["heads_train_config"] == {"name": "heads-reader"}


def test_readers_of_different_shapes_are_refused_by_the_command(tmp_path, capsys):
    _save(tmp_path / "reader", replace(TINY, hidden=32, heads=2), 0)
    _heads_checkpoint(tmp_path / "heads")
    code = main(["graft-heads", "--reader", str(tmp_path / "reader"), "--heads", str(tmp_path / "heads"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code != 0 and "different shapes (hidden, heads)" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_command_writes_a_checkpoint_and_says_what_came_from_where(tmp_path, capsys):
    _save(tmp_path / "reader", replace(TINY, question_summary=True), 0)
    _heads_checkpoint(tmp_path / "heads")
    code = main(["graft-heads", "--reader", str(tmp_path / "reader"), "--heads", str(tmp_path / "heads"),
                 "--out", str(tmp_path / "out")])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["reader_config"] == {}
    assert json.loads((tmp_path / "out" / "config.json").read_text())["grafted"]["heads"] == str(tmp_path / "heads")
