"""The comparison chooser: a boolean question answered by comparing two values the document gives.

Many linked questions are comparisons in disguise: "was the notice in time?" asks whether the day it
was sent is on or before a deadline (a date plus a duration), "is the wind within the limit?" whether
one number is at most another. The chooser points at a left and a right value among the document's
candidate values (a mention copied, or one step over mentions; `grounding.candidates`), each with a
value chooser of its own, and answers `true` with the probability that left <= right (or left < right,
as the question reads). Only values that count the same thing are compared (`grounding.candidates.measure`):
days between two dates with a number of days or weeks (a week counted as seven days), never with a
number of months or a bare number. A gate keeps the questions that are not comparisons with the reader: its
"write" column hands the slot back to the model's own boolean logits. In training, what the gate does
not give the comparison is answered by the question alone (`prior`, a learnt habit per question), so
the gate opens only where comparing the document's values beats answering from habit; that habit is
never used to answer.

Its three logits are a boolean slot's choice position (`decoding/grounded_space.py`): false, true,
then write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..grounding.candidates import COUNT, DERIVATIONS, Candidate, date_candidates, integer_candidates, measure
from ..grounding.mention import Mention
from .chooser_ensemble import chooser_state_with_operations, first_chooser, value_chooser
from .value_chooser import DIM, CandidateTable

SIDE_CANDIDATES = 128  # integer candidates and date candidates a comparison may take each side from
FLOOR = 1e-6  # the least probability a choice column is given, so its logit stays finite


def comparison_candidates(mentions: Sequence[Mention]) -> list[Candidate]:
    """The values either side of a comparison may take: integer candidates, then date candidates, each
    value reached by up to `DERIVATIONS` ways (a side's probability of a value is theirs summed)."""
    return [
        *integer_candidates(mentions, limit=SIDE_CANDIDATES, zero=False, derivations=DERIVATIONS, counts=False),
        *date_candidates(mentions, limit=SIDE_CANDIDATES, derivations=DERIVATIONS),
    ]


@dataclass
class ComparisonTable:
    """A document's comparison candidates as tensors: their table and how each pair compares."""

    table: CandidateTable
    less_equal: torch.Tensor  # (K, K) True where candidate i's value <= candidate j's, both of one measure
    less: torch.Tensor  # (K, K) the same for <
    comparable: torch.Tensor  # (K, K) True where both count the same thing (`measure`)

    @classmethod
    def of(cls, candidates: Sequence[Candidate], mentions: Sequence[Mention]) -> ComparisonTable:
        measures, ordinals = zip(*(_compared_as(c, mentions) for c in candidates))
        ordinal = torch.tensor(ordinals, dtype=torch.float64)
        code = {m: i for i, m in enumerate(dict.fromkeys(measures))}
        measured = torch.tensor([code[m] for m in measures])
        comparable = measured[:, None] == measured[None, :]
        return cls(
            CandidateTable.of(candidates, mentions),
            comparable & (ordinal[:, None] <= ordinal[None, :]),
            comparable & (ordinal[:, None] < ordinal[None, :]),
            comparable,
        )


def _compared_as(candidate: Candidate, mentions: Sequence[Mention]) -> tuple[str, float]:
    """What a candidate counts and the number it compares as: a date's ordinal, a number of weeks as
    that many days times seven ("2 weeks" against 10 days is 14 against 10), any other value itself."""
    counts = measure(candidate, mentions)
    if isinstance(candidate.value, dt.date):
        return counts, candidate.value.toordinal()
    if counts == "weeks":
        return "days", candidate.value * 7
    return counts, candidate.value


class ComparisonChooser(nn.Module):
    """Logits over (false, true, write) for boolean questions, from a compared pair of values."""

    def __init__(self, dim: int = DIM, sides: int = 1, answers_alone: bool = False):
        super().__init__()
        self.answers_alone = answers_alone  # its false and true are not weighed with a reader's (see the config)
        # each side as many value choosers as the model's (`sides`), with forms for the operations
        # `comparison_candidates` offers (no counts)
        self.left = value_chooser(sides, COUNT)
        self.right = value_chooser(sides, COUNT)
        self.strict = nn.Linear(dim, 1)  # whether the question reads "<" rather than "<="
        self.gate = nn.Linear(dim, 1)  # whether the question is a comparison at all
        self.prior = nn.Linear(dim, 1)  # training only: how often the question is true whatever the document

    def start_from(self, chooser: nn.Module) -> None:
        """Both sides start as the fitted value chooser, which already points at the value a question is
        about (where the sides are single choosers and it is an ensemble, as its first member, which
        reads the cue before a mention)."""
        state = (chooser if type(chooser) is type(self.left) else first_chooser(chooser)).state_dict()
        state = chooser_state_with_operations(state, COUNT)
        self.left.load_state_dict(state)
        self.right.load_state_dict(state)

    def probabilities(
        self,
        questions: torch.Tensor,  # (B, D) unit question vectors
        mentions: torch.Tensor,  # (B, M, MENTION_FEATURES)
        operations: torch.Tensor,  # (B, K)
        operands: torch.Tensor,  # (B, K, MAX_OPERANDS)
        features: torch.Tensor,  # (B, K, CANDIDATE_FEATURES)
        valid: torch.Tensor,  # (B, K)
        less_equal: torch.Tensor,  # (B, K, K)
        less: torch.Tensor,  # (B, K, K)
        comparable: torch.Tensor,  # (B, K, K)
        siblings: torch.Tensor | None = None,  # (B, K, SIBLING_FEATURES) what the group's grounded slots answer
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B,) the probability of `true` if the question is a comparison, and (B,) that it is one."""
        left, right = self.sides(questions, mentions, operations, operands, features, valid, siblings=siblings)
        return self.compare(left, right, questions, less_equal, less, comparable)

    def sides(self, *inputs: torch.Tensor, siblings: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, K) logits of each candidate as the left value, and as the right one (the first six inputs;
        `siblings` as a value chooser weighs them)."""
        return self.left(*inputs, siblings=siblings)[:, :-1], self.right(*inputs, siblings=siblings)[:, :-1]

    def compare(self, left, right, questions, less_equal, less, comparable) -> tuple[torch.Tensor, torch.Tensor]:
        """(B,) the probability of `true` and (B,) that the question is a comparison, from the sides' (B, K) logits."""
        pair = torch.softmax(left, dim=-1)[:, :, None] * torch.softmax(right, dim=-1)[:, None, :] * comparable
        mass = pair.sum(dim=(1, 2)).clamp(min=1e-12)
        at_most = (pair * less_equal).sum(dim=(1, 2)) / mass
        below = (pair * less).sum(dim=(1, 2)) / mass
        strict = torch.sigmoid(self.strict(questions)).squeeze(-1)
        compares = torch.sigmoid(self.gate(questions)).squeeze(-1)
        return strict * below + (1 - strict) * at_most, compares

    @staticmethod
    def _columns(true: torch.Tensor, compares: torch.Tensor) -> torch.Tensor:
        columns = torch.stack([compares * (1 - true), compares * true, 1 - compares], dim=-1)
        return columns.clamp(min=FLOOR).log()

    def columns(self, left, right, questions, less_equal, less, comparable) -> torch.Tensor:
        """(B, 3) log-probabilities of false, true and write from the sides' (B, K) logits."""
        return self._columns(*self.compare(left, right, questions, less_equal, less, comparable))

    def forward(self, *inputs: torch.Tensor, siblings: torch.Tensor | None = None) -> torch.Tensor:
        """(B, 3) log-probabilities of false, true and write (the reader answers)."""
        return self._columns(*self.probabilities(*inputs, siblings=siblings))

    def decide(self, *inputs: torch.Tensor, siblings: torch.Tensor | None = None) -> tuple[torch.Tensor, list[tuple[int, int]]]:
        """forward's (B, 3) log-probabilities with each question's most likely (left, right) candidate
        pair (for evidence), both from one pass of the two sides. A comparer that answers alone decides
        by its gate: a comparison answers false or true with the comparison's odds, any other question
        is handed over ("write")."""
        left, right = self.sides(*inputs[:6], siblings=siblings)
        true, compares = self.compare(left, right, inputs[0], *inputs[6:])
        if self.answers_alone:  # the gate says whether it is a comparison; if so, the comparison alone answers
            compares = (compares > 0.5).to(true.dtype)
        logits = self._columns(true, compares)
        scores = (left[:, :, None] + right[:, None, :]).masked_fill(~inputs[8], float("-inf"))
        best = scores.flatten(1).argmax(dim=-1).tolist()
        k = scores.shape[2]
        return logits, [(b // k, b % k) for b in best]


def comparison_loss(logits: torch.Tensor, answers: torch.Tensor, habit: torch.Tensor) -> torch.Tensor:
    """-log of the probability of each gold boolean, where "write" answers from habit: `true` with
    probability `habit`. logits: (B, 3); answers: (B,) bool; habit: (B,)."""
    p = logits.exp()
    gold = torch.where(answers, p[:, 1], p[:, 0])
    habitual = torch.where(answers, habit, 1 - habit)
    return -(gold + p[:, 2] * habitual).clamp(min=1e-12).log().mean()


def side_loss(logits: torch.Tensor, known: torch.Tensor) -> torch.Tensor:
    """-log of the probability a side gives its known value (summed over the candidates that reach it),
    averaged over the rows where it is known; 0 where none is. logits: (B, K) a side's; known: (B, K)."""
    rows = known.any(dim=-1)
    if not bool(rows.any()):
        return logits.sum() * 0.0
    picked = logits[rows]
    hit = picked.masked_fill(~known[rows], float("-inf")).logsumexp(dim=-1)
    return (picked.logsumexp(dim=-1) - hit).mean()
