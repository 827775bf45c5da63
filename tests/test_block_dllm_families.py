"""Block-cached diffusion LLMs with LLaDA2's and Fast-dLLM v2's interfaces, on tiny remote-code stand-ins
built here (tests/remote_code), opened through --model.

Each stand-in is saved the way its family's checkpoints are: an auto_map whose AutoModel is the bare
backbone and whose AutoModelForCausalLM is the LM, and config.json / tokenizer fields as the family
names them (LLaDA2: the tokenizer declares the mask token, no block size anywhere; Fast-dLLM v2:
`bd_size`, a Qwen-like tokenizer with no bos and an undeclared `|<MASK>|`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
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
from test_masked_dllm import DOCUMENT, REQUEST, _write_config  # noqa: E402
from tiny_tokenizers import word_level_tokenizer  # noqa: E402

from decision_engine.backends.block_dllm import BlockCachedDLLMBackend, additive, block_causal_mask  # noqa: E402
from decision_engine.backends.block_dllm_rows import RowCachedDLLMBackend  # noqa: E402
from decision_engine.backends.masked_dllm import MaskedDLLMOptions  # noqa: E402
from decision_engine.model.loader import ModelLoadError  # noqa: E402
from decision_engine.models import open_model  # noqa: E402

pytestmark = ON_TEST_DEVICE

REMOTE_CODE = Path(__file__).parent / "remote_code"
BLOCK = 4
TEXTS = [DOCUMENT, json.dumps(REQUEST)]


def llada2_tokenizer(mask: bool = True):
    """bos/eos and a declared mask token `<|mask|>`, as LLaDA2's tokenizer declares one."""
    specials = ["[UNK]", "<|startoftext|>", "<|endoftext|>", *(["<|mask|>"] if mask else [])]
    declared = {"mask_token": "<|mask|>"} if mask else {}
    return word_level_tokenizer(TEXTS, specials, bos_token="<|startoftext|>", eos_token="<|endoftext|>",
                                unk_token="[UNK]", **declared)


def fast_dllm_tokenizer(mask: bool = True):
    """Like Qwen2.5's: no bos, `<|im_end|>` ends, `<|endoftext|>` pads; `|<MASK>|` added but not declared the mask."""
    specials = ["[UNK]", "<|endoftext|>", "<|im_end|>", *(["|<MASK>|"] if mask else [])]
    return word_level_tokenizer(TEXTS, specials, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="[UNK]",
                                additional_special_tokens=specials[3:])


@dataclass(frozen=True)
class StandIn:
    """A family's stand-in remote code and how its checkpoints' config.json and tokenizer look."""

    stem: str  # tests/remote_code/{configuration,modeling}_{stem}.py
    model_type: str
    config_class: str
    backbone_class: str  # auto_map's AutoModel
    lm_class: str  # auto_map's AutoModelForCausalLM
    tokenizer: Callable  # tokenizer(mask=True)
    mask_token: str
    block_field: str | None  # where config.json gives the block size; None: nowhere, --block-size gives it
    backend_class: type


LLADA2 = StandIn("llada2_standin", "llada2_moe", "LLaDA2StandInConfig", "LLaDA2StandInModel", "LLaDA2StandInModelLM",
                 llada2_tokenizer, "<|mask|>", None, BlockCachedDLLMBackend)
FAST_DLLM = StandIn("fast_dllm_standin", "Fast_dLLM_Qwen", "FastDLLMStandInConfig", "FastDLLMStandInModel",
                    "FastDLLMStandInForCausalLM", fast_dllm_tokenizer, "|<MASK>|", "bd_size", RowCachedDLLMBackend)


def _save(folder: Path, family: StandIn, mask: bool = True, block: bool = True) -> Path:
    """A checkpoint folder of the family's stand-in with random weights; without `mask` its tokenizer
    has no mask token, without `block` its config.json no block size."""
    folder.mkdir(exist_ok=True)
    for file in REMOTE_CODE.glob(f"*_{family.stem}.py"):
        shutil.copy(file, folder / file.name)
    tok = family.tokenizer(mask=mask)
    tok.save_pretrained(str(folder))
    ids = {f"{name}_token_id": getattr(tok, f"{name}_token_id") for name in ("bos", "eos", "pad")}
    ids = {key: value for key, value in ids.items() if value is not None}
    _write_config(folder, model_type=family.model_type, vocab_size=len(tok), **ids,
                  auto_map={"AutoConfig": f"configuration_{family.stem}.{family.config_class}",
                            "AutoModel": f"modeling_{family.stem}.{family.backbone_class}",
                            "AutoModelForCausalLM": f"modeling_{family.stem}.{family.lm_class}"},
                  **({family.block_field: BLOCK} if family.block_field else {}))
    made = transformers.AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(made, trust_remote_code=True).save_pretrained(str(folder))
    if not block and family.block_field:
        config = json.loads((folder / "config.json").read_text())
        config.pop(family.block_field)
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def _options(family: StandIn) -> MaskedDLLMOptions:
    """What the command line must add for the family: the block size where config.json gives none."""
    return MaskedDLLMOptions(block_size=None if family.block_field else BLOCK)


def _block_flags(family: StandIn) -> list[str]:
    return [] if family.block_field else ["--block-size", str(BLOCK)]


@pytest.fixture(scope="module", params=[LLADA2, FAST_DLLM], ids=["llada2", "fast-dllm-v2"])
def family(request) -> StandIn:
    return request.param


@pytest.fixture(scope="module")
def folder(family, tmp_path_factory) -> Path:
    return _save(tmp_path_factory.mktemp(f"tiny-{family.stem}"), family)


@pytest.fixture(scope="module")
def backend(family, folder):
    return open_model(folder, device=TEST_DEVICE, trust_remote_code=True, dllm_options=_options(family))


def _full_forward_llada2(backend, prefix_ids: list[int], block: torch.Tensor) -> torch.Tensor:
    """One forward over prefix and block with the block-diffusion mask, given as LLaDA2 takes it."""
    n, length = len(prefix_ids), block.shape[1]
    positions = torch.arange(n + length)[None]
    keep = torch.zeros((1, 1, n + length, n + length), dtype=torch.bool)
    keep[:, :, :n, :n] = block_causal_mask(positions[:, :n], torch.ones((1, n), dtype=torch.bool), BLOCK)
    keep[:, :, n:, :] = True  # the answer block reads the whole prefix and itself
    ids, keep, positions = on_device(torch.tensor([prefix_ids + block[0].tolist()]), keep, positions)
    with torch.inference_mode():
        mask = additive(keep, backend.model.dtype)
        logits = backend.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    return logits[:, n:]


def _full_forward_fast_dllm(backend, prefix_ids: list[int], block: torch.Tensor) -> torch.Tensor:
    """One forward over a block-aligned prefix and a block no longer than one model block, under the
    model's own block-causal mask (the block-diffusion mask there), read one position back."""
    n, length = len(prefix_ids), block.shape[1]
    assert n % BLOCK == 0 and length <= BLOCK
    ids, positions = on_device(torch.tensor([prefix_ids + block[0].tolist()]), torch.arange(n + length)[None])
    with torch.inference_mode():
        logits = backend.model(input_ids=ids, position_ids=positions, block_size=BLOCK).logits
    return logits[:, n - 1 : n + length - 1]


FULL_FORWARD = {LLADA2.stem: (_full_forward_llada2, 11), FAST_DLLM.stem: (_full_forward_fast_dllm, 12)}


def _cache_tensors(cache) -> list[torch.Tensor]:
    """Copies of every key and value tensor a prefix cache holds (one model cache, or one per row)."""
    caches = cache.kv if isinstance(cache.kv, list) else [cache.kv]
    return [t.clone() for kv in caches for layer in kv.layers for t in (layer.keys, layer.values)]


def test_folder_opens_as_a_block_cached_model_with_its_lm_head(backend, family, folder):
    assert type(backend) is family.backend_class
    assert backend.name == f"block-dllm:{folder.name}"
    assert backend.block_size == BLOCK
    assert backend.vocab.mask_id == backend.vocab.tokenizer.get_vocab()[family.mask_token]
    assert type(backend.model).__name__ == family.lm_class  # not auto_map's AutoModel, the bare backbone


def test_the_cached_path_equals_a_full_forward(backend, family):
    """Prefix read block-causally into the cache, then the block over it, against one forward over both."""
    full_forward, prefix_length = FULL_FORWARD[family.stem]
    vocab = backend.vocab
    prefix = random_prefix(3, prefix_length, vocab)
    block = torch.tensor([[vocab.mask_id, vocab.digit_ids[1], vocab.mask_id]])
    cached = backend.block_logits(backend.encode_prefix([prefix]), block, torch.tensor([[1, 1, 2]]))
    full = full_forward(backend, prefix.token_ids, block)
    torch.testing.assert_close(cached.cpu(), full.cpu(), atol=1e-5, rtol=0)


def test_the_answer_block_reads_itself_whole_past_the_model_blocks(backend):
    """A block longer than the model's, after an unaligned prefix, is still one bidirectional block:
    its second position's logits (read from the first token under Fast-dLLM's shift) follow its last token."""
    vocab = backend.vocab
    cache = backend.encode_prefix([random_prefix(5, 10, vocab)])
    block = torch.tensor([[vocab.mask_id] * 4 + [vocab.digit_ids[3]]])
    changed = block.clone()
    changed[0, -1] = vocab.digit_ids[7]
    slots = torch.ones_like(block)
    second, second_changed = (backend.block_logits(cache, ids, slots)[0, 1] for ids in (block, changed))
    assert not torch.allclose(second, second_changed)


def test_a_denoising_step_leaves_the_cache_as_it_was(backend):
    vocab = backend.vocab
    block = torch.tensor([[vocab.mask_id, vocab.digit_ids[2], vocab.mask_id, vocab.mask_id]])
    slots = torch.tensor([[1, 1, 2, 2]])
    cache = backend.encode_prefix([random_prefix(4, 10, vocab)])
    before = _cache_tensors(cache)
    first = backend.block_logits(cache, block, slots)
    after = _cache_tensors(cache)
    assert [t.shape for t in after] == [t.shape for t in before]
    for was, now in zip(before, after):
        torch.testing.assert_close(now.cpu(), was.cpu(), atol=0, rtol=0)
    torch.testing.assert_close(backend.block_logits(cache, block, slots).cpu(), first.cpu(), atol=0, rtol=0)


def test_block_logits_do_not_depend_on_batch_padding(backend):
    check_batch_padding_invariance(backend, random_prefix(1, 6, backend.vocab), random_prefix(2, 23, backend.vocab))


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_decide_through_the_command_line(family, folder, tmp_path, capsys, mode):
    arguments = ["--model", str(folder), "--trust-remote-code", *_block_flags(family)]
    response = check_decide_through_command_line(REQUEST, arguments, mode, tmp_path, capsys)
    assert response["model"] == f"block-dllm:{folder.name}"


def test_a_missing_block_size_is_named_with_the_flag(family, tmp_path):
    folder = _save(tmp_path / "checkpoint", family, block=False)
    with pytest.raises(ModelLoadError, match="--block-size") as raised:
        open_model(folder, trust_remote_code=True)
    assert (family.block_field or "block_size") in str(raised.value)


def test_a_missing_mask_token_is_named_with_the_flag(family, tmp_path):
    folder = _save(tmp_path / "checkpoint", family, mask=False)
    with pytest.raises(ModelLoadError, match="--mask-token-id"):
        open_model(folder, trust_remote_code=True, dllm_options=_options(family))


def test_explicit_options_fill_in_what_the_checkpoint_leaves_out(family, tmp_path, capsys):
    folder = _save(tmp_path / "checkpoint", family, mask=False, block=False)
    options = MaskedDLLMOptions(mask_token_id=0, block_size=BLOCK + 1)
    opened = open_model(folder, device=TEST_DEVICE, trust_remote_code=True, dllm_options=options)
    assert (opened.vocab.mask_id, opened.block_size) == (0, BLOCK + 1)
    arguments = ["--model", str(folder), "--trust-remote-code", "--mask-token-id", "0", "--block-size", str(BLOCK)]
    check_decide_through_command_line(REQUEST, arguments, "joint", tmp_path, capsys)


def test_shifted_logits_cannot_be_turned_off_for_fast_dllm(tmp_path):
    folder = _save(tmp_path / "checkpoint", FAST_DLLM)
    with pytest.raises(ModelLoadError, match="shift_logits"):
        RowCachedDLLMBackend(folder, TEST_DEVICE, trust_remote_code=True, options=MaskedDLLMOptions(shift_logits=False))
