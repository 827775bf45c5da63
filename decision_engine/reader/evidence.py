"""The evidence an answer reports: the document spans that hold most of its question's pointer mass."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..retrieval.spans import Span, split_spans

EVIDENCE_SPANS = 3  # spans reported per answer, best first
SPAN_CHARS = 400  # longest evidence span


def span_token_index(spans: Sequence[Span], offsets: torch.Tensor) -> torch.Tensor:
    """(N,) index of the span each document token falls in (by its first character); -1 between spans."""
    starts = torch.tensor([s.start for s in spans], dtype=torch.long)
    ends = torch.tensor([s.end for s in spans], dtype=torch.long)
    first = offsets[:, 0].contiguous()
    index = torch.searchsorted(starts, first, right=True) - 1  # last span starting at or before the token
    inside = (index >= 0) & (first < ends[index.clamp(min=0)])
    return torch.where(inside, index, torch.full_like(index, -1))


def pointed_spans(
    text: str,
    spans: Sequence[Span],
    token_span: torch.Tensor,  # (N,) from span_token_index
    pointer: torch.Tensor,  # (N,) one question's pointer logits over the document's tokens
    count: int = EVIDENCE_SPANS,
) -> list[tuple[Span, float]]:
    """The `count` spans with the most pointer probability, each with that probability, best first."""
    if not spans or pointer.numel() == 0:
        return []
    weights = pointer.float().softmax(dim=0)
    inside = token_span >= 0
    mass = torch.zeros(len(spans), dtype=torch.float32).index_add_(0, token_span[inside], weights[inside])
    best = torch.argsort(mass, descending=True, stable=True)[:count].tolist()
    return [(spans[i], float(mass[i])) for i in best if mass[i] > 0]


def document_spans(text: str) -> list[Span]:
    return split_spans(text, SPAN_CHARS)
