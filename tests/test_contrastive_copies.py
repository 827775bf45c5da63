"""Evidence-removed ContractNLI copies: what is cut, what is relabelled, and what still points where it did."""

from __future__ import annotations

import random

from decision_engine.datasets.contractnli import NliDocument
from decision_engine.datasets.contrastive import evidence_removed

TEXT = "Intro. Clause A says yes. Middle part. Clause B says no. Clause C shared. End."


def _doc() -> NliDocument:
    def at(piece):
        start = TEXT.index(piece)
        return (start, start + len(piece))

    return NliDocument(
        "d1",
        TEXT,
        [at(p) for p in ("Intro.", "Clause A says yes.", "Middle part.", "Clause B says no.", "Clause C shared.", "End.")],
        labels={"h1": "entailment", "h2": "contradiction", "h3": "not mentioned", "h4": "entailment"},
        evidence={"h1": [at("Clause A says yes.")], "h2": [at("Clause B says no.")], "h4": [at("Clause C shared.")]},
    )


def test_a_copy_cuts_the_evidence_of_the_hypotheses_it_relabels():
    doc = _doc()
    for seed in range(20):
        copy = evidence_removed(doc, random.Random(seed), share=0.5)
        cut = [k for k, v in copy.labels.items() if v == "not mentioned" and doc.labels[k] != "not mentioned"]
        assert cut, seed
        for k in cut:
            for start, end in doc.evidence[k]:
                assert doc.text[start:end] not in copy.text
            assert k not in copy.evidence
        for k, ranges in copy.evidence.items():  # kept evidence still points at the same words
            assert [copy.text[s:e] for s, e in ranges] == [doc.text[s:e] for s, e in doc.evidence[k]]
            assert copy.labels[k] == doc.labels[k]
        for s, e in copy.spans:
            assert copy.text[s:e] in doc.text
        assert copy.labels["h3"] == "not mentioned" and copy.id == "d1-cut"


def test_evidence_shared_with_a_kept_hypothesis_is_never_cut():
    doc = _doc()
    doc.evidence["h1"] = [doc.evidence["h4"][0]]  # h1 and h4 rest on the same clause
    for seed in range(20):
        copy = evidence_removed(doc, random.Random(seed), share=0.34)
        if copy is None:
            continue
        if copy.labels["h1"] == "not mentioned":
            assert copy.labels["h4"] == "not mentioned"  # cut together or not at all
        if copy.labels["h4"] == "entailment":
            assert "Clause C shared." in copy.text


def test_no_copy_when_nothing_is_evidenced():
    doc = NliDocument("d2", "Nothing here.", [(0, 13)], labels={"h1": "not mentioned"}, evidence={})
    assert evidence_removed(doc, random.Random(0)) is None
