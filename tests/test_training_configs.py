"""Training presets in the package, experiment configs under experiments/, and the shipped recipe's record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decision_engine.models import BUNDLED_WEIGHTS
from decision_engine.training.config import PRESETS, RETIRED, TrainConfig

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
EXPERIMENT_FILES = sorted(EXPERIMENTS.glob("*.json"))
RETIRED_FILES = sorted((EXPERIMENTS / "retired").glob("*.json"))


def test_the_package_keeps_at_most_four_presets():
    assert len(PRESETS) <= 4
    assert {"smoke", "shipped", "heads-reader", "gpu"} <= set(PRESETS)


@pytest.mark.parametrize("path", EXPERIMENT_FILES, ids=lambda p: p.stem)
def test_every_experiment_loads_and_trains_into_its_own_runs_folder(path):
    cfg = TrainConfig.load(str(path))
    assert cfg.name == path.stem  # `train --config FILE` writes runs/<name>, the folder later stages name


def test_every_init_from_names_a_folder_some_config_writes():
    """`runs/X` is written by the preset X or by experiments/X.json; "bundled" is the shipped model."""
    written = {f"runs/{name}" for name in PRESETS} | {f"runs/{p.stem}" for p in EXPERIMENT_FILES}
    configs = [TrainConfig(**preset) for preset in PRESETS.values()] + [TrainConfig.load(str(p)) for p in EXPERIMENT_FILES]
    retired = [json.loads(p.read_text()) for p in RETIRED_FILES]
    starts = [cfg.init_from for cfg in configs] + [data.get("init_from") for data in retired]
    assert starts and all(start in (None, "bundled") or start in written for start in starts), starts


@pytest.mark.parametrize("path", RETIRED_FILES, ids=lambda p: p.stem)
def test_a_record_of_a_retired_knob_says_so_instead_of_running_something_else(path):
    data = json.loads(path.read_text())
    changed = [key for key, kept in RETIRED.items() if key in data and data[key] != kept]
    assert changed, f"{path.name} uses no retired knob: it belongs in experiments/"
    with pytest.raises(ValueError, match=f"{changed[0]} was retired"):
        TrainConfig.load(str(path))


def test_the_shipped_recipe_is_what_the_bundled_model_recorded(tmp_path):
    """The reader's config (`shipped`) and that of the run the heads were fitted over (`heads-reader`)
    match the training configs the bundled checkpoint recorded for them (which name retired knobs at
    their kept values, so loading them also checks that they are ignored)."""
    meta = json.loads((BUNDLED_WEIGHTS / "config.json").read_text())
    recorded = {"shipped": meta["train_config"], "heads-reader": meta["grafted"]["heads_train_config"]}
    for stage, record in recorded.items():
        path = tmp_path / "recorded.json"
        path.write_text(json.dumps(record))
        assert TrainConfig.load(str(path)).to_dict().items() >= {
            k: v for k, v in record.items() if k not in RETIRED
        }.items()
        ours = TrainConfig.load(stage).to_dict()
        # Not compared: the data path (given with --contractnli) and the name (which only labels the
        # checkpoint and picks the runs/ folder).
        differing = {k for k, v in record.items() if k not in RETIRED and ours[k] != v}
        assert differing <= {"contractnli_path", "name"}, (stage, differing)
        assert TrainConfig.load(stage).name == record["name"]  # the same checkpoint name


def test_a_config_naming_an_unknown_chooser_cue_says_which_values_are_known(tmp_path):
    path = tmp_path / "cue.json"
    path.write_text(json.dumps({"name": "cue", "chooses_values": True, "chooser_cue": "after"}))
    with pytest.raises(ValueError, match=r"cue\.json: chooser_cue must be one of before, around, both, not 'after'"):
        TrainConfig.load(str(path))
    assert TrainConfig.load("heads-reader").chooser_cue == "both"  # the bundled heads' kind: one value chooser per cue
