"""Real-size benchmarking at toy size: weightless checkpoint folders, models built from their config with random
weights (`--random-weights`), and the engine side by side with DiffusionGemma's own generate at a fixed step count."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "DiffusionGemmaForBlockDiffusion"):
    pytest.skip(f"transformers {transformers.__version__} has no DiffusionGemma", allow_module_level=True)

from backend_checks import check_answers  # noqa: E402

from decision_engine import cli  # noqa: E402
from decision_engine.backends.diffusion_gemma import DiffusionGemmaBackend  # noqa: E402
from decision_engine.backends.masked_dllm import MaskedDLLMBackend  # noqa: E402
from decision_engine.bench import workload  # noqa: E402
from decision_engine.bench.real_size import main as real_size_main  # noqa: E402
from decision_engine.engine import DecisionEngine  # noqa: E402
from decision_engine.model.loader import ModelLoadError  # noqa: E402
from decision_engine.models import open_model  # noqa: E402
from decision_engine.validation import request_from_object  # noqa: E402

REMOTE_CODE = Path(__file__).parent / "remote_code"
STEPS = 2


@pytest.fixture(scope="module")
def gemma_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("real-size-tiny") / "dg"
    assert real_size_main(["--kind", "diffusion-gemma", "--size", "tiny", "--out", str(folder)]) == 0
    return folder


def _first_weight(backend) -> torch.Tensor:
    return next(backend.model.parameters()).detach().float()


def test_the_folder_has_no_weights_and_opens_with_seeded_random_bfloat16_weights(gemma_folder):
    assert not [f for f in gemma_folder.iterdir() if f.suffix in (".safetensors", ".bin")]
    backend = open_model(gemma_folder, random_weights=True)
    assert isinstance(backend, DiffusionGemmaBackend)
    assert backend.model.dtype == torch.bfloat16 and not backend.model.training
    assert (backend.vocab.pad_id, backend.vocab.cls_id, backend.vocab.sep_id) == (0, 101, 102)
    again = open_model(gemma_folder, random_weights=True)
    torch.testing.assert_close(_first_weight(again), _first_weight(backend), atol=0, rtol=0)
    assert _first_weight(backend).std() > 0
    with pytest.raises(ModelLoadError):
        open_model(gemma_folder)  # without the flag it needs the weights it does not have
    line = workload.build_workload(1, target_chars=600)[0]
    response = DecisionEngine(backend).decide(request_from_object(line), "joint")
    check_answers(line, json.loads(json.dumps({"answers": [{"id": a.id, "value": a.value} for a in response.answers]})))


def test_a_llada_folder_opens_with_random_weights(tmp_path):
    folder = tmp_path / "llada"
    argv = ["--kind", "llada", "--size", "tiny", "--remote-code", str(REMOTE_CODE), "--out", str(folder)]
    assert real_size_main(argv) == 0
    backend = open_model(folder, trust_remote_code=True, random_weights=True)
    assert isinstance(backend, MaskedDLLMBackend) and backend.model.dtype == torch.bfloat16
    assert backend.vocab.mask_id == 126_336 and backend.model.config.vocab_size == 126_464


def test_llada_needs_its_modelling_code(tmp_path, capsys):
    assert real_size_main(["--kind", "llada", "--size", "tiny", "--out", str(tmp_path / "x")]) == 2
    assert "--remote-code" in capsys.readouterr().err


def test_random_weights_for_another_kind_of_checkpoint_is_an_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]}))
    with pytest.raises(ModelLoadError, match="--random-weights"):
        open_model(tmp_path, random_weights=True)


def test_bench_reports_the_engine_beside_generate_at_a_fixed_step_count(gemma_folder, monkeypatch, capsys):
    build = workload.build_workload
    monkeypatch.setattr(workload, "build_workload", lambda groups: build(groups, target_chars=600))
    argv = ["bench", "--model", str(gemma_folder), "--random-weights", "--json", "--quick", "--groups", "2",
            "--batch-sizes", "2", "--steps", str(STEPS)]
    assert cli.main(argv) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["steps"] == STEPS and report["precision"] == "bfloat16" and "random" in report["weights"]
    assert report["passes_per_group"]["joint"] == STEPS  # one block a group, held to STEPS passes
    side = report["generate"]
    assert (side["steps"], side["batch_size"], side["groups"], side["prompts"]) == (STEPS, 2, 2, 2)
    assert side["generate_forward_passes"] == STEPS  # one batch, its early stop off: exactly STEPS decoder passes
    assert side["forward_passes"] == STEPS  # the engine's batched answer-block passes
    assert side["mean_prompt_tokens"] > 100 and side["canvas_length"] == 32
    assert side["groups_per_s"] == pytest.approx(side["groups"] / side["seconds"])
    assert side["generate_groups_per_s"] == pytest.approx(side["groups"] / side["generate_seconds"])
    assert side["forward_passes_per_s"] == pytest.approx(side["forward_passes"] / side["seconds"])
    assert side["generate_forward_passes_per_s"] == pytest.approx(side["generate_forward_passes"] / side["generate_seconds"])
    assert side["groups_per_s_over_generate"] == pytest.approx(side["groups_per_s"] / side["generate_groups_per_s"])


def test_random_weights_need_a_model_folder(capsys):
    assert cli.main(["bench", "--random-weights", "--quick"]) == 2
    assert "--model" in capsys.readouterr().err
