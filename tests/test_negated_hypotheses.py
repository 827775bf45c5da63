"""Negated hypotheses: ContractNLI's statements said the other way, their verdicts swapped."""

from __future__ import annotations

from decision_engine.datasets.contractnli import LABELS
from decision_engine.datasets.negated_hypotheses import NEGATIONS, RESTATEMENTS, negated_groups, restated_groups
from decision_engine.evaluation import LabelledGroup

ENTAILMENT, CONTRADICTION, ABSENT = LABELS


def _group(labels: dict[str, str], evidence: dict | None = None) -> LabelledGroup:
    line = {
        "id": "contractnli-1-1",
        "document": {"text": "The Recipient shall not reverse engineer any sample."},
        "questions": [{"id": k, "text": f"original {k}", "schema": {"type": "string", "enum": list(LABELS)}} for k in labels],
        "labels": dict(labels),
    }
    return LabelledGroup(line, dict(labels), evidence or {})


def test_entailment_and_contradiction_swap_and_absence_stays():
    group = _group({"nda-11": ENTAILMENT, "nda-7": CONTRADICTION, "nda-2": ABSENT}, {"nda-11": [(0, 20)]})
    [negated] = negated_groups([group])
    assert negated.labels == {"nda-11": CONTRADICTION, "nda-7": ENTAILMENT, "nda-2": ABSENT}
    assert negated.request_line["labels"] == negated.labels
    assert [q["text"] for q in negated.request_line["questions"]] == [NEGATIONS[k] for k in ("nda-11", "nda-7", "nda-2")]
    assert negated.evidence == {"nda-11": [(0, 20)]}
    assert negated.request_line["document"] == group.request_line["document"]
    assert group.labels["nda-11"] == ENTAILMENT  # the original group is left as it was


def test_a_hypothesis_without_a_negation_is_left_out():
    [negated] = negated_groups([_group({"nda-11": ENTAILMENT, "custom-1": ENTAILMENT})])
    assert [q["id"] for q in negated.request_line["questions"]] == ["nda-11"]
    assert negated_groups([_group({"custom-1": ENTAILMENT})]) == []


def test_every_negation_is_a_new_statement():
    assert len(NEGATIONS) == 17
    assert len(set(NEGATIONS.values())) == 17
    assert all(text.endswith(".") and len(text.split()) >= 6 for text in NEGATIONS.values())


def test_a_restatement_keeps_its_verdict_and_says_it_in_plain_words():
    [restated] = restated_groups([_group({"nda-11": ENTAILMENT, "nda-7": CONTRADICTION, "nda-2": ABSENT})])
    assert restated.labels == {"nda-11": ENTAILMENT, "nda-7": CONTRADICTION, "nda-2": ABSENT}
    assert [q["text"] for q in restated.request_line["questions"]] == [RESTATEMENTS[k] for k in ("nda-11", "nda-7", "nda-2")]
    assert set(RESTATEMENTS) == set(NEGATIONS)
    assert not set(RESTATEMENTS.values()) & set(NEGATIONS.values())
