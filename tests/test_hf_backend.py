"""The Hugging Face masked-LM backend, driven by tiny randomly initialised models built here (never downloaded)."""

from __future__ import annotations

import functools
import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

transformers = pytest.importorskip("transformers")

from decision_engine.backends.hf_masked_lm import HFMaskedLMBackend  # noqa: E402
from decision_engine.backends.protocol import PrefixInput  # noqa: E402
from decision_engine.engine import DecisionEngine  # noqa: E402
from decision_engine.model.loader import ModelLoadError, base_model_dir  # noqa: E402
from decision_engine.models import open_model  # noqa: E402
from decision_engine.rules import RuleSet  # noqa: E402
from decision_engine.validation import request_from_object  # noqa: E402
from decision_engine.values import value_problem  # noqa: E402

MAX_POSITIONS = 512


@functools.cache
def _tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base_model_dir()), local_files_only=True)


def _bert(tok):
    config = transformers.BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_POSITIONS,
        pad_token_id=tok.pad_token_id,
    )
    return transformers.BertForMaskedLM(config)


def _modernbert(tok):
    if not hasattr(transformers, "ModernBertConfig"):
        pytest.skip(f"transformers {transformers.__version__} has no ModernBERT")
    config = transformers.ModernBertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_POSITIONS,
        pad_token_id=tok.pad_token_id,
        mask_token_id=tok.mask_token_id,
        cls_token_id=tok.cls_token_id,
        sep_token_id=tok.sep_token_id,
        bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id,
        global_attn_every_n_layers=2,  # one global and one sliding-window layer
        local_attention=64,
    )
    return transformers.ModernBertForMaskedLM(config)


BUILDERS = {"bert": _bert, "modernbert": _modernbert}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def hf_folder(request, tmp_path_factory):
    tok = _tokenizer()
    torch.manual_seed(0)
    model = BUILDERS[request.param](tok).eval()
    folder = tmp_path_factory.mktemp(f"tiny-{request.param}")
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def backend(hf_folder):
    torch.manual_seed(0)
    return open_model(hf_folder)


def _request(text: str, mode: str = "joint") -> dict:
    return {
        "document": {"text": text},
        "questions": [
            {"id": "kind", "text": "Is the agreement mutual or one-way?",
             "schema": {"type": "string", "enum": ["mutual", "one-way", "unclear"]}},
            {"id": "signed", "text": "Was the agreement signed by both parties?", "schema": {"type": "boolean"}},
            {"id": "delta", "text": "By how many days was the notice late (negative if early)?",
             "schema": {"type": "integer", "minimum": -40, "maximum": 25}},
            {"id": "effective", "text": "What is the effective date?",
             "schema": {"type": "string", "format": "date",
                        "formatMinimum": "2020-01-01", "formatMaximum": "2026-12-31"}},
        ],
        "rules": [
            {"if": {"signed": [False]}, "then": {"kind": ["unclear"]}},
            {"if": {"kind": ["one-way"]}, "then": {"delta": [-3, 0, 7]}},
        ],
        "mode": mode,
    }


DOCUMENT = (
    "MUTUAL NON-DISCLOSURE AGREEMENT between Lumen Harbor Robotics Ltd and Stillwater Agritech B.V. "
    "This Agreement takes effect on 2024-02-15, the date on which it has been signed by both parties. "
    "Notice was given 12 days late."
)


def _check_response(raw: dict, response, mode: str) -> None:
    request = request_from_object(raw)
    assert response.mode == mode
    assert response.steps >= 1
    assert [a.id for a in response.answers] == [q.id for q in request.questions]
    values = []
    for question, answer in zip(request.questions, response.answers):
        assert value_problem(question.schema, answer.value) is None, (question.id, answer.value)
        assert 0 <= answer.step <= response.steps, (question.id, answer.step, response.steps)
        assert 0.0 <= answer.confidence <= 1.0, (question.id, answer.confidence)
        values.append(answer.value)
    rules = RuleSet.compile([q.schema for q in request.questions], [q.id for q in request.questions], request.rules)
    assert rules.violations(values) == []


def test_open_model_returns_hf_backend(backend, hf_folder):
    assert isinstance(backend, HFMaskedLMBackend)
    assert backend.name.startswith("hf:")
    assert backend.name == f"hf:{hf_folder.name}"
    tok = _tokenizer()
    assert backend.vocab.mask_id == tok.mask_token_id
    assert backend.vocab.pad_id == tok.pad_token_id
    assert backend.max_positions == MAX_POSITIONS


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_decide_all_answer_types_with_rules(backend, mode):
    raw = _request(DOCUMENT, mode)
    response = DecisionEngine(backend).decide(request_from_object(raw), mode)
    _check_response(raw, response, mode)
    assert response.model == backend.name


def _random_prefix(generator: torch.Generator, length: int, vocab) -> PrefixInput:
    body = torch.randint(1000, 29000, (length - 2,), generator=generator).tolist()
    ids = [vocab.cls_id, *body, vocab.sep_id]
    return PrefixInput(ids, [0] * len(ids))


def test_block_logits_do_not_depend_on_batch_padding(backend):
    vocab = backend.vocab
    generator = torch.Generator().manual_seed(1)
    short = _random_prefix(generator, 9, vocab)
    long = _random_prefix(generator, 90, vocab)  # longer than the ModernBERT sliding window
    mask = vocab.mask_id
    digit = vocab.digit_ids[3]

    # Row 0's block has 3 real positions, row 1's has 5; batched, row 0 gets 2 block-padding positions.
    short_ids = torch.tensor([[mask, digit, mask]])
    short_slots = torch.tensor([[1, 1, 2]])
    long_ids = torch.tensor([[mask, mask, digit, mask, mask]])
    long_slots = torch.tensor([[1, 1, 1, 2, 3]])

    alone_short = backend.block_logits(backend.encode_prefix([short]), short_ids, short_slots)
    alone_long = backend.block_logits(backend.encode_prefix([long]), long_ids, long_slots)

    for order in ([short, long], [long, short]):
        cache = backend.encode_prefix(order)
        ids = torch.full((2, 5), vocab.pad_id, dtype=torch.long)
        slots = torch.zeros((2, 5), dtype=torch.long)
        s, lg = (0, 1) if order[0] is short else (1, 0)
        ids[s, :3], slots[s, :3] = short_ids[0], short_slots[0]
        ids[lg], slots[lg] = long_ids[0], long_slots[0]
        batched = backend.block_logits(cache, ids, slots)
        assert batched.shape[:2] == (2, 5)
        torch.testing.assert_close(batched[s, :3], alone_short[0], atol=1e-4, rtol=0)
        torch.testing.assert_close(batched[lg], alone_long[0], atol=1e-4, rtol=0)

    # Selecting rows out of a batched cache gives the same as encoding them alone.
    cache = backend.encode_prefix([long, short]).select([1])
    torch.testing.assert_close(backend.block_logits(cache, short_ids, short_slots), alone_short, atol=1e-4, rtol=0)


def test_long_document_fits_positions(backend, monkeypatch):
    words = "The Receiving Party shall protect Confidential Information with reasonable care. "
    text = (words * (20_000 // len(words) + 1))[:20_000]
    assert len(text) == 20_000
    widths = []
    real = backend.block_logits

    def spy(cache, block_ids, block_slots, columns=None):
        widths.append(int(cache.lengths.max()) + block_ids.shape[1])
        return real(cache, block_ids, block_slots, columns)

    monkeypatch.setattr(backend, "block_logits", spy)
    raw = _request(text, "joint")
    response = DecisionEngine(backend).decide(request_from_object(raw), "joint")
    _check_response(raw, response, "joint")
    assert widths and max(widths) <= backend.max_positions
    assert max(widths) >= backend.max_positions - 8  # the document does fill the context budget


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "no-such-architecture", "hidden_size": 8},
        {"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": 30522},  # no weights, no tokenizer
        {"hello": "world"},
    ],
    ids=["unknown-type", "config-only", "no-model-type"],
)
def test_unloadable_folder_raises_model_load_error(tmp_path, config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError):
        open_model(tmp_path)


@pytest.fixture(scope="module")
def no_unused_backend(tmp_path_factory):
    """A tiny BERT whose WordPiece vocabulary lacks the [unusedK] tokens (as RoBERTa-style or ModernBERT
    tokenizers do), so the question markers fall back to the multi-token text "question k:"."""
    lines = (base_model_dir() / "vocab.txt").read_text().splitlines()
    words = [w for w in lines if not w.startswith("[unused")]
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    assert "[unused1]" not in tok.get_vocab()
    torch.manual_seed(0)
    model = _bert(tok).eval()
    folder = tmp_path_factory.mktemp("tiny-bert-no-unused")
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return open_model(folder)


def test_long_document_fits_positions_with_multi_token_markers(no_unused_backend):
    backend = no_unused_backend
    assert all(len(m) > 1 for m in backend.vocab.marker_ids)
    raw = _request("The Receiving Party shall protect Confidential Information. " * 400, "joint")
    response = DecisionEngine(backend).decide(request_from_object(raw), "joint")
    _check_response(raw, response, "joint")
