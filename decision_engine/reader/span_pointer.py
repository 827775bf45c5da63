"""The span pointer: which of a document's spans each question's answer rests on.

Spans and questions are embedded by the frozen base sentence encoder (`retrieval.embedder`), so a
document's span vectors are computed once and cached. The pointer scores each (question, span) pair
by a learned bilinear form over those vectors, started at their cosine, plus a learned weight on
the span's BM25 score: trained on gold evidence (`training/pointer.py`), it is what lays each
question's evidence beside it in the prefix and what every answer's `evidence` reports.
"""

from __future__ import annotations

import torch
from torch import nn

DIM = 384  # the base sentence encoder's width


class SpanPointer(nn.Module):
    """Logits (Q, S) of each question over a document's spans, from frozen sentence vectors."""

    def __init__(self, dim: int = DIM):
        super().__init__()
        self.question = nn.Linear(dim, dim, bias=False)
        nn.init.eye_(self.question.weight)  # untrained, it ranks spans by cosine
        self.scale = nn.Parameter(torch.tensor(10.0))  # cosine differences are small; softmax needs them apart
        self.lexical = nn.Parameter(torch.tensor(0.5))  # weight of the z-scored BM25 score

    def forward(self, questions: torch.Tensor, spans: torch.Tensor, lexical: torch.Tensor) -> torch.Tensor:
        """questions (Q, D), spans (S, D) unit vectors; lexical (Q, S) z-scored BM25 -> logits (Q, S)."""
        return self.scale * (self.question(questions) @ spans.T) + self.lexical * lexical


def pointer_loss(logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """-log of the probability on gold spans, averaged over questions with any.

    logits (Q, S); gold (Q, S) True on spans overlapping the question's gold evidence."""
    has = gold.any(dim=-1)
    if not has.any():
        return logits.new_zeros(())
    total = torch.logsumexp(logits, dim=-1)
    on_gold = torch.logsumexp(logits.masked_fill(~gold, float("-inf")), dim=-1)
    return (total - on_gold)[has].mean()
