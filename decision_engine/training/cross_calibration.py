"""Calibration answers on ContractNLI from readers that never saw the documents they decide.

A reader is surer of itself on the documents it was trained on than on new ones, so maps fitted on
its own training documents misjudge how sure it should be on new contracts. Cross-fitting deals the
training documents into folds; for each fold a reader is trained as the checkpoint's own reader was
(its recorded training config) on every other fold, grafted under the checkpoint's heads
(`training/graft.py`), and decides the fold it never saw. The heads are the checkpoint's own: they
were fitted on every training document, so only the reader's familiarity is taken out.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..datasets.contractnli import deal_documents, load_contractnli, to_requests, training_documents
from ..evaluation import labelled_groups
from ..options import RETRIEVALS
from .calibration_fit import MODES, collect_answers
from .config import TrainConfig


def recorded_reader_config(folder: Path) -> tuple[TrainConfig, str]:
    """The training config the checkpoint's reader was trained with, and how its documents were cut to
    the context ("pointed" readers ignore it); ValueError where it records no config or where its
    reader continued from another checkpoint (which saw every fold)."""
    meta = json.loads((folder / "config.json").read_text())
    training = meta.get("training", {})
    retrieval = training.get("grafted_reader", training).get("retrieval")
    if not meta.get("train_config"):
        raise ValueError(f"{folder} records no training config for its reader, so no reader can be trained as it was")
    cfg = TrainConfig.from_dict(meta["train_config"], f"{folder}'s recorded training config")
    if cfg.init_from:
        raise ValueError(
            f"{folder}'s reader continued from {cfg.init_from}, which saw every ContractNLI training document: "
            "its folds cannot be left out"
        )
    return cfg, retrieval if retrieval in RETRIEVALS else "leading"


def cross_fitted_answers(
    folder: Path,
    contractnli: Path,
    folds: int,
    work: Path,
    device: str = "cpu",
    log: Callable[[str], None] = print,
) -> tuple[list[tuple[str, float, bool]], dict]:
    """("mode:kind", raw confidence, right) of every answer chosen on the ContractNLI training documents,
    each decided by a reader trained without its fold, under `folder`'s heads; and a record of the run.

    Each fold's reader, graft and answers are kept in `work` (`fold-K.json` once the fold is decided),
    so a run started again after an interruption goes on from the first fold not decided, its reader
    from its last finished epoch; the caller removes `work` once the maps are written."""
    if folds < 2:
        raise ValueError("cross-fitting needs at least 2 folds")
    recorded, retrieval = recorded_reader_config(folder)
    cfg = replace(recorded, contractnli_path=str(contractnli), contractnli_folds=folds)
    docs, hypotheses = load_contractnli(contractnli)
    dealt = deal_documents(
        training_documents(docs, cfg.contractnli_validation_fraction, cfg.contractnli_split_seed), folds, cfg.contractnli_split_seed
    )
    work.mkdir(parents=True, exist_ok=True)
    answers: list[tuple[str, float, bool]] = []
    minutes = []
    for k, fold in enumerate(dealt):
        done = work / f"fold-{k}.json"
        what = {"heads": str(folder), "folds": folds, "documents": [d.id for d in fold]}
        kept = json.loads(done.read_text()) if done.exists() else None
        if kept is None or kept["fold"] != what:  # none yet, or one of another checkpoint or deal
            begun = work / f"fold-{k}.begun.json"
            if not begun.exists() or json.loads(begun.read_text()) != what:  # a reader begun for another deal
                shutil.rmtree(work / f"reader-{k}", ignore_errors=True)
                begun.write_text(json.dumps(what))
            started = time.monotonic()
            fold_answers = _decide_fold(
                replace(cfg, contractnli_left_out_fold=k), folder, fold, hypotheses, work, retrieval, device, log
            )
            kept = {"fold": what, "answers": fold_answers, "minutes": round((time.monotonic() - started) / 60, 2)}
            partial = done.with_suffix(".partial")
            partial.write_text(json.dumps(kept))
            partial.replace(done)
        else:
            log(f"cross-fit: fold {k + 1}/{folds} was decided before ({done})")
        answers += [(key, confidence, ok) for key, confidence, ok in kept["answers"]]
        minutes.append(kept["minutes"])
        log(f"cross-fit: fold {k + 1}/{folds} decided in {minutes[-1]} minutes ({len(answers)} answers so far)")
    record = {"cross_fitted_folds": folds, "cross_fitted_documents": sum(len(f) for f in dealt), "fold_minutes": minutes}
    return answers, record


def _decide_fold(cfg: TrainConfig, folder: Path, fold, hypotheses, work: Path, retrieval: str, device: str, log) -> list:
    """Train the reader that leaves out fold `cfg.contractnli_left_out_fold` (going on from its last
    finished epoch where an earlier run stopped), graft it under `folder`'s heads and decide the fold."""
    from ..factory import build_engine
    from ..models import open_model
    from .graft import graft_heads
    from .loop import train

    k = cfg.contractnli_left_out_fold
    reader, grafted = work / f"reader-{k}", work / f"grafted-{k}"
    log(f"cross-fit: fold {k + 1}/{cfg.contractnli_folds}: training a reader without its {len(fold)} documents")
    resume = (reader / "resume.pt").exists()
    train(cfg, reader, device, log=log, retrieval=retrieval, resume=resume)
    graft_heads(reader, folder, grafted)
    model = open_model(grafted, device=device)
    model.calibration = None  # raw confidences, as `calibrate` fits them
    engine = build_engine(model=model)
    groups = labelled_groups(line for doc in fold for line in to_requests(doc, hypotheses))
    return [answer for mode in MODES for answer in collect_answers(engine, groups, mode)]
