"""The diffusion-gemma backend on a tiny random DiffusionGemma built here (never downloaded), opened through --model."""

from __future__ import annotations

import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
if not hasattr(transformers, "DiffusionGemmaForBlockDiffusion"):
    pytest.skip(f"transformers {transformers.__version__} has no DiffusionGemma", allow_module_level=True)

from backend_checks import (  # noqa: E402
    ON_TEST_DEVICE,
    TEST_DEVICE,
    check_answers,
    check_batch_padding_invariance,
    on_device,
    random_prefix,
)
from tiny_diffusion_gemma import SLIDING_WINDOW, save_tiny_diffusion_gemma  # noqa: E402

from decision_engine import cli  # noqa: E402
from decision_engine.backends.diffusion_gemma import DiffusionGemmaBackend  # noqa: E402
from decision_engine.engine import DecisionEngine  # noqa: E402
from decision_engine.model.loader import ModelLoadError  # noqa: E402
from decision_engine.models import open_model  # noqa: E402
from decision_engine.validation import request_from_object  # noqa: E402

pytestmark = ON_TEST_DEVICE

DOCUMENT = (
    "Mutual non-disclosure agreement between Lumen Harbor Robotics and Stillwater Agritech. "
    "This agreement takes effect on 2024-02-15, the date on which it was signed by both parties. "
    "Notice was given 12 days late."
)
QUESTIONS = [
    {"id": "kind", "text": "Is the agreement mutual or one-way?",
     "schema": {"type": "string", "enum": ["mutual", "one-way", "unclear"]}},
    {"id": "signed", "text": "Was the agreement signed by both parties?", "schema": {"type": "boolean"}},
    {"id": "delta", "text": "By how many days was the notice late (negative if early)?",
     "schema": {"type": "integer", "minimum": -40, "maximum": 25}},
    {"id": "effective", "text": "What is the effective date?",
     "schema": {"type": "string", "format": "date", "formatMinimum": "2020-01-01", "formatMaximum": "2026-12-31"}},
]
RULES = [
    {"if": {"signed": [False]}, "then": {"kind": ["unclear"]}},
    {"if": {"kind": ["one-way"]}, "then": {"delta": [-3, 0, 7]}},
]


def _request(text: str = DOCUMENT, questions=QUESTIONS, mode: str = "joint") -> dict:
    return {"document": {"text": text}, "questions": questions, "rules": RULES if questions is QUESTIONS else [],
            "mode": mode}


@pytest.fixture(scope="module")
def gemma_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-diffusion-gemma")
    save_tiny_diffusion_gemma(folder, [DOCUMENT, json.dumps(QUESTIONS)])
    return folder


@pytest.fixture(scope="module")
def backend(gemma_folder):
    return open_model(gemma_folder, device=TEST_DEVICE)


def _check(raw: dict, response: dict) -> None:
    check_answers(raw, response)


def test_folder_opens_as_diffusion_gemma(backend, gemma_folder):
    assert isinstance(backend, DiffusionGemmaBackend)
    assert backend.name == f"diffusion-gemma:{gemma_folder.name}"
    assert (backend.vocab.pad_id, backend.vocab.cls_id, backend.vocab.sep_id) == (0, 2, 1)
    assert backend.max_positions == 1024


def test_older_transformers_gives_a_clear_error(gemma_folder, monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["transformers"], "__version__", "5.10.2")  # the module the backend imports
    with pytest.raises(ModelLoadError, match=r"transformers >= 5\.11"):
        open_model(gemma_folder)


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_decide_through_the_command_line(gemma_folder, tmp_path, capsys, mode):
    raw = _request(mode=mode)
    request = tmp_path / "request.json"
    request.write_text(json.dumps(raw))
    argv = ["decide", str(request), "--model", str(gemma_folder), "--device", TEST_DEVICE, "--mode", mode, "--json"]
    assert cli.main(argv) == 0
    response = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert response["mode"] == mode
    assert response["model"] == f"diffusion-gemma:{gemma_folder.name}"
    _check(raw, response)


def test_block_logits_do_not_depend_on_batch_padding(backend):
    check_batch_padding_invariance(backend, random_prefix(1, 9, backend.vocab), random_prefix(2, 5 * SLIDING_WINDOW, backend.vocab))


def test_cached_steps_equal_a_full_forward(backend):
    """Two denoising steps over the encoded prefix (the second self-conditioned on the first) against the model's
    own forward over prompt and canvas at once."""
    vocab = backend.vocab
    prefix = random_prefix(3, 3 * SLIDING_WINDOW, vocab)
    block = torch.tensor([[vocab.mask_id, vocab.digit_ids[1], vocab.mask_id, vocab.mask_id]])
    slots = torch.tensor([[1, 1, 1, 2]])
    cache = backend.encode_prefix([prefix])
    first = backend.block_logits(cache, block, slots)
    second = backend.block_logits(cache, block, slots)
    canvas = torch.where(block == vocab.mask_id, torch.tensor([[a for a in cache_noise(backend, 4)]]), block)
    n = len(prefix.token_ids)
    ids = torch.tensor([prefix.token_ids])
    ids, positions, canvas, canvas_positions = on_device(ids, torch.arange(n)[None], canvas, torch.arange(n, n + 4)[None])
    args = dict(input_ids=ids, attention_mask=torch.ones_like(ids), position_ids=positions,
                decoder_input_ids=canvas, decoder_position_ids=canvas_positions)
    with torch.inference_mode():
        full_first = backend.model(**args).logits
        full_second = backend.model(**args, self_conditioning_logits=full_first).logits
    torch.testing.assert_close(first.cpu(), full_first.cpu(), atol=1e-5, rtol=0)
    torch.testing.assert_close(second.cpu(), full_second.cpu(), atol=1e-5, rtol=0)
    assert not torch.allclose(first, second)  # the carried self-conditioning signal does change the logits


def cache_noise(backend, length: int) -> list[int]:
    from decision_engine.backends.diffusion_gemma import noise_tokens

    return noise_tokens(length, backend.model.config.text_config.vocab_size, "cpu").tolist()


def test_answers_do_not_depend_on_the_batch(backend):
    """A request decided alone and beside another with a document far longer than the sliding window."""
    engine = DecisionEngine(backend)
    for mode in ("joint", "independent"):
        short = request_from_object(_request("The agreement is mutual.", mode=mode))
        long = request_from_object(_request(DOCUMENT * 3, QUESTIONS[1:3], mode=mode))
        alone = engine.decide(short, mode)
        together = engine.decide_many([long, short])[1]
        assert [(a.value, round(a.confidence, 4)) for a in together.answers] == [
            (a.value, round(a.confidence, 4)) for a in alone.answers
        ], mode


CHAT_TEMPLATE = "{% for m in messages %}<start_of_turn>user {{ m['content'] }}<end_of_turn>{% endfor %}<start_of_turn>model"


@pytest.fixture(scope="module")
def chat_folder(gemma_folder, tmp_path_factory):
    import shutil

    folder = tmp_path_factory.mktemp("tiny-diffusion-gemma-chat")
    for file in gemma_folder.iterdir():
        shutil.copy(file, folder / file.name)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(str(folder))
    return folder


def test_a_tokenizer_without_a_chat_template_gets_the_plain_layout(backend):
    assert backend.chat_head == [] and backend.chat_tail == []


def test_the_prompt_is_the_model_chat_format_where_it_has_one(chat_folder, backend, tmp_path, capsys):
    from decision_engine.backends.diffusion_gemma import framed

    chat = open_model(chat_folder, device=TEST_DEVICE)
    assert chat.chat_head and chat.chat_tail
    assert chat.max_positions == backend.max_positions - len(chat.chat_head) - len(chat.chat_tail)
    prefix = random_prefix(4, 12, chat.vocab)
    block = torch.tensor([[chat.vocab.mask_id, chat.vocab.digit_ids[2]]])
    slots = torch.tensor([[1, 1]])
    inside = chat.block_logits(chat.encode_prefix([prefix]), block, slots)
    by_hand = backend.block_logits(backend.encode_prefix([framed(prefix, chat.chat_head, chat.chat_tail)]), block, slots)
    plain = backend.block_logits(backend.encode_prefix([prefix]), block, slots)
    torch.testing.assert_close(inside.cpu(), by_hand.cpu(), atol=1e-5, rtol=0)
    assert not torch.allclose(inside, plain)  # the frame reaches the model
    raw = _request()
    request = tmp_path / "request.json"
    request.write_text(json.dumps(raw))
    assert cli.main(["decide", str(request), "--model", str(chat_folder), "--device", TEST_DEVICE, "--json"]) == 0
    _check(raw, json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
