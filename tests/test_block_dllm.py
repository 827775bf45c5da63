"""Block-cached diffusion LLMs (SDAR's interface) on a tiny remote-code stand-in built here, opened through --model."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from backend_checks import (  # noqa: E402
    ON_TEST_DEVICE,
    TEST_DEVICE,
    check_batch_padding_invariance,
    check_decide_through_command_line,
    on_device,
    random_prefix,
)
from test_masked_dllm import MASK_ID, REQUEST, _tokenizer, _write_config  # noqa: E402

from decision_engine.backends.block_dllm import BlockCachedDLLMBackend, block_causal_mask  # noqa: E402
from decision_engine.model.loader import ModelLoadError  # noqa: E402
from decision_engine.models import open_model  # noqa: E402

pytestmark = ON_TEST_DEVICE
REMOTE_CODE = Path(__file__).parent / "remote_code"
BLOCK = 4


def _save(folder: Path, **config) -> Path:
    for file in REMOTE_CODE.glob("*_sdar_standin.py"):
        shutil.copy(file, folder / file.name)
    tok = _tokenizer()
    tok.save_pretrained(str(folder))
    _write_config(folder, model_type="sdar", vocab_size=len(tok), mask_token_id=MASK_ID, bos_token_id=1, eos_token_id=2,
                  auto_map={"AutoConfig": "configuration_sdar_standin.SDARStandInConfig",
                            "AutoModelForCausalLM": "modeling_sdar_standin.SDARStandInForCausalLM"}, **config)
    made = transformers.AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(made, trust_remote_code=True).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def sdar_folder(tmp_path_factory) -> Path:
    return _save(tmp_path_factory.mktemp("tiny-sdar"), block_size=BLOCK)


@pytest.fixture(scope="module")
def backend(sdar_folder):
    return open_model(sdar_folder, device=TEST_DEVICE, trust_remote_code=True)


def test_folder_opens_as_a_block_cached_model(backend, sdar_folder):
    assert isinstance(backend, BlockCachedDLLMBackend)
    assert backend.name == f"block-dllm:{sdar_folder.name}"
    assert backend.block_size == BLOCK and backend.vocab.mask_id == MASK_ID


def test_a_block_model_without_a_block_size_names_the_flag(tmp_path):
    folder = _save(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config.pop("block_size", None)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="--block-size"):
        open_model(folder, trust_remote_code=True)


def test_the_cached_path_equals_a_full_forward(backend):
    """Prefix read block-causally into the cache, then the block over it, against one forward over both."""
    vocab = backend.vocab
    prefix = random_prefix(3, 11, vocab)
    block = torch.tensor([[vocab.mask_id, vocab.digit_ids[1], vocab.mask_id]])
    slots = torch.tensor([[1, 1, 2]])
    cache = backend.encode_prefix([prefix])
    cached = backend.block_logits(cache, block, slots)
    again = backend.block_logits(cache, block, slots)
    n, length = len(prefix.token_ids), block.shape[1]
    ids = torch.tensor([prefix.token_ids + block[0].tolist()])
    positions = torch.arange(n + length)[None]
    mask = torch.zeros((1, 1, n + length, n + length), dtype=torch.bool)
    mask[:, :, :n, :n] = block_causal_mask(positions[:, :n], torch.ones((1, n), dtype=torch.bool), BLOCK)
    mask[:, :, n:, :] = True  # the answer block reads the whole prefix and itself
    ids, mask, positions = on_device(ids, mask, positions)
    with torch.inference_mode():
        full = backend.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, n:]
    torch.testing.assert_close(cached.cpu(), full.cpu(), atol=1e-5, rtol=0)
    torch.testing.assert_close(again.cpu(), cached.cpu(), atol=0, rtol=0)  # a step leaves the cache as it was


def test_block_logits_do_not_depend_on_batch_padding(backend):
    check_batch_padding_invariance(backend, random_prefix(1, 6, backend.vocab), random_prefix(2, 23, backend.vocab))


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_decide_through_the_command_line(sdar_folder, tmp_path, capsys, mode):
    response = check_decide_through_command_line(REQUEST, ["--model", str(sdar_folder), "--trust-remote-code"], mode,
                                                 tmp_path, capsys)
    assert response["model"] == f"block-dllm:{sdar_folder.name}"
