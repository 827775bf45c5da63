"""The cross reader: a boolean or enum question, its choices and its evidence read as one text.

The choice reader (`choice_reader.py`) scores choices from sentence vectors made apart from the
question, and a sentence vector barely tells "the deposit is registered with a scheme" from "the
deposit has not been placed in a scheme". The cross reader reads the words themselves: the pinned
base encoder reads "[CLS] question Answer: yes / no [SEP] evidence [SEP]", where the evidence is the
first `PASSAGES` spans the evidence pointer ranks for that question, and each choice's score is a
head over the mean state of that choice's own tokens, so the choice words are read in the light of
the question and the clauses beside them, and an enum it never saw still gets an answer.

Like the verdict reader (whose low-rank machinery it shares) only low-rank updates of the base
encoder's projections and the head are trained and saved. Its log-probabilities are added to the
odds of every boolean and enum slot that is not a hypothesis (`decoding/layout.py`), beside the
choice reader's. `training/cross_fit.py` fits it on generated groups.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .choice_reader import choice_text, reads_choices
from .verdict_reader import DIM, MAX_TOKENS, PASSAGES, VerdictReader

ANSWER_CUE = " Answer: "  # between the question and its choices
CHOICE_GAP = " / "  # between two choices
MAX_CHOICES = 12  # a slot with more choices is left to the other readers
MAX_CHOICE_CHARS = 120  # and one whose choices are longer than this in all
QUESTION_WORDS = 64  # a longer question is read up to this many words
FIRST_TOKENS = 200  # and fewer where the question with its choices would take more tokens than this


class CrossReader(VerdictReader):
    """Low-rank updates of the base encoder (as `VerdictReader`) and a head that scores each choice."""

    def __init__(self, rank: int = 8, wide: bool = False):
        super().__init__(rank, wide)
        self.head = nn.Linear(DIM, 1)

    def choice_logits(self, encoder: nn.Module, encoded: dict, choice_tokens: torch.Tensor) -> torch.Tensor:
        """(N, K) each choice's score, from `tokenize_choices`' output; padded choices get -1e9."""
        hidden = encoder(**encoded).last_hidden_state  # (N, T, D)
        weights = choice_tokens.to(hidden.dtype)  # (N, K, T)
        counts = weights.sum(-1, keepdim=True)
        states = (weights @ hidden) / counts.clamp(min=1.0)  # (N, K, D)
        scores = self.head(states.to(self.head.weight.dtype)).squeeze(-1)
        return scores.masked_fill(counts.squeeze(-1) == 0, -1e9)

    def choice_log_probs(
        self, questions: Sequence[str], choices: Sequence[Sequence[object]], evidence: Sequence[Sequence[str]]
    ) -> list[list[float]]:
        """Per question, the log-probabilities of its choices, read beside its evidence (best first)."""
        if not questions:
            return []
        with self._lock, torch.inference_mode():
            encoder, tokenizer = self.encoder()
            encoded, choice_tokens = tokenize_choices(tokenizer, questions, choices, evidence)
            device = self.down.device
            logits = self.choice_logits(encoder, {k: v.to(device) for k, v in encoded.items()}, choice_tokens.to(device))
            read = logits.float().log_softmax(dim=-1).cpu()
        return [read[row, : len(c)].tolist() for row, c in enumerate(choices)]


def first_segment(question: str, choices: Sequence[object]) -> tuple[str, list[tuple[int, int]]]:
    """The question and its choices as one text, and each choice's character range in it."""
    text = " ".join(question.split()[:QUESTION_WORDS]) + ANSWER_CUE
    ranges = []
    for k, value in enumerate(choices):
        if k:
            text += CHOICE_GAP
        words = " ".join(choice_text(value).split()) or "?"
        ranges.append((len(text), len(text) + len(words)))
        text += words
    return text, ranges


def _fitting_segment(tokenizer, question: str, choices: Sequence[object]) -> tuple[str, list[tuple[int, int]]]:
    """`first_segment`, its question cut by halves until it takes at most `FIRST_TOKENS` tokens (the
    choices alone always fit: at most `MAX_CHOICES` of them, `MAX_CHOICE_CHARS` characters in all)."""
    words = question.split()[:QUESTION_WORDS]
    while True:
        text, ranges = first_segment(" ".join(words), choices)
        if not words or len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= FIRST_TOKENS:
            return text, ranges
        words = words[: len(words) // 2]


def tokenize_choices(
    tokenizer, questions: Sequence[str], choices: Sequence[Sequence[object]], evidence: Sequence[Sequence[str]]
) -> tuple[dict, torch.Tensor]:
    """Padded (question with choices, evidence) pairs, the evidence cut to fit `MAX_TOKENS`, and a
    (N, K, T) 0/1 tensor marking each choice's tokens (K the most choices of any question)."""
    firsts = [_fitting_segment(tokenizer, q, c) for q, c in zip(questions, choices, strict=True)]
    passages = [" ".join(" ".join(span.split()) for span in spans[:PASSAGES]) for spans in evidence]
    encoded = tokenizer(
        [text for text, _ in firsts], passages, truncation="only_second", max_length=MAX_TOKENS, padding=True,
        return_tensors="pt", return_offsets_mapping=True,
    )
    offsets = encoded.pop("offset_mapping")
    most = max(len(c) for c in choices)
    marks = torch.zeros((len(questions), most, offsets.shape[1]))
    for row, (_, ranges) in enumerate(firsts):
        in_first = [i for i, s in enumerate(encoded.sequence_ids(row)) if s == 0]
        for k, (start, end) in enumerate(ranges):
            for i in in_first:
                a, b = offsets[row, i].tolist()
                if b > a and start <= a and b <= end:
                    marks[row, k, i] = 1.0
    return dict(encoded), marks


def reads_across(values: Sequence[object]) -> bool:
    """Whether the cross reader answers a slot with these choices: those the choice reader answers
    (booleans and enums, not hypotheses), as long as the choices fit beside the question
    (at most `MAX_CHOICES`, `MAX_CHOICE_CHARS` characters in all)."""
    return (
        reads_choices(values) and len(values) <= MAX_CHOICES
        and sum(len(choice_text(v)) for v in values) <= MAX_CHOICE_CHARS
    )
