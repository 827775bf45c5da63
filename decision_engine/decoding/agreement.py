"""A joint request's boolean and enum answers weighed again by the agreement reader
(`reader/agreement_reader.py`) once the denoiser has answered every slot.

Only answers the model chose take part (not those a rule fixed). An answer a comparison chose keeps
its value, as its evidence is the two values compared, but its odds still move the others. A changed
answer is kept only where the request's rules still hold with it, changes with the largest gain
first; each weighed answer reports its weighed probability as its confidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..reader.agreement_reader import AgreementReader, Decided, weigh_again
from ..reader.choice_reader import choice_text, slot_choices
from ..rules import RuleSet
from ..types import FixedBy, Question, Value


def decided_answers(
    questions: Sequence[Question],
    values: Sequence[Value],
    confidences: Sequence[float],
    settled: Sequence[FixedBy],
    embedder,
) -> list[tuple[int, Decided]]:
    """(slot, the answer as the agreement reader reads it) for each boolean or enum answer the model chose."""
    picked = []
    for slot, (question, value, how) in enumerate(zip(questions, values, settled)):
        choices = question_choices(question)
        if how != "model" or choices is None:
            continue
        chosen = next((k for k, c in enumerate(choices) if c == value and type(c) is type(value)), None)
        if chosen is not None:
            picked.append((slot, choices, chosen))
    if not picked:
        return []
    vectors = embedder.embed_questions([questions[slot].text for slot, _, _ in picked])
    out = []
    for (slot, choices, chosen), vector in zip(picked, vectors):
        words = embedder.embed_words([choice_text(c) for c in choices])
        out.append((slot, Decided(vector, words, chosen, float(confidences[slot]))))
    return out


def question_choices(question: Question) -> list | None:
    """A boolean or enum question's choices (hypotheses left out), None for any other."""
    return slot_choices({"type": question.schema.type, "enum": question.schema.enum})


def agreed_answers(
    reader: AgreementReader,
    embedder,
    questions: Sequence[Question],
    values: Sequence[Value],
    confidences: Sequence[float],
    settled: Sequence[FixedBy],
    kept: Sequence[bool],
    rules: RuleSet,
) -> tuple[list[Value], list[float]]:
    """`values` and `confidences` with each boolean or enum answer the model chose weighed again with
    the surer ones (`reader.agreement_reader.weigh_again`); `kept[slot]` marks answers that keep
    their value whatever the weighing says (a comparison's)."""
    values, confidences = list(values), list(confidences)
    decided = decided_answers(questions, values, confidences, settled, embedder)
    weighed = weigh_again(reader, [item for _, item in decided])
    changes = []
    for (slot, item), probabilities in zip(decided, weighed):
        if probabilities is None or kept[slot]:
            continue
        best = int(probabilities.argmax())
        if best == item.chosen:
            confidences[slot] = float(probabilities[best])
        else:
            gain = float(probabilities[best] - probabilities[item.chosen])
            changes.append((gain, slot, best, item.chosen, probabilities))
    for _, slot, best, chosen, probabilities in sorted(changes, key=lambda change: -change[0]):
        trial = list(values)
        trial[slot] = question_choices(questions[slot])[best]
        kept_by_rules = bool(rules.violations(trial))
        if not kept_by_rules:
            values = trial
        confidences[slot] = float(probabilities[chosen if kept_by_rules else best])
    return values, confidences

