"""One set of engine options: the same flags on every command, parsed into EngineOptions, built by one builder."""

from __future__ import annotations

import argparse
from typing import get_args

import pytest

from decision_engine.cli import build_parser
from decision_engine.decoding.layout import LeadingContext
from decision_engine.factory import build_engine
from decision_engine.options import MODES, RETRIEVALS, EngineOptions, Retrieval, add_engine_arguments
from decision_engine.retrieval.builder import RetrievalContext, context_for
from decision_engine.types import Mode
from decision_engine.validation import Limits

ENGINE_FLAGS = ["--model", "m", "--device", "cuda", "--retrieval", "hybrid", "--trust-remote-code",
                "--max-document-chars", "500"]  # fmt: skip
EXPECTED = EngineOptions("m", "cuda", "hybrid", True, Limits(max_document_chars=500))


@pytest.mark.parametrize(
    "argv",
    [
        ["decide", "x.jsonl"],
        ["eval", "--path", "x.jsonl"],
        ["batch", "x.jsonl", "--out", "o.jsonl", "--run", "r"],
        ["serve"],
    ],
    ids=["decide", "eval", "batch", "serve"],
)
def test_every_command_parses_the_same_engine_options(argv):
    parser = build_parser()
    assert EngineOptions.from_args(parser.parse_args(argv)) == EngineOptions()
    assert EngineOptions.from_args(parser.parse_args([*argv, *ENGINE_FLAGS])) == EXPECTED


def test_bench_keeps_its_device_choices():
    parser = build_parser()
    options = EngineOptions.from_args(parser.parse_args(["bench", "--device", "cuda", "--retrieval", "leading"]))
    assert options == EngineOptions(device="cuda", retrieval="leading")
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "--device", "tpu"])


def test_train_retrieval_defaults_as_inference_does():
    args = build_parser().parse_args(["train"])
    assert args.retrieval == EngineOptions().retrieval == "lexical"
    assert not hasattr(args, "model")  # train takes --config, not a model


def test_choices_come_from_the_types():
    assert RETRIEVALS == get_args(Retrieval) == ("hybrid", "lexical", "leading")
    assert MODES == get_args(Mode)
    parser = argparse.ArgumentParser()
    add_engine_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--retrieval", "dense"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["decide", "x.jsonl", "--mode", "parallel"])


def test_an_unknown_retrieval_is_a_clear_error():
    with pytest.raises(ValueError, match="retrieval must be one of hybrid, lexical, leading, not 'dense'"):
        EngineOptions(retrieval="dense")
    with pytest.raises(ValueError, match="unknown retrieval 'dense'"):
        context_for("dense", None)


def test_the_builder_assembles_the_engine_the_options_name(tiny_backend):
    lexical = build_engine(EngineOptions(limits=Limits(max_document_chars=10)), tiny_backend)
    assert lexical.model is tiny_backend and lexical.limits.max_document_chars == 10
    assert isinstance(lexical.context, RetrievalContext) and lexical.context.retriever.embedder is None
    hybrid = build_engine(EngineOptions(retrieval="hybrid"), tiny_backend)
    assert hybrid.context.retriever.embedder is not None
    assert isinstance(build_engine(EngineOptions(retrieval="leading"), tiny_backend).context, LeadingContext)


def test_the_service_settings_hold_the_engine_options():
    from decision_engine.service.settings import ServiceSettings

    settings = ServiceSettings(engine=EXPECTED)
    assert settings.engine.model == "m" and settings.limits.max_document_chars == 500
    assert ServiceSettings().engine == EngineOptions()


def test_the_evidence_budget_reaches_the_span_pointer_context(vocab):
    from types import SimpleNamespace

    from decision_engine.reader.span_pointer import SpanPointer
    from decision_engine.retrieval.builder import context_for_model
    from decision_engine.retrieval.pointed import EVIDENCE_TOKENS

    model = SimpleNamespace(vocab=vocab, span_pointer=SpanPointer(), evidence_pointer=None)
    assert context_for_model("lexical", model).evidence_tokens == EVIDENCE_TOKENS == 160
    assert context_for_model("lexical", model, evidence_tokens=96).evidence_tokens == 96
    args = build_parser().parse_args(["decide", "x.jsonl", "--evidence-tokens", "96"])
    assert EngineOptions.from_args(args) == EngineOptions(evidence_tokens=96)


@pytest.mark.parametrize("tokens", ["0", "15", "321", "many"])
def test_an_evidence_budget_out_of_range_is_refused_by_name(tokens, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["decide", "x.jsonl", "--evidence-tokens", tokens])
    assert f"{tokens!r} is not a whole number from 16 to 320" in capsys.readouterr().err
    if tokens.isdigit():
        with pytest.raises(ValueError, match=f"evidence_tokens must be from 16 to 320, not {tokens}"):
            EngineOptions(evidence_tokens=int(tokens))
