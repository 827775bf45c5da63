"""Checks every model backend must pass, shared by the backend tests: answers that do not depend on the batch,
and whole decisions through the command line.

The backend tests run on `TEST_DEVICE`, read from DECISION_ENGINE_TEST_DEVICE (default cpu); their modules
skip with `pytestmark = ON_TEST_DEVICE` where that device is not available. They need no conftest fixture,
so they also run under `pytest --noconftest` (the GPU machine lacks the store's and service's packages).
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from decision_engine import cli
from decision_engine.backends.protocol import PrefixInput
from decision_engine.rules import RuleSet
from decision_engine.validation import request_from_object
from decision_engine.values import value_problem


TEST_DEVICE = os.environ.get("DECISION_ENGINE_TEST_DEVICE", "cpu")
ON_TEST_DEVICE = pytest.mark.skipif(
    torch.device(TEST_DEVICE).type == "cuda" and not torch.cuda.is_available(),
    reason=f"DECISION_ENGINE_TEST_DEVICE={TEST_DEVICE}, but CUDA is not available on this machine",
)
if torch.device(TEST_DEVICE).type == "cuda":
    # the 1e-5 comparisons below are float32's: TF32 matrix products would round to about 1e-3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def on_device(*tensors: torch.Tensor):
    """The tensors moved to `TEST_DEVICE` (one tensor alone when one is given)."""
    moved = tuple(t.to(TEST_DEVICE) for t in tensors)
    return moved[0] if len(moved) == 1 else moved


def random_prefix(seed: int, length: int, vocab) -> PrefixInput:
    """A prefix of `length` tokens, [CLS] random tokens [SEP], the same for the same seed."""
    body = torch.randint(4, vocab.size, (length - 2,), generator=torch.Generator().manual_seed(seed)).tolist()
    ids = [vocab.cls_id, *body, vocab.sep_id]
    return PrefixInput(ids, [0] * len(ids))


def check_batch_padding_invariance(backend, short: PrefixInput, long: PrefixInput, select: bool = True) -> None:
    """Block logits of a short and a long prefix, each alone and batched together (and, with `select`,
    the short one picked out of a batched cache), agree within 1e-5."""
    vocab = backend.vocab
    mask, digit = vocab.mask_id, vocab.digit_ids[3]
    short_ids, short_slots = torch.tensor([[mask, digit, mask]]), torch.tensor([[1, 1, 2]])
    long_ids, long_slots = torch.tensor([[mask, mask, digit, mask, mask]]), torch.tensor([[1, 1, 1, 2, 3]])
    alone_short = backend.block_logits(backend.encode_prefix([short]), short_ids, short_slots)
    alone_long = backend.block_logits(backend.encode_prefix([long]), long_ids, long_slots)
    ids = torch.full((2, 5), vocab.pad_id, dtype=torch.long)
    slots = torch.zeros((2, 5), dtype=torch.long)
    ids[0, :3], slots[0, :3] = short_ids[0], short_slots[0]
    ids[1], slots[1] = long_ids[0], long_slots[0]
    batched = backend.block_logits(backend.encode_prefix([short, long]), ids, slots)
    batched, alone_short, alone_long = batched.cpu(), alone_short.cpu(), alone_long.cpu()
    torch.testing.assert_close(batched[0, :3], alone_short[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(batched[1], alone_long[0], atol=1e-5, rtol=0)
    if select:
        selected = backend.encode_prefix([long, short]).select([1])
        again = backend.block_logits(selected, short_ids, short_slots).cpu()
        torch.testing.assert_close(again, alone_short, atol=1e-5, rtol=0)


def check_decide_through_command_line(request: dict, model_arguments: list[str], mode: str, tmp_path, capsys) -> dict:
    """`decision-engine decide --json` on `request` in `mode` with `model_arguments` (--model ... and the
    like) on `TEST_DEVICE`: it succeeds, answers every question in order, schema-valid and keeping the
    rules. Returns the response."""
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    argv = ["decide", str(path), *model_arguments, "--device", TEST_DEVICE, "--mode", mode, "--json"]
    assert cli.main(argv) == 0
    response = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert response["mode"] == mode
    check_answers(request, response)
    return response


def check_answers(request: dict, response: dict) -> None:
    """The response answers every question of `request` in order, schema-valid and keeping its rules."""
    parsed = request_from_object(request)
    values = {a["id"]: a["value"] for a in response["answers"]}
    assert list(values) == [q.id for q in parsed.questions]
    for question in parsed.questions:
        assert value_problem(question.schema, values[question.id]) is None, (question.id, values[question.id])
    rules = RuleSet.compile([q.schema for q in parsed.questions], [q.id for q in parsed.questions], parsed.rules)
    assert rules.violations([values[q.id] for q in parsed.questions]) == []
