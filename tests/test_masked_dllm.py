"""The masked-dllm backend, on a LLaDA-style remote-code stand-in (tests/remote_code) saved to a temporary
folder with an auto_map, and a word-level tokenizer that, like LLaDA's, declares no mask, pad, cls or sep."""

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
from tiny_tokenizers import word_level_tokenizer  # noqa: E402
from decision_engine import cli  # noqa: E402
from decision_engine.backends.masked_dllm import MaskedDLLMBackend, MaskedDLLMOptions  # noqa: E402
from decision_engine.backends.protocol import PrefixInput  # noqa: E402
from decision_engine.backends.vocabulary import Vocabulary  # noqa: E402
from decision_engine.model.loader import ModelLoadError  # noqa: E402
from decision_engine.models import model_kind, open_model  # noqa: E402

pytestmark = ON_TEST_DEVICE
REMOTE_CODE = Path(__file__).parent / "remote_code"
SPECIALS = ["[UNK]", "<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>"]
MASK_ID = SPECIALS.index("<|mdm_mask|>")

DOCUMENT = (
    "Mutual non-disclosure agreement between Lumen Harbor Robotics and Stillwater Agritech. "
    "This agreement takes effect on 2024-02-15, the date on which it was signed by both parties. "
    "Notice was given 12 days late."
)
REQUEST = {
    "document": {"text": DOCUMENT},
    "questions": [
        {"id": "kind", "text": "Is the agreement mutual or one-way?",
         "schema": {"type": "string", "enum": ["mutual", "one-way", "unclear"]}},
        {"id": "signed", "text": "Was the agreement signed by both parties?", "schema": {"type": "boolean"}},
        {"id": "delta", "text": "By how many days was the notice late (negative if early)?",
         "schema": {"type": "integer", "minimum": -40, "maximum": 25}},
        {"id": "effective", "text": "What is the effective date?",
         "schema": {"type": "string", "format": "date", "formatMinimum": "2020-01-01", "formatMaximum": "2026-12-31"}},
    ],
    "rules": [
        {"if": {"signed": [False]}, "then": {"kind": ["unclear"]}},
        {"if": {"kind": ["one-way"]}, "then": {"delta": [-3, 0, 7]}},
    ],
}


def _tokenizer(specials=SPECIALS):
    """Like LLaDA's: bos/eos only, the mask token present but not declared as the mask."""
    return word_level_tokenizer(
        [DOCUMENT, json.dumps(REQUEST)], specials, bos_token="<|startoftext|>", eos_token="<|endoftext|>",
        unk_token="[UNK]", additional_special_tokens=[t for t in specials if t == "<|mdm_mask|>"],
    )


def _write_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**config, **changes}))


@pytest.fixture(scope="module")
def llada_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llada")
    for file in REMOTE_CODE.glob("*_llada_standin.py"):
        shutil.copy(file, folder / file.name)
    tok = _tokenizer()
    tok.save_pretrained(str(folder))
    _write_config(folder, model_type="llada", vocab_size=len(tok), mask_token_id=MASK_ID, bos_token_id=1,
                  eos_token_id=2, auto_map={"AutoConfig": "configuration_llada_standin.LLaDAStandInConfig",
                                            "AutoModel": "modeling_llada_standin.LLaDAStandInModelLM"})
    config = transformers.AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config, trust_remote_code=True).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def backend(llada_folder):
    return open_model(llada_folder, device=TEST_DEVICE, trust_remote_code=True)


def test_vocabulary_finds_the_undeclared_mask_token_and_falls_back_to_bos_eos():
    tok = _tokenizer()
    assert tok.mask_token_id is None and tok.pad_token_id is None and tok.cls_token_id is None
    vocab = Vocabulary.from_tokenizer(tok)
    assert vocab.mask_id == MASK_ID
    assert (vocab.pad_id, vocab.cls_id, vocab.sep_id) == (2, 1, 2)
    explicit = Vocabulary.from_tokenizer(tok, mask_id=7, pad_id=0)
    assert (explicit.mask_id, explicit.pad_id) == (7, 0)


def test_folder_opens_as_masked_dllm(backend, llada_folder):
    assert model_kind(json.loads((llada_folder / "config.json").read_text())) == "masked-dllm"
    assert isinstance(backend, MaskedDLLMBackend)
    assert backend.name == f"masked-dllm:{llada_folder.name}"
    assert backend.vocab.mask_id == MASK_ID
    assert backend.max_positions == 512
    assert backend.shift_logits is False


def test_remote_code_needs_trust(llada_folder):
    with pytest.raises(ModelLoadError, match="--trust-remote-code"):
        open_model(llada_folder)


def test_missing_mask_token_is_named(tmp_path):
    _tokenizer(SPECIALS[:3]).save_pretrained(str(tmp_path))
    _write_config(tmp_path, model_type="llada", auto_map={"AutoModel": "modeling_x.X"})
    with pytest.raises(ModelLoadError, match="mask_token_id"):
        open_model(tmp_path, trust_remote_code=True)


def test_missing_loader_class_is_named(tmp_path):
    _write_config(tmp_path, model_type="llada", auto_map={"AutoConfig": "configuration_x.C"})
    with pytest.raises(ModelLoadError, match="AutoModel"):
        open_model(tmp_path, trust_remote_code=True)


def test_bad_folder_names_the_supported_kinds(tmp_path, capsys):
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST))
    assert cli.main(["decide", str(request), "--model", str(tmp_path / "nowhere"), "--device", TEST_DEVICE]) == 1
    err = capsys.readouterr().err
    assert all(kind in err for kind in ("native", "hf-masked-lm", "masked-dllm"))
    assert cli.main(["models"]) == 0
    assert "masked-dllm" in capsys.readouterr().out


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_decide_through_the_command_line(llada_folder, tmp_path, capsys, mode):
    response = check_decide_through_command_line(REQUEST, ["--model", str(llada_folder), "--trust-remote-code"], mode,
                                                 tmp_path, capsys)
    assert response["model"] == f"masked-dllm:{llada_folder.name}"


def _prefix(generator: torch.Generator, length: int, vocab) -> PrefixInput:
    body = torch.randint(4, vocab.size, (length - 2,), generator=generator).tolist()
    ids = [vocab.cls_id, *body, vocab.sep_id]
    return PrefixInput(ids, [0] * len(ids))


def test_block_logits_do_not_depend_on_batch_padding(backend):
    check_batch_padding_invariance(backend, random_prefix(1, 9, backend.vocab), random_prefix(2, 90, backend.vocab), select=False)


def test_shifted_logits_score_each_position_from_the_one_before(llada_folder, backend):
    shifted = MaskedDLLMBackend(llada_folder, TEST_DEVICE, trust_remote_code=True, options=MaskedDLLMOptions(shift_logits=True))
    vocab = backend.vocab
    prefix = _prefix(torch.Generator().manual_seed(2), 12, vocab)
    block = torch.tensor([[vocab.mask_id, vocab.mask_id]])
    slots = torch.tensor([[1, 1]])
    got = shifted.block_logits(shifted.encode_prefix([prefix]), block, slots)
    ids = torch.tensor([prefix.token_ids + block[0].tolist()])
    with torch.inference_mode():
        full = shifted.model(input_ids=on_device(ids)).logits
    torch.testing.assert_close(got[0].cpu(), full[0, 11:13].cpu(), atol=1e-5, rtol=0)


def test_command_line_options_fill_in_what_config_json_leaves_out(llada_folder, tmp_path, capsys):
    options = MaskedDLLMOptions(mask_token_id=7, block_size=4)
    opened = open_model(llada_folder, device=TEST_DEVICE, trust_remote_code=True, dllm_options=options)
    assert opened.vocab.mask_id == 7 and opened.block_size == 4
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST))
    argv = ["decide", str(request), "--model", str(llada_folder), "--trust-remote-code", "--device", TEST_DEVICE, "--json",
            "--mask-token-id", str(MASK_ID), "--block-size", "8", "--loader", "AutoModel"]
    assert cli.main(argv) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["model"] == f"masked-dllm:{llada_folder.name}"


def test_masked_dllm_options_for_another_kind_of_checkpoint_are_an_error(tmp_path):
    _write_config(tmp_path, model_type="bert", architectures=["BertForMaskedLM"])
    with pytest.raises(ModelLoadError, match="apply to masked-dllm checkpoints"):
        open_model(tmp_path, dllm_options=MaskedDLLMOptions(mask_token_id=3))


def test_a_missing_loader_names_the_flag(tmp_path):
    _write_config(tmp_path, model_type="llada", auto_map={"AutoConfig": "configuration_x.C"})
    with pytest.raises(ModelLoadError, match="--loader"):
        open_model(tmp_path, trust_remote_code=True)
