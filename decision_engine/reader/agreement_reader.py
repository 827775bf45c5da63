"""The agreement reader: how the surer answers of a joint request move a boolean or enum answer.

Linked questions often settle each other: a breach file is rated compliant only when the authority
and the individuals were told in time, a purchase needs three quotes only above a threshold. Once
the denoiser has answered a group, each boolean or enum answer the model chose is weighed again
against the answers of the same request the model was surer of (a higher confidence), as threshold
decoding settles the surest first: its calibrated confidence, spread as odds over its choices, plus
one learnt score per choice summed over those surer answers. A choice and a surer answer are each read
as the product of a projection of its question's sentence vector and one of its choice's words'
vector (the frozen base sentence encoder's), so a score depends on which question said what, and what
was learnt from one wording carries to another. Fitted on generated training groups the model
decided itself (`training/agreement_fit.py`). A second one, whose choices are an integer or date
answer's likeliest values, each read by the passages around its mention, weighs those answers
(`decoding/value_agreement.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

DIM = 384  # the base sentence encoder's width
RANK = 64  # width of the product form between a choice and a surer answer
DROPOUT = 0.6  # on the frozen vectors while training: wordings seen in training are not the point
FLOOR = 1e-3  # the least probability an answer's odds give any choice


@dataclass(frozen=True)
class Decided:
    """One boolean or enum answer of a request as the agreement reader reads it."""

    question: torch.Tensor  # (DIM,) the question's sentence vector
    choices: torch.Tensor  # (K, words) each choice's words' vector (a value's: its two passages')
    chosen: int  # index of the chosen choice
    confidence: float  # its calibrated confidence
    prior: torch.Tensor | None = None  # (K,) its own log-odds of the choices; None: `answer_odds`


class AgreementReader(nn.Module):
    """Per choice of one answer, a score from the surer answers of its request."""

    def __init__(self, rank: int = RANK, words: int = DIM):
        super().__init__()
        # a choice of the answer weighed again, and a surer answer of the same request, each read as the
        # product of its question's projection and its choice's: which question it is and what it says
        self.choice_question = nn.Linear(DIM, rank)
        self.choice_words = nn.Linear(words, rank)  # `words` wide: a choice's words, or a value's context
        self.answer_question = nn.Linear(DIM, rank)
        self.answer_words = nn.Linear(DIM, rank)
        nn.init.zeros_(self.answer_words.weight)  # unfitted, it moves no answer
        nn.init.zeros_(self.answer_words.bias)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, choices: torch.Tensor, answers: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """(B, K) scores. choices: (B, K, DIM + words) each choice read with its question; answers: (B, S, 2 DIM)
        the surer answers, each read with its question; present: (B, S) which of them are real."""
        choices, answers = self.dropout(choices), self.dropout(answers)
        weighed = self.choice_question(choices[..., :DIM]) * self.choice_words(choices[..., DIM:])  # (B, K, R)
        surer = self.answer_question(answers[..., :DIM]) * self.answer_words(answers[..., DIM:])  # (B, S, R)
        surer = (surer * present[..., None]).sum(dim=1)  # (B, R)
        return (weighed @ surer[..., None]).squeeze(-1)


class AgreementReaders(nn.Module):
    """Agreement readers fitted alike, each on its own draw of training groups, read as one: the mean of
    their scores."""

    def __init__(self, count: int, words: int = DIM):
        super().__init__()
        self.members = nn.ModuleList(AgreementReader(words=words) for _ in range(count))

    def forward(self, choices: torch.Tensor, answers: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """(B, K) the members' mean scores (AgreementReader.forward's inputs)."""
        return torch.stack([m(choices, answers, present) for m in self.members]).mean(dim=0)


def agreement_reader(count: int = 1, words: int = DIM) -> AgreementReader | AgreementReaders:
    """One agreement reader, or `count` read as one."""
    if count < 1:
        raise ValueError("an agreement reader needs at least one head")
    return AgreementReader(words=words) if count == 1 else AgreementReaders(count, words)


def answer_odds(count: int, chosen: int, confidence: float) -> torch.Tensor:
    """(count,) log-probabilities of an answer's choices: its confidence on the chosen one, the rest
    shared evenly by the others."""
    p = min(max(confidence, FLOOR), 1 - FLOOR)
    odds = torch.full((count,), (1 - p) / max(count - 1, 1))
    odds[chosen] = p
    return odds.log()


def prior_odds(item: Decided) -> torch.Tensor:
    """(K,) an answer's own log-odds of its choices before the surer answers weigh in."""
    return item.prior if item.prior is not None else answer_odds(len(item.choices), item.chosen, item.confidence)


def read_choices(item: Decided) -> torch.Tensor:
    """(K, DIM + words) each choice read beside its question."""
    return torch.cat([item.question.expand(len(item.choices), -1), item.choices], dim=-1)


def read_answer(item: Decided) -> torch.Tensor:
    """(2 DIM,) the answer given, read beside its question."""
    return torch.cat([item.question, item.choices[item.chosen]])


def surer_than(items: Sequence[Decided], index: int) -> list[int]:
    """The answers of a request its model was surer of than the one at `index`."""
    return [j for j, other in enumerate(items) if j != index and other.confidence > items[index].confidence]


def weigh_again(reader: AgreementReader | AgreementReaders, items: Sequence[Decided]) -> list[torch.Tensor | None]:
    """Per answer, its (K,) probabilities weighed with the answers surer than it, or None where none is."""
    return weigh_with(reader, items, [[items[j] for j in surer_than(items, i)] for i in range(len(items))])


def weigh_with(
    reader: AgreementReader | AgreementReaders, items: Sequence[Decided], surer: Sequence[Sequence[Decided]]
) -> list[torch.Tensor | None]:
    """Per answer, its (K,) probabilities weighed with the answers `surer` gives it, or None where none is."""
    asked = [i for i in range(len(items)) if surer[i]]
    out: list[torch.Tensor | None] = [None] * len(items)
    if not asked:
        return out
    choices, answers, present = batch([items[i] for i in asked], [surer[i] for i in asked])
    with torch.no_grad():
        scores = reader(choices, answers, present)
    for row, i in enumerate(asked):
        count = len(items[i].choices)
        out[i] = torch.softmax(prior_odds(items[i]) + scores[row, :count], dim=-1)
    return out


def batch(
    targets: Sequence[Decided], surer: Sequence[Sequence[Decided]]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reader's inputs for answers `targets`, each with its surer answers, padded: choices (B, K, DIM + words),
    answers (B, S, 2 DIM) and which answers are present (B, S)."""
    k = max(len(t.choices) for t in targets)
    s = max(max((len(group) for group in surer), default=0), 1)
    choices = torch.zeros((len(targets), k, DIM + targets[0].choices.shape[-1]))
    answers = torch.zeros((len(targets), s, 2 * DIM))
    present = torch.zeros((len(targets), s))
    for row, (target, group) in enumerate(zip(targets, surer)):
        choices[row, : len(target.choices)] = read_choices(target)
        for col, item in enumerate(group):
            answers[row, col] = read_answer(item)
            present[row, col] = 1.0
    return choices, answers, present
