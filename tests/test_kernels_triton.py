"""The Triton kernels agree with their PyTorch references, and the model decides the same through them.

On CUDA every case runs directly, plus the real sizes. On CPU the cases run under the Triton
interpreter, which `TRITON_INTERPRET=1` selects only if set before triton is imported, so
`test_cases_under_the_interpreter` reruns this file in a fresh interpreter process with it set.

Tolerances: float32 confidence atol 1e-6 / rtol 1e-5 and tokens exact; float32 attention
atol 1e-5 / rtol 1e-4; half-precision attention (against the float32 reference of the same
inputs) atol 2e-3 / rtol 2e-3 for float16, 1e-2 / 1e-2 for bfloat16.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from decision_engine.kernels.block_attention import block_attention_reference, block_attention_triton, pack_prefix
from decision_engine.kernels.constrained_confidence import (
    allowed_bits,
    allowed_mask,
    constrained_confidence,
    constrained_confidence_eager,
    constrained_confidence_masked_reference,
    constrained_confidence_reference,
    pack_mask,
    unpack_mask,
)
from decision_engine.kernels.dispatch import ENV

CUDA = torch.cuda.is_available()
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
HAS_TRITON = importlib.util.find_spec("triton") is not None
DEVICE = "cpu" if INTERPRETED or not CUDA else "cuda"

kernel_case = pytest.mark.skipif(
    not HAS_TRITON or not (CUDA or INTERPRETED),
    reason="runs on CUDA, or on CPU under TRITON_INTERPRET=1 (test_cases_under_the_interpreter does that)",
)
cuda_only = pytest.mark.skipif(not HAS_TRITON or not CUDA or INTERPRETED, reason="real sizes run on CUDA only")

CONFIDENCE_TOL = dict(atol=1e-6, rtol=1e-5)
ATTENTION_TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-4),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
    torch.bfloat16: dict(atol=1e-2, rtol=1e-2),
}


# ---------------------------------------------------------------- the interpreter run


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.skipif(CUDA or INTERPRETED, reason="the cases run directly here")
def test_cases_under_the_interpreter():
    root = Path(__file__).resolve().parent.parent
    env = os.environ | {"TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__).resolve())]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout[-3000:]


# ---------------------------------------------------------------- packed masks (plain PyTorch, always run)


def test_packed_mask_round_trips_every_bit():
    generator = torch.Generator().manual_seed(0)
    mask = torch.rand(5, 97, generator=generator) < 0.5
    mask[0, 31] = mask[1, 63] = mask[2, 96] = True  # the sign bit of a word, the last token
    bits = pack_mask(mask)
    assert bits.dtype == torch.int32 and bits.shape == (5, 4)
    assert torch.equal(unpack_mask(bits, 97), mask)


def test_eager_and_masked_reference_equal_the_reference():
    logits, allowed = _confidence_case(4, 500, seed=1)
    expected = constrained_confidence_reference(logits, allowed)
    eager = constrained_confidence_eager(logits, allowed_mask(allowed, 500))
    masked = constrained_confidence_masked_reference(logits, allowed_bits(allowed, 500))
    for confidence, token in (eager, masked):
        torch.testing.assert_close(confidence, expected[0], **CONFIDENCE_TOL)
        assert torch.equal(token, expected[1])


# ---------------------------------------------------------------- constrained confidence


def _confidence_case(rows: int, vocab: int, seed: int, dtype=torch.float32, most: int = 40):
    """Random logits (P, V) and, per row, 1 to `most` distinct allowed ids (P, A) padded with -1."""
    generator = torch.Generator().manual_seed(seed)
    logits = (torch.randn(rows, vocab, generator=generator) * 4).to(dtype)
    allowed = torch.full((rows, most), -1, dtype=torch.long)
    for row in range(rows):
        count = int(torch.randint(1, most + 1, (1,), generator=generator))
        allowed[row, :count] = torch.randperm(vocab, generator=generator)[:count]
    return logits, allowed


def _check_confidence(logits: torch.Tensor, allowed: torch.Tensor) -> None:
    vocab = logits.shape[1]
    bits = allowed_bits(allowed, vocab)
    confidence, token = constrained_confidence(logits.to(DEVICE), bits.to(DEVICE))
    expected_confidence, expected_token = constrained_confidence_masked_reference(logits, bits)
    torch.testing.assert_close(confidence.cpu(), expected_confidence, **CONFIDENCE_TOL)
    assert torch.equal(token.cpu(), expected_token)
    by_ids, token_by_ids = constrained_confidence_reference(logits, allowed)  # the denoiser's definition
    torch.testing.assert_close(confidence.cpu(), by_ids, **CONFIDENCE_TOL)
    assert torch.equal(token.cpu(), token_by_ids)


@kernel_case
@pytest.mark.parametrize(
    ("rows", "vocab", "dtype"),
    [(3, 1000, torch.float32), (2, 37, torch.float32), (4, 4097, torch.float32), (2, 30522, torch.float32),
     (3, 1000, torch.float16)],
    ids=["P3-V1000", "P2-V37", "P4-V4097", "P2-V30522", "P3-V1000-fp16"],
)  # fmt: skip
def test_constrained_confidence_matches_reference(rows, vocab, dtype):
    logits, allowed = _confidence_case(rows, vocab, seed=rows * vocab, dtype=dtype)
    _check_confidence(logits, allowed)


@kernel_case
def test_constrained_confidence_single_allowed_token():
    logits, _ = _confidence_case(3, 1000, seed=7)
    allowed = torch.tensor([[5], [999], [0]])
    confidence, token = constrained_confidence(logits.to(DEVICE), allowed_bits(allowed, 1000).to(DEVICE))
    assert torch.equal(confidence.cpu(), torch.ones(3))
    assert token.cpu().tolist() == [5, 999, 0]


@kernel_case
@pytest.mark.parametrize("vocab", [4097, 30522], ids=["V4097", "V30522"])
def test_constrained_confidence_allowed_only_in_the_last_tile(vocab):
    logits, _ = _confidence_case(2, vocab, seed=vocab)
    logits[:, : vocab - 3] += 50  # the disallowed tokens are far likelier
    allowed = torch.tensor([[vocab - 1, -1], [vocab - 3, vocab - 2]])
    _check_confidence(logits, allowed)


@kernel_case
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's numpy notes the intended overflow
def test_constrained_confidence_infinite_and_huge_logits():
    logits = torch.zeros(4, 300)
    allowed = torch.tensor([[1, 2, 3], [10, 20, 30], [100, 200, -1], [7, 8, -1]])
    logits[0, 1:4] = torch.tensor([float("-inf"), 2.0, 1.0])  # an allowed -inf token has probability 0
    logits[1, [10, 20, 30]] = torch.tensor([3e38, -3e38, 3e38])  # ties go to the lowest id
    logits[1, 0] = float("inf")  # a disallowed +inf is ignored
    logits[2, [100, 200]] = torch.tensor([1e30, 1e30 - 1e24])
    logits[3, 7], logits[3, 8] = -1e30, -1e30 + 1e24
    bits = allowed_bits(allowed, 300)
    confidence, token = constrained_confidence(logits.to(DEVICE), bits.to(DEVICE))
    expected_confidence, expected_token = constrained_confidence_masked_reference(logits, bits)
    torch.testing.assert_close(confidence.cpu(), expected_confidence, **CONFIDENCE_TOL)
    assert token.cpu().tolist() == expected_token.tolist() == [2, 10, 100, 8]


@kernel_case
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's numpy notes the intended 0 / 0
def test_constrained_confidence_row_without_allowed_tokens_is_nan():
    logits, _ = _confidence_case(2, 100, seed=3)
    bits = allowed_bits(torch.tensor([[4], [-1]]), 100)
    confidence, token = constrained_confidence(logits.to(DEVICE), bits.to(DEVICE))
    assert confidence[0].item() == 1.0 and torch.isnan(confidence[1]).item()
    assert token.cpu().tolist() == [4, -1]


@cuda_only
@pytest.mark.parametrize(
    ("rows", "vocab", "dtype"),
    [(2048, 30522, torch.float32), (64, 30522, torch.bfloat16), (1, 30522, torch.float32)],
    ids=["P2048-V30522", "P64-V30522-bf16", "P1-V30522"],
)
def test_constrained_confidence_real_sizes(rows, vocab, dtype):
    logits, allowed = _confidence_case(rows, vocab, seed=rows, dtype=dtype, most=300)
    _check_confidence(logits, allowed)


def test_constrained_confidence_rejects_a_wrong_mask():
    logits = torch.zeros(2, 100)
    with pytest.raises(ValueError, match="packed mask"):
        constrained_confidence(logits, torch.zeros(2, 3, dtype=torch.int32))  # needs 4 words
    with pytest.raises(ValueError, match="packed mask"):
        constrained_confidence(logits, torch.zeros(2, 4, dtype=torch.int64))


# ---------------------------------------------------------------- block attention


def _attention_case(batch, heads, prefix, block, dim, dtype=torch.float32, seed=0):
    """Head-split (B, H, L, D) views like the model's, prefixes of different lengths (one of length 1
    when batch > 1), row 0 with a padded block; returns inputs of the reference and of the kernel."""
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=generator).to(dtype)

    q, bk, bv = (rand(batch, block, heads, dim).transpose(1, 2) for _ in range(3))
    pk, pv = rand(batch, heads, prefix, dim), rand(batch, heads, prefix, dim)
    lengths = torch.randint(1, prefix + 1, (batch,), generator=generator)
    lengths[-1] = prefix
    if batch > 1:
        lengths[1] = 1
    prefix_mask = torch.arange(prefix)[None, :] < lengths[:, None]
    block_mask = torch.ones(batch, block, dtype=torch.bool)
    block_mask[0, block // 2 + 1 :] = False
    return (q, pk, pv, prefix_mask, bk, bv, block_mask)


def _check_attention(case) -> None:
    q, pk, pv, prefix_mask, bk, bv, block_mask = case
    expected = block_attention_reference(*(t.float() if t.is_floating_point() else t for t in case))
    moved = [t.to(DEVICE) for t in case]
    keys, values, cu_seqlens = pack_prefix(moved[1], moved[2], moved[3])
    got = block_attention_triton(moved[0], keys, values, cu_seqlens, moved[4], moved[5], moved[6])
    assert got.shape == q.shape and got.dtype == q.dtype
    torch.testing.assert_close(got.float().cpu(), expected, **ATTENTION_TOL[q.dtype])


@kernel_case
@pytest.mark.parametrize(
    ("batch", "heads", "prefix", "block", "dim", "dtype"),
    [(2, 2, 70, 5, 16, torch.float32), (3, 2, 20, 17, 24, torch.float32), (1, 2, 1, 5, 16, torch.float32),
     (2, 1, 64, 1, 32, torch.float32), (2, 2, 33, 5, 16, torch.float16)],
    ids=["B2-H2-T70-L5-D16", "B3-H2-T20-L17-D24", "B1-H2-T1-L5-D16", "B2-H1-T64-L1-D32", "B2-H2-T33-L5-D16-fp16"],
)  # fmt: skip
def test_block_attention_matches_reference(batch, heads, prefix, block, dim, dtype):
    _check_attention(_attention_case(batch, heads, prefix, block, dim, dtype, seed=batch * prefix + block))


@cuda_only
@pytest.mark.parametrize(
    ("batch", "heads", "prefix", "block", "dim", "dtype"),
    [(2, 12, 512, 40, 32, torch.float32), (32, 12, 512, 64, 32, torch.float32), (8, 12, 512, 48, 32, torch.bfloat16)],
    ids=["B2-H12-T512-L40-D32", "B32-H12-T512-L64-D32", "B8-H12-T512-L48-D32-bf16"],
)  # fmt: skip
def test_block_attention_real_sizes(batch, heads, prefix, block, dim, dtype):
    _check_attention(_attention_case(batch, heads, prefix, block, dim, dtype, seed=batch))


def test_pack_prefix_keeps_real_tokens_in_order():
    q, pk, pv, prefix_mask, *_ = _attention_case(3, 2, 9, 4, 16)
    keys, values, cu_seqlens = pack_prefix(pk, pv, prefix_mask)
    lengths = prefix_mask.sum(dim=1)
    assert cu_seqlens.tolist() == [0, *lengths.cumsum(0).tolist()] and keys.shape == (int(lengths.sum()), 2, 16)
    for b in range(3):
        rows = slice(int(cu_seqlens[b]), int(cu_seqlens[b + 1]))
        assert torch.equal(keys[rows], pk[b, :, : int(lengths[b])].transpose(0, 1))
        assert torch.equal(values[rows], pv[b, :, : int(lengths[b])].transpose(0, 1))


# ---------------------------------------------------------------- the model through the kernels


def _kernels(monkeypatch, on: bool) -> None:
    """Route the model and the denoiser through the kernels (CUDA: the environment switch; CPU under
    the interpreter: the dispatch, which otherwise keeps CPU tensors on PyTorch)."""
    if DEVICE == "cuda":
        monkeypatch.setenv(ENV, "triton" if on else "torch")
        return
    from decision_engine.decoding import denoise
    from decision_engine.model import transformer

    for module in (transformer, denoise):
        monkeypatch.setattr(module, "use_triton", lambda tensor: on)


@pytest.fixture
def backend(tiny_backend, vocab):
    if DEVICE == "cpu":
        return tiny_backend
    import copy

    from decision_engine.backends.native import NativeBackend

    return NativeBackend(copy.deepcopy(tiny_backend.model), vocab, "tiny-random", DEVICE)


@kernel_case
def test_model_block_logits_through_the_kernel(backend, monkeypatch):
    from decision_engine.backends.protocol import PrefixInput

    prefixes = [PrefixInput(list(range(1000, 1000 + n)), [0] * n) for n in (7, 40, 1)]
    block = torch.tensor([[103, 103, 5000, 0], [103, 2000, 103, 103], [103, 103, 0, 0]])
    slots = torch.tensor([[1, 1, 2, 0], [1, 2, 2, 2], [1, 1, 0, 0]])
    _kernels(monkeypatch, False)
    expected = backend.block_logits(backend.encode_prefix(prefixes), block, slots)
    _kernels(monkeypatch, True)
    cache = backend.encode_prefix(prefixes)
    got = backend.block_logits(cache, block, slots)
    assert cache._packed is not None  # the kernel path ran
    got_subset = backend.block_logits(cache.select([2, 0]), block[[2, 0]], slots[[2, 0]])
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_subset, expected[[2, 0]], atol=1e-4, rtol=1e-4)


@kernel_case
def test_engine_decides_the_same_through_the_kernels(backend, monkeypatch):
    from decision_engine.engine import DecisionEngine
    from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question

    schemas = [
        AnswerSchema(type="boolean"),
        AnswerSchema(type="string", enum=["returned in full", "partly kept", "kept"]),
        AnswerSchema(type="integer", minimum=0, maximum=99),
    ]
    requests = [
        DecisionRequest(
            document=Document(text=text),
            questions=[Question(id=f"q{i}", text=f"Question {i}?", schema=s) for i, s in enumerate(schemas)],
        )
        for text in ("The tenant gave notice on 1 March, twenty days before moving out.", "The deposit was kept.")
    ]
    engine = DecisionEngine(backend)
    _kernels(monkeypatch, False)
    expected = engine.decide_batch(requests, "joint")
    assert all(r.steps > 0 for r in expected)  # the model, not the constraints alone, decided
    _kernels(monkeypatch, True)
    got = engine.decide_batch(requests, "joint")
    assert [[a.value for a in r.answers] for r in got] == [[a.value for a in r.answers] for r in expected]
    assert [r.steps for r in got] == [r.steps for r in expected]
