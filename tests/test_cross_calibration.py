"""Cross-fitted calibration: ContractNLI folds, training runs that leave one out, and `calibrate --cross-fit`."""

from __future__ import annotations

import json

import pytest

from contractnli_files import write_contractnli
from decision_engine.cli import main
from decision_engine.datasets.contractnli import deal_documents, load_contractnli, split_documents, training_documents
from decision_engine.training.config import TrainConfig
from decision_engine.training.loop import contractnli_documents, epoch_lines


def test_folds_deal_every_training_document_once_and_the_same_way_each_time(tmp_path):
    docs, _ = load_contractnli(write_contractnli(tmp_path, documents=11))
    folds = deal_documents(docs, 3, seed=0)
    ids = [d.id for fold in folds for d in fold]
    assert sorted(ids) == sorted(d.id for d in docs) and len(set(ids)) == len(ids)
    assert sorted(len(f) for f in folds) == [3, 4, 4]
    assert [[d.id for d in f] for f in deal_documents(list(reversed(docs)), 3, seed=0)] == [[d.id for d in f] for f in folds]
    assert [[d.id for d in f] for f in deal_documents(docs, 3, seed=1)] != [[d.id for d in f] for f in folds]


def test_a_run_leaving_a_fold_out_never_sees_it_nor_the_held_out_documents(tmp_path):
    path = write_contractnli(tmp_path, documents=10)
    docs, _ = load_contractnli(path)
    train, held_out = split_documents(docs)
    fold = {d.id for d in deal_documents(train, 2)[1]}
    kept = {d.id for d in training_documents(docs, folds=2, left_out=1)}
    assert kept == {d.id for d in train} - fold and fold and not kept & {d.id for d in held_out}
    cfg = TrainConfig(contractnli_path=str(path), generated_groups_per_epoch=0, contractnli_folds=2, contractnli_left_out_fold=1)
    assert {d.id for d in contractnli_documents(cfg)[0]} == kept
    assert {d.id for d in contractnli_documents(cfg, held_out=True)[0]} == {d.id for d in held_out}
    import random

    seen = {line["document"]["id"] for line in epoch_lines(cfg, 0, random.Random(0))}
    assert seen == {f"contractnli-{i}" for i in kept}


def test_a_left_out_fold_outside_the_folds_is_refused():
    with pytest.raises(ValueError, match="contractnli_left_out_fold must name one of the 2 folds"):
        TrainConfig(contractnli_folds=2, contractnli_left_out_fold=2)


def test_calibrate_cross_fit_decides_each_training_document_with_a_reader_that_never_saw_it(tmp_path, capsys):
    path = write_contractnli(tmp_path, documents=10)
    checkpoint = tmp_path / "smoke"
    assert main(["train", "--config", "smoke", "--out", str(checkpoint), "--retrieval", "leading"]) == 0
    out = tmp_path / "cross-fitted"
    args = ["calibrate", "--model", str(checkpoint), "--out", str(out), "--contractnli", str(path), "--groups", "0"]
    assert main([*args, "--cross-fit", "2", "--kinds", "enum"]) == 0  # no absence gate: hypotheses are enums
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    record = json.loads((out / "config.json").read_text())["training"]["calibration"]
    assert record["cross_fitted_folds"] == 2 and len(record["fold_minutes"]) == 2
    assert record["cross_fitted_documents"] == 8  # the 10 documents less the 2 held out
    assert record["contractnli_groups"] == 0  # none decided by the checkpoint's own reader
    # 8 documents of 3 hypotheses, each decided once per mode by the reader that never saw it
    assert printed["answers"] == {"joint:enum": 24, "independent:enum": 24}
    assert (out / "model.safetensors").read_bytes() == (checkpoint / "model.safetensors").read_bytes()


@pytest.mark.parametrize(
    "extra, phrase",
    [
        (["--cross-fit", "1"], "at least 2 folds"),
        (["--cross-fit", "2", "--reword"], "leave out --reword"),
    ],
)
def test_calibrate_cross_fit_refuses_what_it_cannot_do(tmp_path, capsys, extra, phrase):
    path = write_contractnli(tmp_path)
    args = ["calibrate", "--out", str(tmp_path / "o"), "--contractnli", str(path), "--groups", "0", *extra]
    assert main(args) == 2
    assert phrase in capsys.readouterr().err
    assert main(["calibrate", "--out", str(tmp_path / "o"), "--groups", "2", "--cross-fit", "2"]) == 2
    assert "--cross-fit needs --contractnli" in capsys.readouterr().err


def test_calibrate_cross_fit_refuses_a_reader_that_continued_from_another_checkpoint(tmp_path, capsys):
    from decision_engine.model.loader import random_model, save_checkpoint
    from decision_engine.model.transformer import BlockDiffusionConfig

    continued = TrainConfig.load("smoke")
    continued.init_from = "bundled"
    save_checkpoint(
        random_model(BlockDiffusionConfig.from_name("tiny")), tmp_path / "continued", "continued",
        extra={"train_config": continued.to_dict()},
    )
    path = write_contractnli(tmp_path)
    args = ["calibrate", "--model", str(tmp_path / "continued"), "--out", str(tmp_path / "o"), "--contractnli", str(path)]
    assert main([*args, "--groups", "0", "--cross-fit", "2"]) == 2
    assert "continued from bundled, which saw every ContractNLI training document" in capsys.readouterr().err
    save_checkpoint(random_model(BlockDiffusionConfig.from_name("tiny")), tmp_path / "unrecorded", "unrecorded")
    args[2] = str(tmp_path / "unrecorded")
    assert main([*args, "--groups", "0", "--cross-fit", "2"]) == 2
    assert "records no training config for its reader" in capsys.readouterr().err


def test_fold_readers_cut_documents_as_the_checkpoints_reader_was_trained_to(tmp_path):
    from decision_engine.training.cross_calibration import recorded_reader_config

    def recorded(training: dict) -> str:
        (tmp_path / "config.json").write_text(json.dumps({"train_config": {"name": "r"}, "training": training}))
        return recorded_reader_config(tmp_path)[1]

    assert recorded({"retrieval": "lexical"}) == "lexical"
    assert recorded({"retrieval": "hybrid", "grafted_reader": {"retrieval": "lexical"}}) == "lexical"  # the grafted reader's
    assert recorded({"retrieval": "pointed"}) == "leading"  # a pointing reader lays out its own evidence


def test_a_cross_fit_stopped_after_a_fold_goes_on_from_the_next(tmp_path, monkeypatch, capsys):
    import decision_engine.training.loop as loop
    from decision_engine.training.calibration_fit import cross_fit_folder

    path = write_contractnli(tmp_path, documents=10)
    checkpoint = tmp_path / "smoke"
    assert main(["train", "--config", "smoke", "--out", str(checkpoint), "--retrieval", "leading"]) == 0
    out = tmp_path / "cross-fitted"
    args = ["calibrate", "--model", str(checkpoint), "--out", str(out), "--contractnli", str(path), "--groups", "0",
            "--cross-fit", "2", "--kinds", "enum"]
    real_train, trained = loop.train, []

    def train_then_stop(cfg, *rest, **options):
        trained.append(cfg.contractnli_left_out_fold)
        if len(trained) == 2:
            raise KeyboardInterrupt  # the machine stops during the second fold's reader
        return real_train(cfg, *rest, **options)

    monkeypatch.setattr(loop, "train", train_then_stop)
    with pytest.raises(KeyboardInterrupt):
        main(args)
    assert (cross_fit_folder(out) / "fold-0.json").exists() and not out.exists()
    # a reader begun for another deal of the documents is not gone on from: it starts again
    (cross_fit_folder(out) / "fold-1.begun.json").write_text(json.dumps({"documents": ["other"]}))
    (cross_fit_folder(out) / "reader-1").mkdir(exist_ok=True)
    (cross_fit_folder(out) / "reader-1" / "resume.pt").write_bytes(b"not a resume file")
    capsys.readouterr()
    assert main(args) == 0
    assert trained == [0, 1, 1]  # the first fold is not trained again
    assert "fold 1/2 was decided before" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["training"]["calibration"]["answers"] == {
        "joint:enum": 24, "independent:enum": 24
    }
    assert not cross_fit_folder(out).exists()  # removed once the maps are written
