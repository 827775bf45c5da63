"""The value chooser: which of a slot's candidate values (a mention copied, or one step over mentions)
its question asks for, or none of them (the slot writes its digits).

Questions and mentions are read by the frozen base sentence encoder (`retrieval.embedder`); the
chooser scores a candidate by what its question wants of each operand (a bilinear form per operand
role over the mention's vector and kind), plus how well the operation suits the question. Trained on
generated groups whose answers rest on known mentions (`training/value_choice.py`), its scores are
the logits of a grounded slot's choice position (`decoding/grounded_space.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..grounding.candidates import OPERATIONS, Candidate
from ..grounding.mention import DURATION_UNITS, Mention

DIM = 384  # the base sentence encoder's width
MENTION_DIM = 2 * DIM  # see retrieval.embedder.MENTION_DIM
KIND_FEATURES = 6 + len(DURATION_UNITS)  # date, number, percent, money, business, ambiguous, then the unit
RANK = 64  # width of each operand role's bilinear form
ROLES = 2  # the first operand, and every later one
MAX_OPERANDS = 4  # sums take up to four amounts
DROPOUT = 0.3  # on the frozen vectors while training: the chooser must not learn templates by heart


def kind_features(mentions: Sequence[Mention]) -> torch.Tensor:
    """(M, KIND_FEATURES) what each mention is, as 0/1 features."""
    rows = []
    for m in mentions:
        units = [float(m.unit == u) for u in DURATION_UNITS]
        rows.append([
            float(m.kind == "date"), float(m.kind == "number" and m.unit != "percent"), float(m.unit == "percent"),
            float(m.currency is not None), float(m.business), float(m.ambiguous), *units,
        ])
    return torch.tensor(rows, dtype=torch.float32).reshape(len(mentions), KIND_FEATURES)


def mention_features(embedder, text: str, mentions: Sequence[Mention]) -> torch.Tensor:
    """(M, MENTION_DIM + KIND_FEATURES) what the chooser reads of each mention: its vectors from the
    sentence encoder (`SpanEmbedder.embed_mentions`, cached per document) and its kind."""
    return torch.cat([embedder.embed_mentions(text, mentions), kind_features(mentions)], dim=1)


@dataclass
class CandidateTable:
    """A slot's candidates as tensors the chooser scores."""

    operations: torch.Tensor  # (K,) index into OPERATIONS
    operands: torch.Tensor  # (K, MAX_OPERANDS) mention indices, -1 where a candidate has fewer

    @classmethod
    def of(cls, candidates: Sequence[Candidate]) -> CandidateTable:
        operations = torch.tensor([OPERATIONS.index(c.operation) for c in candidates], dtype=torch.long)
        operands = torch.full((len(candidates), MAX_OPERANDS), -1, dtype=torch.long)
        for k, c in enumerate(candidates):
            operands[k, : len(c.operands)] = torch.tensor(c.operands, dtype=torch.long)
        return cls(operations, operands)


class ValueChooser(nn.Module):
    """Logits over each question's candidates, and a last column for writing the digits instead."""

    def __init__(self, dim: int = DIM, rank: int = RANK, dropout: float = DROPOUT):
        super().__init__()
        self.dim, self.rank = dim, rank
        self.query = nn.Linear(dim, ROLES * rank)
        self.key = nn.Linear(MENTION_DIM + KIND_FEATURES, ROLES * rank)
        self.similarity = nn.Linear(2, ROLES)  # per role, a weight on the cosine of question and mention, and of question and cue
        self.operation = nn.Linear(dim, len(OPERATIONS))
        self.write = nn.Linear(dim, 1)
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        questions: torch.Tensor,  # (B, D) unit question vectors
        mentions: torch.Tensor,  # (B, M, MENTION_DIM + KIND_FEATURES) each row's mentions, zero padded
        operations: torch.Tensor,  # (B, K) operation index per candidate
        operands: torch.Tensor,  # (B, K, MAX_OPERANDS) mention index, -1 where absent
        valid: torch.Tensor,  # (B, K) True on real candidates
    ) -> torch.Tensor:
        """(B, K + 1) logits; invalid candidates -inf; the last column is "write the digits"."""
        b, m = mentions.shape[:2]
        d = self.dim
        cosines = torch.stack([
            (mentions[..., :d] @ questions[:, :, None]).squeeze(-1),  # (B, M) question and the mention's own tokens
            (mentions[..., d : 2 * d] @ questions[:, :, None]).squeeze(-1),  # (B, M) question and the words before it
        ], dim=-1)  # (B, M, 2)
        query = self.query(self.drop(questions)).view(b, ROLES, 1, self.rank)  # (B, R, 1, r)
        key = self.key(self.drop(mentions)).view(b, m, ROLES, self.rank).transpose(1, 2)  # (B, R, M, r)
        pair = (query * key).sum(-1) / self.rank**0.5  # (B, R, M): what the question wants of each mention, per role
        pair = pair + self.similarity(cosines).transpose(1, 2)  # (B, R, M)
        present = operands >= 0  # (B, K, O)
        index = operands.clamp(min=0)  # (B, K, O)
        first = torch.gather(pair[:, 0], 1, index[..., 0])  # (B, K)
        later = torch.gather(pair[:, 1], 1, index[..., 1:].flatten(1)).view_as(index[..., 1:])  # (B, K, O-1)
        later_present = present[..., 1:].float()
        later_mean = (later * later_present).sum(-1) / later_present.sum(-1).clamp(min=1)
        scores = first + later_mean + torch.gather(self.operation(questions), 1, operations)  # (B, K)
        scores = scores.masked_fill(~valid, float("-inf"))
        return torch.cat([scores, self.write(questions)], dim=-1)


def choice_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """-log of the probability on the right columns (every candidate equal to the gold value, or
    "write" when none is), averaged. logits, target: (B, K + 1); target True on right columns."""
    total = torch.logsumexp(logits, dim=-1)
    right = torch.logsumexp(logits.masked_fill(~target, float("-inf")), dim=-1)
    return (total - right).mean()
