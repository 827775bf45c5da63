"""A joint request's grounded integer and date answers weighed again with its surer boolean and enum
answers, by a second agreement reader (`reader/agreement_reader.py`, read with a value's context).

Which of two notice periods applies, or which ownership threshold, often hangs on a boolean the value
chooser never reads: was notice given during probation, is the customer high risk. Once the boolean and
enum answers are weighed (`decoding/agreement.py`), each integer or date answer the model chose among
its candidates is weighed again against the boolean and enum answers of the same request it was surer
of. Its odds are the chooser's over its `TOP` likeliest values; a value is read as the text either side
of the mention it copies or starts from ("at least 7 days during probation" / "45 days after it"). A
changed value is kept only where the request's rules still hold with it, and reports its weighed
probability as its confidence. An answer is never moved to a value resting on no mention (the 0 of
"nothing written to count"): the reader reads it as the same words in every document, so nothing in
the document speaks for it (on two held-out draws of generated groups, all 12 such moves were wrong).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..grounding.candidates import Candidate
from ..grounding.mention import Mention
from ..reader.agreement_reader import DIM, FLOOR, AgreementReader, AgreementReaders, Decided, weigh_with
from ..rules import RuleSet
from ..types import FixedBy, Question, Value
from .grounded_space import GroundedSpace

TOP = 6  # the likeliest values of an answer that are weighed
SIDE = 60  # characters of context read each side of a mention, within its line and its neighbours


Side = tuple[int, int] | str  # a passage of the document (character range), or words of no passage


def mention_sides(document: str, mentions: Sequence[Mention], index: int) -> tuple[Side, Side]:
    """The passages before a mention and after it (each with the mention), stopping at a line break,
    at the next mention either side, or `SIDE` characters away."""
    m = mentions[index]
    before = max([o.end for o in mentions if o.end <= m.start] + [document.rfind("\n", 0, m.start) + 1, m.start - SIDE, 0])
    line_end = document.find("\n", m.end)
    after = min([o.start for o in mentions if o.start >= m.end] + [line_end if line_end >= 0 else len(document), m.end + SIDE])
    return _stripped(document, before, m.end), _stripped(document, m.start, after)


def _stripped(document: str, start: int, end: int) -> tuple[int, int]:
    """A range without the white space at either end."""
    text = document[start:end]
    return start + len(text) - len(text.lstrip()), end - len(text) + len(text.rstrip())


def candidate_sides(document: str, candidate: Candidate, mentions: Sequence[Mention]) -> tuple[Side, Side]:
    """The passages either side of the mention a candidate copies or starts from; its derivation in words
    where it rests on no mention."""
    if not candidate.operands:
        return candidate.describe(), candidate.describe()
    return mention_sides(document, mentions, candidate.operands[0])


def side_vectors(embedder, document: str, sides: Sequence[Side]) -> torch.Tensor:
    """(N, DIM) the sentence vectors of passages of the document (remembered with it) and of words."""
    ranges = [k for k, side in enumerate(sides) if not isinstance(side, str)]
    words = [k for k, side in enumerate(sides) if isinstance(side, str)]
    out = torch.zeros((len(sides), DIM))
    if ranges:
        out[ranges] = embedder.embed_passages(document, [sides[k] for k in ranges])
    if words:
        out[words] = embedder.embed_words([sides[k] for k in words])
    return out


def weighed_values(space: GroundedSpace, chosen: int) -> list[int]:
    """Indices of the candidates weighed for an answer: its `TOP` likeliest, the chosen one among them."""
    probabilities = torch.softmax(space.choice_logits, dim=-1)[: len(space.values)]
    top = probabilities.topk(min(TOP, len(space.values))).indices.tolist()
    return top if chosen in top else [*top[:-1], chosen]


def value_odds(space: GroundedSpace, picked: Sequence[int], chosen: int, confidence: float) -> torch.Tensor:
    """(K,) log-probabilities of the weighed values: the answer's confidence on the chosen one, the rest
    shared by the others as the chooser ranks them."""
    p = min(max(confidence, FLOOR), 1 - FLOOR)
    others = torch.softmax(space.choice_logits[list(picked)].float(), dim=-1)
    others[chosen] = 0.0
    odds = others / others.sum().clamp_min(1e-12) * (1 - p)
    odds[chosen] = p
    return odds.clamp_min(FLOOR * (1 - p) / max(len(picked) - 1, 1)).log()


def grounded_answers(
    questions: Sequence[Question],
    spaces: Sequence[object],
    patterns: Sequence,
    settled: Sequence[FixedBy],
    confidences: Sequence[float],
    document: str,
    embedder,
) -> list[tuple[int, list[int], Decided]]:
    """(slot, candidate indices weighed, the answer read) for each integer or date answer the model chose
    among two or more candidates (not a comparison's boolean)."""
    found = []
    for slot, (space, how) in enumerate(zip(spaces, settled)):
        if how != "model" or not isinstance(space, GroundedSpace) or len(space.values) < 2:
            continue
        if isinstance(space.values[0], bool) or not space.candidates:
            continue
        chosen = space.chosen(patterns[slot])
        if chosen is not None:
            found.append((slot, chosen, weighed_values(space, chosen)))
    if not found:
        return []
    question_vectors = embedder.embed_questions([questions[slot].text for slot, _, _ in found])
    sides = [
        side
        for slot, _, picked in found
        for k in picked
        for side in candidate_sides(document, spaces[slot].candidates[k], spaces[slot].mentions)
    ]
    vectors = side_vectors(embedder, document, sides).reshape(len(sides) // 2, 2 * DIM)
    out, first = [], 0
    for (slot, chosen, picked), question in zip(found, question_vectors):
        index = picked.index(chosen)
        odds = value_odds(spaces[slot], picked, index, float(confidences[slot]))
        item = Decided(question, vectors[first : first + len(picked)], index, float(confidences[slot]), odds)
        out.append((slot, picked, item))
        first += len(picked)
    return out


def surer_answers(item: Decided, answers: Sequence[Decided]) -> list[Decided]:
    """The boolean and enum answers the model was surer of than of a value."""
    return [a for a in answers if a.confidence > item.confidence]


def agreed_values(
    reader: AgreementReader | AgreementReaders,
    grounded: Sequence[tuple[int, list[int], Decided]],
    answers: Sequence[Decided],
    spaces: Sequence[object],
    values: Sequence[Value],
    confidences: Sequence[float],
    rules: RuleSet,
) -> tuple[list[Value], list[float]]:
    """`values` and `confidences` with each grounded answer weighed again with the surer boolean and
    enum `answers` of its request; a change is kept where the rules still hold with it."""
    values, confidences = list(values), list(confidences)
    weighed = weigh_with(reader, [item for _, _, item in grounded], [surer_answers(item, answers) for _, _, item in grounded])
    for (slot, picked, item), probabilities in zip(grounded, weighed):
        if probabilities is None:
            continue
        best = int(probabilities.argmax())
        if best == item.chosen or not spaces[slot].candidates[picked[best]].operands:
            continue  # a value resting on no mention reads the same words in every document: nothing to weigh
        trial = list(values)
        trial[slot] = spaces[slot].values[picked[best]]
        if not rules.violations(trial):
            values, confidences[slot] = trial, float(probabilities[best])
    return values, confidences
