"""The absence gate: how strongly the document holds a passage for a hypothesis, as odds on "not mentioned".

The span pointer that lays out each question's evidence scores every span of the document; its best
raw score (before the softmax that ranks spans) is high where some clause speaks to a hypothesis and
low where none does. (The evidence pointer, fitted on the gold evidence without holding it near
cosine ranking, is surer still on its own training documents, so fits of the gate and its calibration
on those documents would overrate it on others.)
Span NLI readers answer "not mentioned" when no span is evidence; the gate carries that signal to the
answer. A hypothesis slot is an enum whose choices are an NLI verdict: an absence choice ("not
mentioned", "not stated", ...) beside "entailment" or "contradiction". The gate adds
`weight * (best - centre) + spans_weight * (log(spans) - spans_centre)` to its absence choice's
log-odds, where `best` is the pointer's best score and `spans` how many spans the document has: the
best of many spans scores higher by chance alone, so a long document's best score says less. The
weights and centres are fitted on labelled training documents (`training/absence_fit.py`);
a model without a fitted gate decides as before. Other enums are left alone: on generated fact
questions ("Is any owner a politically exposed person?": yes, no, not mentioned) the pointer's best
score does not tell present from absent on held-out wording, since the pointer learned its scale on
contract clauses.

That scale is also the fitted hypotheses' own: a hypothesis in new words scores some 5 points lower
for the clause that decides it, as low as a ContractNLI hypothesis with no clause, so the gate would
call it absent. A gate may therefore keep the texts it was fitted on (`known`) and a second gate for
every other hypothesis (`novel`), which reads the log-odds of the pointer's top probability instead
(after its softmax over the document's spans): how far the best span stands out, whatever the scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

ABSENCE_CHOICES = frozenset({
    "not mentioned", "not stated", "not specified", "not addressed", "not covered", "not in the document",
    "unknown", "unstated", "n/a",
})


VERDICT_CHOICES = frozenset({"entailment", "contradiction", "entailed", "contradicted"})


def choice_words(text: str) -> str:
    """An enum choice as the words it says: lower case, underscores as spaces, whitespace folded."""
    return " ".join(text.lower().replace("_", " ").split())


def is_absence_choice(text: str) -> bool:
    """Whether an enum choice says the document does not speak to the question."""
    return choice_words(text) in ABSENCE_CHOICES


def is_hypothesis_slot(choices: Sequence[object]) -> bool:
    """Whether an enum's choices are an NLI verdict: an absence choice and an entailment or contradiction."""
    texts = [choice_words(c) for c in choices if isinstance(c, str)]
    return any(t in ABSENCE_CHOICES for t in texts) and any(t in VERDICT_CHOICES for t in texts)


class PassageStrength(NamedTuple):
    """How strongly a document speaks to one question: the pointer's best raw span score, how many
    spans it chose among, and the probability its softmax gives the best span."""

    best: float
    spans: int
    top: float = 1.0

    def read(self, feature: str) -> float:
        """A gate's input: the best raw score ("best"), or the log-odds of the top probability ("top")."""
        if feature == "best":
            return self.best
        top = min(max(self.top, TOP_FLOOR), 1.0 - TOP_FLOOR)
        return math.log(top / (1.0 - top))


TOP_FLOOR = 1e-4  # the top probability is read within [floor, 1 - floor], so its log-odds stay finite
FEATURES = ("best", "top")


@dataclass(frozen=True)
class AbsenceGate:
    """log-odds shift of the absence choice: `weight` (below 0: a strong passage makes "not mentioned"
    less likely) on the strength it `reads` (`PassageStrength.read`), `spans_weight` on the log of the
    document's span count. With a `novel` gate, hypotheses whose text is not in `known` get that one's."""

    weight: float
    centre: float
    spans_weight: float = 0.0
    spans_centre: float = 0.0
    reads: str = "best"
    known: frozenset[str] = frozenset()
    novel: AbsenceGate | None = None

    def for_question(self, question: str | None) -> AbsenceGate:
        """The gate that reads `question`: the novel one for a hypothesis this gate was not fitted on."""
        if self.novel is not None and question is not None and question not in self.known:
            return self.novel
        return self

    def shift(self, strength: PassageStrength) -> float:
        spans = math.log(max(strength.spans, 1)) - self.spans_centre
        return self.weight * (strength.read(self.reads) - self.centre) + self.spans_weight * spans

    def choice_bias(
        self, choices: Sequence[object], strength: PassageStrength, question: str | None = None
    ) -> list[float] | None:
        """Per choice, the log-odds added to it; None for a slot that is not a hypothesis slot."""
        if not is_hypothesis_slot(choices):
            return None
        absent = [isinstance(c, str) and is_absence_choice(c) for c in choices]
        shift = self.for_question(question).shift(strength)
        return [shift if a else 0.0 for a in absent]

    def to_dict(self) -> dict:
        data = {"weight": self.weight, "centre": self.centre, "spans_weight": self.spans_weight, "spans_centre": self.spans_centre}
        if self.reads != "best":
            data["reads"] = self.reads
        if self.novel is not None:
            data["known"] = sorted(self.known)
            data["novel"] = self.novel.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping | None) -> AbsenceGate | None:
        """The gate a checkpoint records, or None when it records none."""
        if not data:
            return None
        return cls(
            float(data["weight"]), float(data["centre"]),
            float(data.get("spans_weight", 0.0)), float(data.get("spans_centre", 0.0)), str(data.get("reads", "best")),
            frozenset(data.get("known", ())), cls.from_dict(data.get("novel")),
        )
