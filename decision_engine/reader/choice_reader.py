"""The choice reader: a boolean or enum question answered from the sentence vectors of its document.

Many boolean and enum questions are look-ups: was the file encrypted, is there a non-compete, did
screening find a politically exposed owner. The reader's answer positions learn them slowly, and
often settle on each question's usual answer even where the clause that decides it is in view. The
choice reader is a small head over frozen vectors the engine already has: the base sentence
encoder's vector of the question, of every span of the document (as the span pointer cuts it) and
of each choice's words ("yes" and "no" for a boolean). The question attends over the spans (four
heads), and the pooled evidence with the question scores each choice through its words' vector, so
an enum it never saw still gets an answer.

Its log-probabilities are added, per choice, to the odds of a boolean or enum slot (the slot's
`choice_bias`; for a boolean a comparison may answer, also to the comparison's false and true), so
the answer is the product of the reader's and this head's beliefs. Hypothesis slots keep the verdict
reader (`verdict_reader.py`). Several heads fitted alike from different seeds may stand as one
(`ChoiceReaderEnsemble`, the mean of their log-probabilities). `training/choice_fit.py` fits it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .absence_gate import is_hypothesis_slot

DIM = 384  # the base sentence encoder's width
WIDTH = 128  # the head's own width
HEADS = 4  # attention heads of the question over the spans
QUESTION_DROPOUT = 0.5  # in training, on the question vector: the words of a question seen once in training are not the answer
SPAN_DROPOUT = 0.3  # and on the span vectors


def choice_text(value: object) -> str:
    """The words a choice is read as: "yes" and "no" for booleans, the choice itself otherwise."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def reads_choices(values: Sequence[object]) -> bool:
    """Whether the choice reader answers a slot with these choices: booleans and enums, but not
    hypothesis slots (the verdict reader's)."""
    return len(values) > 1 and not is_hypothesis_slot(values)


def slot_choices(schema: dict) -> list | None:
    """A boolean or enum schema's choices (hypotheses left out), or None for any other slot."""
    if schema.get("type") == "boolean":
        return [False, True]
    values = schema.get("enum")
    return list(values) if values and reads_choices(values) else None


class ChoiceReader(nn.Module):
    """Logits over a question's choices from its vector, its document's span vectors and the choices'."""

    def __init__(self):
        super().__init__()
        self.query = nn.Linear(DIM, WIDTH)
        self.key = nn.Linear(DIM, WIDTH)
        self.value = nn.Linear(DIM, WIDTH)
        self.question = nn.Linear(DIM, WIDTH)
        self.choice = nn.Linear(DIM, WIDTH)
        self.mix = nn.Sequential(nn.Linear(3 * WIDTH, WIDTH), nn.GELU(), nn.Dropout(0.3), nn.Linear(WIDTH, WIDTH))
        self.question_dropout = nn.Dropout(QUESTION_DROPOUT)
        self.span_dropout = nn.Dropout(SPAN_DROPOUT)

    def forward(
        self,
        questions: torch.Tensor,  # (B, D) question vectors
        spans: torch.Tensor,  # (B, N, D) span vectors, padded
        span_mask: torch.Tensor,  # (B, N) True for real spans
        choices: torch.Tensor,  # (B, K, D) choice vectors, padded
        choice_mask: torch.Tensor,  # (B, K) True for real choices
    ) -> torch.Tensor:
        """(B, K) logits; padded choices get a large negative logit."""
        batch, n, _ = spans.shape
        head = WIDTH // HEADS
        q = self.question_dropout(questions)
        s = self.span_dropout(spans)
        keys = self.key(s).view(batch, n, HEADS, head)
        values = self.value(s).view(batch, n, HEADS, head)
        query = self.query(q).view(batch, 1, HEADS, head)
        weights = ((keys * query).sum(-1) / head**0.5).masked_fill(~span_mask[:, :, None], -1e9).softmax(dim=1)
        pooled = (weights[..., None] * values).sum(dim=1).reshape(batch, WIDTH)
        asked = self.question(q)
        state = self.mix(torch.cat([asked, pooled, asked * pooled], dim=-1))
        logits = (self.choice(choices) * state[:, None, :]).sum(-1)
        return logits.masked_fill(~choice_mask, -1e9)

    @torch.no_grad()
    def log_probs(self, questions: torch.Tensor, spans: torch.Tensor, choices: Sequence[torch.Tensor]) -> list[list[float]]:
        """Per question of one document, the log-probabilities of its choices: questions (B, D), the
        document's spans (N, D), and each question's choice vectors (K_b, D)."""
        if len(spans) == 0 or len(questions) == 0:
            return [[0.0] * len(c) for c in choices]  # nothing to read: no opinion
        like = self.query.weight
        batch, most = len(questions), max(len(c) for c in choices)
        padded = torch.zeros((batch, most, DIM))
        choice_mask = torch.zeros((batch, most), dtype=torch.bool)
        for row, vectors in enumerate(choices):
            padded[row, : len(vectors)] = vectors
            choice_mask[row, : len(vectors)] = True
        logits = self(
            questions.to(like), spans.to(like)[None].expand(batch, -1, -1),
            torch.ones((batch, len(spans)), dtype=torch.bool, device=like.device),
            padded.to(like), choice_mask.to(like.device),
        )
        read = torch.log_softmax(logits.float(), dim=-1).cpu()
        return [read[row, : len(c)].tolist() for row, c in enumerate(choices)]


class ChoiceReaderEnsemble(nn.Module):
    """Choice readers fitted alike from different seeds, read as one: the mean of their log-probabilities."""

    def __init__(self, count: int):
        super().__init__()
        self.members = nn.ModuleList(ChoiceReader() for _ in range(count))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """(B, K) the members' mean log-probabilities (ChoiceReader.forward's inputs)."""
        return torch.stack([torch.log_softmax(m(*inputs), dim=-1) for m in self.members]).mean(dim=0)

    @torch.no_grad()
    def log_probs(self, questions: torch.Tensor, spans: torch.Tensor, choices: Sequence[torch.Tensor]) -> list[list[float]]:
        """As ChoiceReader.log_probs, from the members' mean log-probabilities, normalised again."""
        reads = [m.log_probs(questions, spans, choices) for m in self.members]
        out = []
        for per_member in zip(*reads):
            mean = torch.tensor(per_member).mean(dim=0)
            out.append(torch.log_softmax(mean, dim=-1).tolist())
        return out


def choice_reader(count: int = 1) -> nn.Module:
    """One choice reader, or an ensemble of `count`."""
    if count < 1:
        raise ValueError("a choice reader needs at least one head")
    return ChoiceReader() if count == 1 else ChoiceReaderEnsemble(count)
