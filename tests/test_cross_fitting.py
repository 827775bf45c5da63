"""Cross-fitted training layouts: every fold's documents laid out by a span pointer that never saw them."""

from __future__ import annotations

import torch
from test_pointed_evidence import DOCUMENT, WordEmbedder

from decision_engine.reader.span_pointer import SpanPointer
from decision_engine.retrieval.pointed import PointedContext
from decision_engine.training.cross_fitting import CrossFittedContext, cross_fitted, deal_folds, document_key
from decision_engine.training.preparation import pointed_context

OTHER = DOCUMENT.replace("Ohio", "Utah")
QUESTIONS = ["Which law governs, Ohio?", "Must the recipient return or destroy materials?"]


def _line(name: str, text: str = DOCUMENT) -> dict:
    return {"id": name, "document": {"text": f"{text}\n{name}"}, "questions": []}


def _reversed_pointer() -> SpanPointer:
    """A pointer that ranks spans from the least like the question to the most."""
    pointer = SpanPointer()
    with torch.no_grad():
        pointer.scale.fill_(-10.0)
        pointer.lexical.fill_(-0.5)
    return pointer.eval()


def test_folds_cover_every_document_once_in_near_equal_parts():
    lines = [_line(f"d{i}") for i in range(10)]
    folds = deal_folds(lines, 4, seed=3)
    assert sorted(len(f) for f in folds) == [2, 2, 3, 3]
    assert sorted(line["id"] for f in folds for line in f) == sorted(line["id"] for line in lines)
    assert deal_folds(lines, 4, seed=3) == folds  # the seed decides the deal


def test_each_fold_pointer_is_fitted_without_its_fold_and_measured_on_it(vocab):
    lines = [_line(f"d{i}") for i in range(6)]
    fitted_on, measured_on = [], []

    def fit(chosen):
        fitted_on.append({line["id"] for line in chosen})
        return SpanPointer()

    def hit(pointer, chosen):
        measured_on.append({line["id"] for line in chosen})
        return 0.5

    full = PointedContext(vocab, SpanPointer(), WordEmbedder())
    context, summary = cross_fitted(full, lines, 3, fit, hit, seed=0, log=lambda line: None)
    everything = {line["id"] for line in lines}
    assert len(fitted_on) == 3
    for seen, unseen in zip(fitted_on, measured_on):
        assert seen.isdisjoint(unseen) and seen | unseen == everything
    assert summary == {"folds": 3, "fold_hit_at_1": [0.5, 0.5, 0.5], "fold_documents": [2, 2, 2]}
    assert {document_key(line["document"]["text"]) for line in lines} == set(context.by_document)


def test_a_fold_document_is_laid_out_by_its_fold_pointer_and_any_other_by_the_full_one(vocab):
    embedder = WordEmbedder()
    full = PointedContext(vocab, SpanPointer(), embedder, evidence_tokens=20)
    context = CrossFittedContext(full, [(_reversed_pointer(), [document_key(OTHER)])])
    plain = full.question_evidence(DOCUMENT, QUESTIONS)
    assert context.question_evidence(DOCUMENT, QUESTIONS) == plain  # not in a fold: the full pointer
    folded = context.question_evidence(OTHER, QUESTIONS)
    assert [e.ranked[0] for e in folded] != [e.ranked[0] for e in full.question_evidence(OTHER, QUESTIONS)]
    assert context(OTHER, QUESTIONS, 300).per_question != full(OTHER, QUESTIONS, 300).per_question


def test_a_worker_builds_the_same_cross_fitted_context_from_the_states(vocab, monkeypatch):
    import decision_engine.retrieval.embedder as embedder_module

    monkeypatch.setattr(embedder_module, "SpanEmbedder", lambda cache_size=0: WordEmbedder())
    full = PointedContext(vocab, SpanPointer().eval(), WordEmbedder())
    context = CrossFittedContext(full, [(_reversed_pointer(), [document_key(OTHER)])])
    state = {k: v.clone() for k, v in full.pointer.state_dict().items()}
    rebuilt = pointed_context(vocab, state, context.fold_states())
    for text in (DOCUMENT, OTHER):
        assert rebuilt.question_evidence(text, QUESTIONS) == context.question_evidence(text, QUESTIONS)
        assert rebuilt(text, QUESTIONS, 300).per_question == context(text, QUESTIONS, 300).per_question
