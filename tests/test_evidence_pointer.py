"""The evidence pointer: a second span pointer that orders the evidence answers report among the spans
each question was shown, while the layout pointer still decides what each question reads."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from decision_engine.model.loader import load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.reader.span_pointer import SpanPointer
from decision_engine.retrieval.pointed import PointedContext, _reported

sys.path.insert(0, str(Path(__file__).parent))
from test_pointed_evidence import DOCUMENT, WORDS, WordEmbedder, nli_request, trained_pointed_model  # noqa: E402

QUESTION = "Must the recipient return or destroy materials under this agreement?"


def pointer_towards(word: str) -> SpanPointer:
    """A pointer whose question side sees only `word`: it ranks spans by how often they use it."""
    pointer = SpanPointer()
    with torch.no_grad():
        pointer.question.weight.zero_()
        pointer.question.weight[WORDS.index(word), WORDS.index("return")] = 1.0
        pointer.lexical.zero_()
    return pointer


def test_reported_spans_put_the_shown_ones_first_in_the_evidence_pointers_order():
    probabilities = np.array([0.1, 0.4, 0.05, 0.3, 0.15])
    assert _reported(probabilities, chosen=[0, 3, 4]) == [3, 4, 0, 1, 2]
    assert _reported(probabilities, chosen=[]) == [1, 3, 4, 0, 2]


def test_an_evidence_pointer_reorders_what_answers_cite_and_changes_no_layout(vocab):
    layout = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=80)
    plain = layout(DOCUMENT, [QUESTION], 300)
    cited = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=80, evidence_pointer=pointer_towards("agreement"))
    ordered = cited(DOCUMENT, [QUESTION], 300)
    assert ordered.per_question == plain.per_question and ordered.question_ranges == plain.question_ranges
    assert "return or destroy" in plain.evidence[0][0].text
    first = ordered.evidence[0][0]
    assert "Agreement" in first.text and first.text != plain.evidence[0][0].text
    assert any(a <= first.start and first.end <= b for a, b in ordered.question_ranges[0])  # it was shown
    scores = [e.score for e in ordered.evidence[0]]
    assert scores[0] >= scores[1]  # the evidence pointer's probabilities are reported


def test_a_span_the_question_was_not_shown_is_never_cited_before_one_it_was(vocab):
    context = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=8, evidence_pointer=pointer_towards("ohio"))
    choice = context(DOCUMENT, [QUESTION], 300)
    shown = choice.question_ranges[0]
    assert len(shown) == 1 and "return or destroy" in DOCUMENT[shown[0][0] : shown[0][1]]
    assert (choice.evidence[0][0].start, choice.evidence[0][0].end) == shown[0]
    assert "Ohio" in choice.evidence[0][1].text  # the evidence pointer's favourite, after what was read


def test_an_evidence_pointer_saves_and_loads_and_a_missing_one_starts_as_the_layout_pointer(tmp_path):
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True, points_at_spans=True)
    model = random_model(replace(cfg, orders_evidence=True), seed=3)
    with torch.no_grad():
        model.evidence_pointer.question.weight.mul_(2.0)
    save_checkpoint(model, tmp_path / "ordered", "ordered")
    loaded, _ = load_checkpoint(tmp_path / "ordered")
    assert loaded.cfg.orders_evidence
    assert torch.allclose(loaded.evidence_pointer.question.weight, model.evidence_pointer.question.weight.half().float())
    save_checkpoint(random_model(cfg, seed=3), tmp_path / "plain", "plain")
    grown, _ = load_checkpoint(tmp_path / "plain", cfg=replace(cfg, orders_evidence=True))
    assert torch.equal(grown.evidence_pointer.question.weight, grown.span_pointer.question.weight)
    plain, _ = load_checkpoint(tmp_path / "plain")
    assert plain.evidence_pointer is None


def test_fit_pointer_evidence_only_adds_an_evidence_pointer_and_keeps_every_other_weight(tmp_path, capsys):
    from decision_engine.cli import main
    from decision_engine.factory import build_engine
    from decision_engine.options import EngineOptions

    data = trained_pointed_model(tmp_path)
    capsys.readouterr()
    out = tmp_path / "ordered"
    args = ["fit-pointer", "--model", str(tmp_path / "model"), "--out", str(out), "--contractnli", str(data), "--epochs", "3"]
    assert main([*args, "--evidence-only"]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["epochs"] == 3
    before, _ = load_checkpoint(tmp_path / "model")
    after, meta = load_checkpoint(out)
    assert after.cfg.orders_evidence and meta["training"]["evidence_pointer"]["epochs"] == 3
    assert "pointer" in meta["training"]  # the layout pointer's own record stays
    kept = {k: v for k, v in after.state_dict().items() if not k.startswith("evidence_pointer.")}
    assert kept.keys() == before.state_dict().keys()
    assert all(torch.equal(v, before.state_dict()[k]) for k, v in kept.items())
    request = nli_request(["The agreement is governed by the laws of Ohio.", "The term lasts five years."])
    old = build_engine(EngineOptions(model=str(tmp_path / "model"))).decide(request, "joint")
    new = build_engine(EngineOptions(model=str(out))).decide(request, "joint")
    assert [a.value for a in new.answers] == [a.value for a in old.answers]
    for answer in new.answers:
        assert answer.evidence and all(DOCUMENT[e.start : e.end] == e.text for e in answer.evidence)
