"""Which number format forward passes compute in, that autocast is confined to the engine's passes, and
that bfloat16 copies of weights change no number."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from decision_engine.factory import build_engine
from decision_engine.options import EngineOptions
from decision_engine.precision import (
    autocast_dtype,
    computing_in,
    cpu_has_native_bfloat16,
    keep_weight_copies,
    resolved_precision,
)
from decision_engine.retrieval.embedder import SpanEmbedder


def test_float32_and_bfloat16_are_taken_as_asked():
    assert resolved_precision("float32", "cpu", bundled_family=True) == "float32"
    assert resolved_precision("bfloat16", "cpu", bundled_family=False) == "bfloat16"
    assert autocast_dtype("float32") == autocast_dtype("int8") == torch.float32 and autocast_dtype("bfloat16") == torch.bfloat16


def test_auto_takes_bfloat16_only_for_the_bundled_family_on_a_cpu_that_has_it():
    native = cpu_has_native_bfloat16()
    assert (resolved_precision("auto", "cpu", bundled_family=True) == "bfloat16") == native
    assert resolved_precision("auto", "cpu", bundled_family=False) == "float32"
    assert resolved_precision("auto", "cuda", bundled_family=True) == "float32"


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "onednn_says", "native"),
    [
        (False, False, True, False),  # plain AVX-512: oneDNN emulates bfloat16, slower than float32
        (True, False, True, True),
        (False, True, True, True),
        (True, True, False, False),
    ],
)
def test_bfloat16_counts_as_native_only_with_its_instructions(monkeypatch, avx512_bf16, amx, onednn_says, native):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: onednn_says)
    assert cpu_has_native_bfloat16() is native
    assert (resolved_precision("auto", "cpu", bundled_family=True) == "bfloat16") == native


def test_an_unknown_precision_is_refused_by_name():
    with pytest.raises(ValueError, match="precision must be one of auto, float32, bfloat16, int8, not 'half'"):
        EngineOptions(precision="half")
    with pytest.raises(ValueError, match="precision must be one of"):
        resolved_precision("half", "cpu", bundled_family=True)


def test_bfloat16_runs_matrix_products_in_bfloat16_and_leaves_nothing_behind():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with computing_in(torch.bfloat16, torch.device("cpu")):
        assert (a @ b).dtype == torch.bfloat16
    assert (a @ b).dtype == torch.float32
    with computing_in(torch.float32, torch.device("cpu")):
        assert (a @ b).dtype == torch.float32


def _small_network() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))


BFLOAT16 = torch.bfloat16
CPU = torch.device("cpu")


def test_weight_copies_give_exactly_what_autocast_gives_and_float32_is_untouched():
    plain, copied = _small_network(), _small_network()
    keep_weight_copies(copied, BFLOAT16)
    x = torch.randn(5, 8)
    with torch.no_grad():
        with computing_in(BFLOAT16, CPU):
            assert torch.equal(plain(x), copied(x))
        assert copied[0]._copy[1].dtype == BFLOAT16
        assert {p.dtype for p in copied.parameters()} == {torch.float32}
        assert torch.equal(plain(x), copied(x))  # in float32 the float32 weights answer


def test_a_copy_is_made_again_once_its_weight_changes_and_training_uses_the_float32_weights():
    plain, copied = _small_network(), _small_network()
    keep_weight_copies(copied, BFLOAT16)
    x = torch.randn(5, 8)
    with torch.no_grad(), computing_in(BFLOAT16, CPU):
        copied(x)
        for network in (plain, copied):
            network[0].weight.add_(0.5)
        assert torch.equal(plain(x), copied(x))
    with computing_in(BFLOAT16, CPU):
        copied(x).sum().backward()
    assert copied[0].weight.grad is not None


def test_float32_keeps_no_copies_and_a_network_with_copies_saves_and_copies_as_before():
    network = _small_network()
    keep_weight_copies(network, torch.float32)
    assert type(network[0]) is torch.nn.Linear
    keep_weight_copies(network, BFLOAT16)
    assert isinstance(network[0], torch.nn.Linear) and network.state_dict().keys() == _small_network().state_dict().keys()
    x = torch.randn(2, 8)
    with torch.no_grad(), computing_in(BFLOAT16, CPU):
        expected = network(x)
        assert torch.equal(copy.deepcopy(network)(x), expected)
        assert torch.equal(pickle.loads(pickle.dumps(network))(x), expected)


def test_an_engine_keeps_the_weights_of_a_model_it_was_given_in_float32(tiny_backend):
    build_engine(EngineOptions(precision="bfloat16", retrieval="leading"), tiny_backend)
    assert {p.dtype for p in tiny_backend.model.parameters()} == {torch.float32}


def test_the_sentence_encoder_computes_in_the_dtype_it_is_given():
    plain, halved = SpanEmbedder(cache_size=0), SpanEmbedder(cache_size=0)
    halved.compute_in(BFLOAT16)
    texts = ["The deposit is returned within 14 days.", "Notice of 30 days"]
    cosine = (plain.embed(texts) * halved.embed(texts)).sum(dim=1)
    query = halved._model.encoder.layer[0].attention.self.query
    assert query.weight.dtype == torch.float32 and query._copy[1].dtype == BFLOAT16
    assert bool((cosine > 0.999).all()) and not bool((cosine == 1).all())
    halved.compute_in(torch.float32)
    assert torch.equal(plain.embed(texts), halved.embed(texts))
