"""Answer-slot layout: the prefix (questions, each marked with its slot index, then the document
context) and the answer block (the concatenation of the slots, every position masked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..backends.protocol import PrefixInput
from ..backends.vocabulary import Vocabulary
from ..types import Evidence

QUESTION_TOKENS = 96  # longest question text kept in the prefix
CHARS_PER_TOKEN_BOUND = 12  # documents are cut to budget * this many characters before tokenizing


def question_tokens(vocab: Vocabulary, texts: Sequence[str]) -> list[list[int]]:
    return [vocab.encode(t)[:QUESTION_TOKENS] for t in texts]


def context_budget(
    vocab: Vocabulary, max_positions: int, questions: Sequence[Sequence[int]], block_len: int, cap: int | None
) -> int:
    """Tokens left for document context once questions, markers, specials and the block are placed."""
    markers = sum(len(vocab.marker_ids[k]) for k in range(len(questions)))
    used = 3 + markers + sum(len(q) for q in questions) + block_len  # [CLS] [SEP] [SEP]
    budget = max_positions - used
    if cap is not None:
        budget = min(budget, cap)
    if budget < 1:
        raise ValueError("questions and answer slots leave no room for the document")
    return budget


@dataclass
class ContextChoice:
    """The document tokens shown to the model, the character ranges they came from, and evidence."""

    token_ids: list[int]
    ranges: list[tuple[int, int]]  # character offsets of the chosen text, in document order
    evidence: list[list[Evidence]]  # per question, best first


class ContextBuilder(Protocol):
    """Chooses the document tokens the model sees for some questions."""

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice: ...


class LeadingContext:
    """The first `budget` tokens of the document; no evidence."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice:
        head = document[: budget * CHARS_PER_TOKEN_BOUND]
        ids = self.vocab.encode(head)
        if len(ids) <= budget:
            return ContextChoice(ids, [(0, len(head))], [[] for _ in questions])
        ids = ids[:budget]
        shown = len(self.vocab.decode(ids))  # approximate: decoding normalises spacing and case
        return ContextChoice(ids, [(0, min(shown, len(head)))], [[] for _ in questions])


def build_prefix(
    vocab: Vocabulary,
    numbered_questions: Sequence[tuple[int, Sequence[int]]],  # (1-based slot number, question tokens)
    context: Sequence[int],
) -> PrefixInput:
    """[CLS] <marker k> question k ... [SEP] context [SEP], with each question token tagged k."""
    ids, slots = [vocab.cls_id], [0]
    for number, tokens in numbered_questions:
        piece = [*vocab.marker_ids[number - 1], *tokens]
        ids.extend(piece)
        slots.extend([number] * len(piece))
    ids.append(vocab.sep_id)
    slots.append(0)
    ids.extend(context)
    slots.extend([0] * len(context))
    ids.append(vocab.sep_id)
    slots.append(0)
    return PrefixInput(ids, slots)
