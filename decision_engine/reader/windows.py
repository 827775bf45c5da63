"""Cutting a tokenized document into overlapping encoder windows, each token kept from one window.

A window holds at most `WINDOW_TOKENS` document tokens between [CLS] and [SEP]. Consecutive windows,
spread evenly, overlap by at least `OVERLAP_TOKENS`; a token inside an overlap takes its states from the window in which it
sits farther from the edge, so every token keeps at least half an overlap of context on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backends.vocabulary import Vocabulary

WINDOW_TOKENS = 510  # document tokens per window: 512 positions less [CLS] and [SEP]
OVERLAP_TOKENS = 128  # tokens shared by consecutive windows


@dataclass(frozen=True)
class DocumentTokens:
    """A document's token ids and, per token, its character offsets into the text."""

    ids: list[int]
    offsets: list[tuple[int, int]]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Window:
    """Document tokens [start, end) are encoded together; tokens [keep_start, keep_end) keep these states."""

    start: int
    end: int
    keep_start: int
    keep_end: int


def tokenize_document(vocab: Vocabulary, text: str) -> DocumentTokens:
    """Token ids and character offsets of the whole document, without special tokens."""
    encoded = vocab.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return DocumentTokens(list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]])


def plan_windows(n_tokens: int, window: int = WINDOW_TOKENS, overlap: int = OVERLAP_TOKENS) -> list[Window]:
    """Windows covering `n_tokens` tokens; the kept ranges partition [0, n_tokens) in order."""
    if window < 1 or not 0 <= overlap < window:
        raise ValueError(f"need window >= 1 and 0 <= overlap < window, got {window} and {overlap}")
    if n_tokens <= window:
        return [Window(0, n_tokens, 0, n_tokens)]
    count = -(-(n_tokens - overlap) // (window - overlap))  # fewest windows that overlap by >= `overlap`
    starts = [round(i * (n_tokens - window) / (count - 1)) for i in range(count)]
    windows: list[Window] = []
    for start in starts:
        keep_start = 0
        if windows:
            previous = windows[-1]
            keep_start = (previous.end + start) // 2  # the middle of the overlap with the previous window
            windows[-1] = Window(previous.start, previous.end, previous.keep_start, keep_start)
        windows.append(Window(start, start + window, keep_start, n_tokens))
    return windows
