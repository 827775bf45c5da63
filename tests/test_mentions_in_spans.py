"""Value choosers that read mentions in the pointer's spans: fitted, saved, and read that way by the engine."""

from __future__ import annotations

import json
from dataclasses import replace

from decision_engine.cli import main
from decision_engine.factory import build_engine
from decision_engine.model.loader import load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.options import EngineOptions

TINY = BlockDiffusionConfig.from_name("tiny")


def _pointed_checkpoint(folder, **settings):
    cfg = replace(TINY, points_at_spans=True, question_summary=True, **settings)
    save_checkpoint(random_model(cfg, 0), folder, folder.name)
    return folder


def test_fit_chooser_mentions_in_spans_is_saved_and_read_by_the_engine(tmp_path, capsys):
    folder = _pointed_checkpoint(tmp_path / "pointed")
    out = tmp_path / "in_spans"
    args = ["fit-chooser", "--model", str(folder), "--groups", "2", "--epochs", "1"]
    assert main([*args, "--out", str(out), "--mentions-in-spans"]) == 0
    assert main([*args, "--out", str(tmp_path / "in_windows")]) == 0
    capsys.readouterr()
    model, meta = load_checkpoint(out)
    assert model.cfg.mentions_in_spans and meta["config"]["mentions_in_spans"] is True
    assert build_engine(EngineOptions(model=str(out))).context.embedder.mentions_in_spans
    assert not build_engine(EngineOptions(model=str(tmp_path / "in_windows"))).context.embedder.mentions_in_spans
    # a checkpoint saved before the setting existed reads mentions in windows
    config = json.loads((out / "config.json").read_text())
    del config["config"]["mentions_in_spans"]
    (out / "config.json").write_text(json.dumps(config))
    assert not load_checkpoint(out)[0].cfg.mentions_in_spans


def test_fit_comparer_keeps_the_way_its_checkpoint_reads_mentions(tmp_path, capsys):
    folder = _pointed_checkpoint(tmp_path / "pointed", chooses_values=True, mentions_in_spans=True)
    out = tmp_path / "compared"
    assert main(["fit-comparer", "--model", str(folder), "--out", str(out), "--groups", "2", "--epochs", "1"]) == 0
    capsys.readouterr()
    assert load_checkpoint(out)[0].cfg.mentions_in_spans


def test_mentions_in_spans_needs_a_span_pointer_and_new_choosers(tmp_path, capsys):
    plain = tmp_path / "plain"
    save_checkpoint(random_model(TINY, 0), plain, "plain")
    assert main(["fit-chooser", "--model", str(plain), "--out", str(tmp_path / "a"), "--groups", "1", "--mentions-in-spans"]) != 0
    assert "no span pointer" in capsys.readouterr().err
    for other in ("--generic", "--new-operations"):
        assert main(["fit-chooser", "--out", str(tmp_path / "b"), "--groups", "1", "--mentions-in-spans", other]) == 2
        assert "--mentions-in-spans fits new value choosers" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
