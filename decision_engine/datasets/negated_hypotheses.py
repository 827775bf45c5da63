"""Negated hypotheses: ContractNLI's seventeen hypotheses said the other way, for the verdict reader.

ContractNLI asks the same seventeen statements of every NDA, and a clause contradicts one far less
often than it entails it, so a verdict reader fitted on them learns which of the seventeen a clause
usually supports more than how a statement stands to a clause. Each statement here says the
opposite of one of them in other words ("The Receiving Party is free to reverse engineer ..."). Asked
of the same document, the clause that entailed the original contradicts the negation and the other
way round; where the document says nothing of it, it still says nothing. So every labelled training
hypothesis gives a second example whose verdict is the other side, read against a clause in words
that differ from the statement's. Each is also restated the same way round in the same plain words
(`RESTATEMENTS`), so the wording of a statement does not tell its verdict: without them, the plain
style would mostly come with "contradiction" (ContractNLI's clauses mostly entail its statements).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..evaluation import LabelledGroup
from .contractnli import LABELS

ENTAILMENT, CONTRADICTION, _ABSENT = LABELS

NEGATIONS = {
    "nda-1": "Information can be Confidential Information even if the Disclosing Party never marks or identifies it as such.",
    "nda-2": "Confidential Information also covers information that is not technical, such as business or financial information.",
    "nda-3": "Information disclosed orally cannot be Confidential Information.",
    "nda-4": "The Receiving Party may use Confidential Information for purposes beyond those the Agreement states.",
    "nda-5": "The Receiving Party may not disclose Confidential Information to any of its own employees.",
    "nda-7": "The Receiving Party may not share Confidential Information with any third party, advisers, consultants and agents included.",
    "nda-8": "The Receiving Party need not tell the Disclosing Party before disclosing Confidential Information under a legal requirement or court order.",
    "nda-10": "The Receiving Party may freely tell others that the Agreement was negotiated or signed.",
    "nda-11": "The Receiving Party is free to reverse engineer objects that embody the Disclosing Party's Confidential Information.",
    "nda-12": "The Receiving Party is barred from developing, on its own, information similar to the Confidential Information.",
    "nda-13": "The Receiving Party may not obtain information similar to the Confidential Information from third parties.",
    "nda-15": "The Agreement grants the Receiving Party a licence or other right to the Confidential Information.",
    "nda-16": "The Receiving Party has no duty to return or destroy Confidential Information when the Agreement ends.",
    "nda-17": "The Receiving Party is never allowed to copy Confidential Information.",
    "nda-18": "The Receiving Party remains free to solicit or hire any of the Disclosing Party's employees or representatives.",
    "nda-19": "Every obligation under the Agreement ends when the Agreement terminates.",
    "nda-20": "After returning or destroying Confidential Information, the Receiving Party may keep no copy of any of it.",
}

RESTATEMENTS = {
    "nda-1": "Only information the Disclosing Party expressly marks or identifies counts as Confidential Information.",
    "nda-2": "Confidential Information is limited to technical information.",
    "nda-3": "Information disclosed orally can be Confidential Information.",
    "nda-4": "The Receiving Party may use Confidential Information only for the purposes the Agreement states.",
    "nda-5": "The Receiving Party may disclose Confidential Information to some of its own employees.",
    "nda-7": "The Receiving Party may share Confidential Information with certain third parties, such as its advisers, consultants or agents.",
    "nda-8": "The Receiving Party must tell the Disclosing Party if a law, regulation or court requires it to disclose Confidential Information.",
    "nda-10": "The Receiving Party must keep secret the fact that the Agreement was negotiated or signed.",
    "nda-11": "The Receiving Party is forbidden to reverse engineer objects that embody the Disclosing Party's Confidential Information.",
    "nda-12": "The Receiving Party remains free to develop, on its own, information similar to the Confidential Information.",
    "nda-13": "The Receiving Party may obtain information similar to the Confidential Information from third parties.",
    "nda-15": "The Agreement gives the Receiving Party no licence or other right to the Confidential Information.",
    "nda-16": "When the Agreement ends, the Receiving Party must return or destroy Confidential Information.",
    "nda-17": "In some cases the Receiving Party is allowed to copy Confidential Information.",
    "nda-18": "The Receiving Party must not solicit certain employees or representatives of the Disclosing Party.",
    "nda-19": "Some obligations under the Agreement continue after the Agreement terminates.",
    "nda-20": "Even after returning or destroying Confidential Information, the Receiving Party may keep some copies of it.",
}

FLIPPED = {ENTAILMENT: CONTRADICTION, CONTRADICTION: ENTAILMENT}


def negated_groups(groups: Sequence[LabelledGroup]) -> list[LabelledGroup]:
    """ContractNLI groups asked again with each hypothesis that has a negation said the other way:
    entailment and contradiction swap, "not mentioned" stays; the gold evidence is the same clauses.
    Questions without a negation are left out, and groups left with none are dropped."""
    return _asked_again(groups, NEGATIONS, flip=True)


def restated_groups(groups: Sequence[LabelledGroup]) -> list[LabelledGroup]:
    """ContractNLI groups asked again with each hypothesis restated in the negations' plain style, its
    verdict kept: with them, how a statement is worded says nothing about which way it goes."""
    return _asked_again(groups, RESTATEMENTS, flip=False)


def _asked_again(groups: Sequence[LabelledGroup], texts: dict[str, str], flip: bool) -> list[LabelledGroup]:
    out = []
    for group in groups:
        line = group.request_line
        asked = [q for q in line["questions"] if q["id"] in texts and q["id"] in group.labels]
        if not asked:
            continue
        questions = [{**q, "text": texts[q["id"]]} for q in asked]
        labels = {q["id"]: FLIPPED.get(group.labels[q["id"]], group.labels[q["id"]]) if flip else group.labels[q["id"]] for q in asked}
        evidence = {q["id"]: group.evidence[q["id"]] for q in asked if q["id"] in group.evidence}
        out.append(LabelledGroup({**line, "questions": questions, "labels": labels}, labels, evidence))
    return out
