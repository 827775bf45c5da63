"""int8 layers: products close to float32's, which layers an int8 engine quantises, and when "auto"
takes int8."""

from __future__ import annotations

import pytest
import torch

from decision_engine import int8, precision
from decision_engine.backends.native import NativeBackend
from decision_engine.factory import build_engine
from decision_engine.grounding.mentions import find_mentions
from decision_engine.int8 import Int8Linear, per_token_int8
from decision_engine.model.loader import ModelLoadError, random_model
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.options import EngineOptions
from decision_engine.precision import resolved_precision
from decision_engine.retrieval.embedder import SpanEmbedder
from decision_engine.retrieval.spans import split_spans

needs_int8 = pytest.mark.skipif(not int8.int8_available(), reason="this torch has no int8 products")


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got - want).norm() / want.norm())


@needs_int8
@pytest.mark.parametrize("rows", [1, 16, 17, 300], ids=lambda n: f"rows{n}")
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_int8_linear_computes_what_the_float_layer_does_within_rounding(rows, bias):
    torch.manual_seed(rows)
    layer = torch.nn.Linear(64, 48, bias=bias)
    x = torch.randn(2, rows, 64)  # (B, T, in): any leading shape
    with torch.no_grad():
        want = layer(x)
        got = Int8Linear.from_linear(layer)(x)
    assert got.shape == want.shape == (2, rows, 48)
    assert _relative_error(got, want) < 0.02
    assert not torch.equal(got, want)  # the products really are int8


@needs_int8
def test_each_row_gets_its_own_scale_so_a_loud_row_does_not_drown_a_quiet_one():
    torch.manual_seed(0)
    layer = torch.nn.Linear(32, 16)
    quiet, loud = torch.randn(1, 32) * 1e-3, torch.randn(1, 32) * 1e3
    with torch.no_grad():
        together = Int8Linear.from_linear(layer)(torch.cat([quiet, loud]))
        alone = Int8Linear.from_linear(layer)(quiet)
        want, bias = layer(quiet), layer.bias.detach()
    assert torch.allclose(together[0], alone[0]) and _relative_error(together[:1] - bias, want - bias) < 0.02


@needs_int8
def test_per_token_int8_replaces_every_linear_layer_and_keeps_the_network_close():
    torch.manual_seed(1)
    network = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Sequential(torch.nn.LayerNorm(32), torch.nn.Linear(32, 8))
    )
    x = torch.randn(20, 16)
    with torch.no_grad():
        want = network(x)
        assert per_token_int8(network) == 2
        got = network(x)
    assert isinstance(network[0], Int8Linear) and isinstance(network[2][1], Int8Linear)
    assert isinstance(network[2][0], torch.nn.LayerNorm)
    assert _relative_error(got, want) < 0.03


@pytest.fixture
def cpu_without_bfloat16(monkeypatch):
    """A CPU with int8 products and no native bfloat16, whatever this one has."""
    monkeypatch.setattr(precision, "cpu_has_native_bfloat16", lambda: False)
    monkeypatch.setattr(int8, "cpu_has_fast_int8", lambda: True)


def test_auto_takes_int8_for_the_bundled_family_where_the_cpu_has_int8_but_not_bfloat16(cpu_without_bfloat16):
    assert resolved_precision("auto", "cpu", bundled_family=True) == "int8"
    assert resolved_precision("auto", "cpu", bundled_family=True, may_quantize=False) == "float32"
    assert resolved_precision("auto", "cpu", bundled_family=False) == "float32"
    assert resolved_precision("auto", "cuda", bundled_family=True) == "float32"


def test_auto_takes_bfloat16_before_int8_and_float32_without_either(monkeypatch):
    monkeypatch.setattr(precision, "cpu_has_native_bfloat16", lambda: True)
    monkeypatch.setattr(int8, "cpu_has_fast_int8", lambda: True)
    assert resolved_precision("auto", "cpu", bundled_family=True) == "bfloat16"
    monkeypatch.setattr(precision, "cpu_has_native_bfloat16", lambda: False)
    monkeypatch.setattr(int8, "cpu_has_fast_int8", lambda: False)
    assert resolved_precision("auto", "cpu", bundled_family=True) == "float32"


def test_int8_is_refused_by_name_off_a_cpu_for_other_families_and_without_torch_support(monkeypatch, tiny_backend):
    with pytest.raises(ValueError, match="precision int8 is for the bundled model family on a CPU"):
        resolved_precision("int8", "cuda", bundled_family=True)
    with pytest.raises(ValueError, match="precision int8 is for the bundled model family on a CPU"):
        resolved_precision("int8", "cpu", bundled_family=False)
    with pytest.raises(ModelLoadError, match="precision int8 is for the bundled model family on a CPU"):
        build_engine(EngineOptions(precision="int8", device="cuda", retrieval="leading"), tiny_backend)
    monkeypatch.setattr(int8, "int8_available", lambda: False)
    with pytest.raises(ValueError, match="precision int8 needs torch._int_mm"):
        resolved_precision("int8", "cpu", bundled_family=True)


@needs_int8
def test_an_int8_engine_quantises_the_transformer_layers_and_leaves_the_heads_float(vocab):
    backend = NativeBackend(random_model(BlockDiffusionConfig.from_name("tiny")), vocab, "tiny-random")  # its own:
    engine = build_engine(EngineOptions(precision="int8", retrieval="leading"), backend)  # quantised in place
    assert engine.precision == "int8" and engine.dtype == torch.float32
    layers = [m for m in backend.model.layers.modules() if "Linear" in type(m).__name__]
    assert layers and all(type(m) is Int8Linear for m in layers)
    heads = [m for name, m in backend.model.named_modules() if type(m) is torch.nn.Linear and "layers" not in name]
    assert heads  # the heads' small layers stay float32


def test_auto_leaves_a_model_it_was_handed_in_float(tiny_backend, cpu_without_bfloat16):
    engine = build_engine(EngineOptions(retrieval="leading"), tiny_backend)  # as fits hand theirs in
    assert engine.precision == "float32"
    layers = [m for m in tiny_backend.model.layers.modules() if "Linear" in type(m).__name__]
    assert layers and all(isinstance(m, torch.nn.Linear) for m in layers)  # plain (or keeping bfloat16 copies)


@needs_int8
def test_the_encoder_reads_spans_in_int8_and_mentions_and_questions_in_float32():
    text = (
        "The Supplier shall deliver the goods within 30 days of the order.\n"
        "The Customer shall pay $16,000 on 8 March 2024, and a deposit of 5% is kept until acceptance."
    )
    spans = split_spans(text, 400)
    mentions = find_mentions(text)
    plain, quantised = SpanEmbedder(cache_size=0), SpanEmbedder(cache_size=0)
    quantised.quantize_int8()
    cosine = (plain.embed_spans(text, spans) * quantised.embed_spans(text, spans)).sum(dim=1)
    assert bool((cosine > 0.99).all()) and not bool((cosine == 1).all())
    assert torch.equal(plain.embed_mentions(text, mentions), quantised.embed_mentions(text, mentions))
    assert torch.equal(plain.embed_questions(["When is payment due?"]), quantised.embed_questions(["When is payment due?"]))
