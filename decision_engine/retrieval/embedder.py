"""Sentence embeddings of spans and questions with all-MiniLM-L6-v2, cached per document.

The model loads on first use, never at import: a web server imports this module.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..int8 import per_token_int8
from ..model.loader import base_model_dir
from ..precision import computing_in, keep_weight_copies
from .packed_encoder import packed_hidden_states
from .spans import Span

WINDOW_BEFORE = 240  # characters of context read before a mention
WINDOW_AFTER = 80  # and after it


def mention_window(text: str, mention) -> tuple[int, int]:
    """The character range a mention is read in: its line, cut to the window around it, on word bounds."""
    line_start = text.rfind("\n", 0, mention.start) + 1
    line_end = text.find("\n", mention.end)
    line_end = len(text) if line_end < 0 else line_end
    start = max(line_start, mention.start - WINDOW_BEFORE)
    end = min(line_end, mention.end + WINDOW_AFTER)
    if start > line_start:
        space = text.find(" ", start, mention.start)
        start = space + 1 if space >= 0 else start
    if end < line_end:
        space = text.rfind(" ", mention.end, end)
        end = space if space >= 0 else end
    return start, end


def mention_sentence(text: str, mention, window: tuple[int, int]) -> tuple[int, int]:
    """The character range of the sentence a mention stands in, within its window: from just after the
    last ". " or "; " before it to just after the first one after it."""
    a, b = window
    cut = max(text.rfind(". ", a, mention.start), text.rfind("; ", a, mention.start))
    ends = [i for i in (text.find(". ", mention.end, b), text.find("; ", mention.end, b)) if i >= 0]
    return (cut + 2 if cut >= 0 else a), (min(ends) + 1 if ends else b)


def mention_token_parts(
    offsets: Sequence[tuple[int, int]], mention, sentence: tuple[int, int]
) -> tuple[list[int], list[int], list[int]]:
    """Which tokens (their document character offsets; empty ones are skipped) a mention is read by:
    its own, the `CUE_TOKENS` before it, and the `AROUND_TOKENS` before and after it within its
    `sentence` (a character range)."""
    first, last = sentence
    own = [t for t, (a, b) in enumerate(offsets) if b > a and a < mention.end and b > mention.start]
    before = [t for t, (a, b) in enumerate(offsets) if b > a and b <= mention.start]
    after = [t for t, (a, b) in enumerate(offsets) if b > a and a >= mention.end and b <= last]
    near = [t for t in before if offsets[t][0] >= first]
    around = near[max(len(near) - AROUND_TOKENS[0], 0) :] + after[: AROUND_TOKENS[1]]
    return own, before[-CUE_TOKENS:], around


DIM = 384  # all-MiniLM-L6-v2 embedding width
MENTION_DIM = 3 * DIM  # a mention's own tokens, the words just before it, and the words on both sides
CUE_TOKENS = 8  # tokens before a mention that say what it is ("moved out on", "deposit of")
AROUND_TOKENS = (16, 16)  # tokens before and after a mention read together, whichever side says what it is
MAX_TOKENS = 128  # sentence-transformers uses 256; spans are at most a few hundred characters
BATCH_SIZE = 16  # texts per encoder call, sorted by length: little padding (64 padded a document's spans by 60%)
QUESTION_CACHE = 4096  # questions repeat across requests (e.g. the 17 ContractNLI hypotheses)
WORD_CACHE = 4096  # a choice's words ("yes", "no", an enum's values) and fixed phrases recur across every group
PASSAGE_CACHE = 8192  # short passages of documents (a mention's sides), about 1.5 KB each
STATE_CACHE = 4  # documents whose spans' token states are kept for reading their mentions (`mentions_in_spans`)


def pool_mention(
    row: torch.Tensor, hidden: torch.Tensor, offsets: Sequence[tuple[int, int]], mention, sentence: tuple[int, int]
) -> bool:
    """Write into `row` (MENTION_DIM) the unit-length means of the token states (`hidden`, (T, DIM),
    at document `offsets`) that read `mention` (`mention_token_parts`); a part without tokens stays as
    it was. Returns whether the mention had tokens of its own."""
    parts = mention_token_parts(offsets, mention, sentence)
    for part, tokens in enumerate(parts):
        if tokens:
            vector = hidden[tokens].mean(dim=0)
            row[part * DIM : (part + 1) * DIM] = torch.nn.functional.normalize(vector, dim=0)
    return bool(parts[0])


@dataclass(frozen=True)
class SpanStates:
    """One span as the encoder read it: its tokens' document offsets and last hidden states (T, DIM)."""

    offsets: list[tuple[int, int]]
    states: torch.Tensor


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    size: int  # documents held
    max_size: int


class SpanEmbedder:
    """Mean-pooled, L2-normalised MiniLM embeddings, with an LRU cache of span embeddings per document."""

    def __init__(
        self,
        cache_size: int = 256,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = BATCH_SIZE,
        device: str = "cpu",
        mentions_in_spans: bool = False,
    ):
        self.cache_size = cache_size
        # read value mentions from the token states of the spans the pointer embeds, not from windows of
        # their own (`_mention_vectors`): a new document costs the encoder its spans only
        self.mentions_in_spans = mentions_in_spans
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.device = torch.device(device)
        self.dtype = torch.float32  # what the encoder computes in (`compute_in`)
        self._span_model: Any = None  # an int8 copy that reads documents' spans (`quantize_int8`)
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.RLock()
        self._documents: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._questions: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._words: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._mentions: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._passages: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._span_states: OrderedDict[tuple, list[SpanStates]] = OrderedDict()
        self._hits = 0
        self._misses = 0

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModel, AutoTokenizer

        folder = str(base_model_dir())
        self._tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self._model = AutoModel.from_pretrained(folder, local_files_only=True).to(self.device).eval()
        keep_weight_copies(self._model, self.dtype)

    def quantize_int8(self) -> None:
        """Read documents' spans with an int8 copy of the encoder from now on (`int8.Int8Linear`, one
        scale per token: the vectors stay within a cosine of about 3e-3 of float32's). Spans are most of
        a new document's reading and their vectors only rank them for the pointer; value mentions,
        questions and words stay float32, since the value choosers tell near-identical mentions apart
        by their vectors (in int8 they moved a sample's date). Span vectors already kept are forgotten.
        Where mentions are read in spans (`mentions_in_spans`) the spans stay float32 for the same reason."""
        with self._lock:
            if self._span_model is not None:
                return
            self._load()
            self._span_model = copy.deepcopy(self._model)
            per_token_int8(self._span_model)
            self._documents.clear()

    def compute_in(self, dtype: torch.dtype) -> None:
        """Run the encoder in `dtype` from now on (autocast), its linear layers keeping copies in it."""
        with self._lock:
            self.dtype = dtype
            if self._model is not None:
                keep_weight_copies(self._model, dtype)

    def embed(self, texts: list[str], spans: bool = False) -> torch.Tensor:
        """(N, 384) unit-length embeddings, float32 on the CPU, in the order of `texts`; `spans`: they are
        a document's spans (read in int8 after `quantize_int8`)."""
        out = torch.zeros((len(texts), DIM), dtype=torch.float32)
        if not texts:
            return out
        with self._lock, torch.inference_mode():
            self._load()
            ids = self._tokenizer(list(texts), truncation=True, max_length=self.max_tokens)["input_ids"]
            for row, hidden in enumerate(self._hidden_states(ids, spans)):  # (T, 384) each
                out[row] = torch.nn.functional.normalize(hidden.mean(dim=0), p=2, dim=0)
        return out

    def embed_questions(self, questions: list[str]) -> torch.Tensor:
        """(Q, 384) embeddings of questions, remembered across calls."""
        return self._remembered(self._questions, QUESTION_CACHE, questions, questions)

    def embed_words(self, words: list[str]) -> torch.Tensor:
        """(N, 384) embeddings of choices' words and fixed phrases, remembered across calls and kept when
        the questions are forgotten: a new group's choices are mostly words seen before."""
        return self._remembered(self._words, WORD_CACHE, words, words)

    def embed_passages(self, document_text: str, ranges: Sequence[tuple[int, int]]) -> torch.Tensor:
        """(N, 384) embeddings of passages of a document given as character ranges, each remembered
        with its document (a new group's questions about it find them)."""
        digest = hashlib.sha256(document_text.encode("utf-8")).hexdigest()
        keys = [(digest, start, end) for start, end in ranges]
        return self._remembered(self._passages, PASSAGE_CACHE, keys, [document_text[a:b] for a, b in ranges])

    def _remembered(self, cache: OrderedDict, limit: int, keys: Sequence, texts: Sequence[str]) -> torch.Tensor:
        """(N, 384) the vectors of `texts` under `keys` in an LRU `cache` of at most `limit` rows, only
        those it lacks embedded (once each)."""
        with self._lock:
            missing = {k: t for k, t in zip(keys, texts) if k not in cache}
            if missing:
                for key, row in zip(missing, self.embed(list(missing.values()))):
                    cache[key] = row
            rows = []
            for key in keys:
                cache.move_to_end(key)
                rows.append(cache[key])
            while len(cache) > limit:
                cache.popitem(last=False)
            return torch.stack(rows) if rows else torch.zeros((0, DIM))

    def embed_spans(self, document_text: str, spans: list[Span]) -> torch.Tensor:
        """(S, 384) embeddings of a document's spans; repeated documents come from the cache."""
        digest = hashlib.sha256(document_text.encode("utf-8")).hexdigest()
        key = (digest, tuple((s.start, s.end) for s in spans))
        with self._lock:
            cached = self._documents.get(key)
            if cached is not None:
                self._hits += 1
                self._documents.move_to_end(key)
                return cached
            self._misses += 1
            if self.mentions_in_spans:  # their token states stay for the mentions (or were kept by them)
                read = self._span_states.get(key)
                vectors = self._pooled(read if read is not None else self._read_span_states(key, spans))
            else:
                vectors = self.embed([s.text for s in spans], spans=True)
            if self.cache_size > 0:
                self._documents[key] = vectors
                while len(self._documents) > self.cache_size:
                    self._documents.popitem(last=False)
            return vectors

    def span_vectors(self, documents: Sequence[str]) -> list[tuple[str, list[Span], torch.Tensor]]:
        """Each document cut into spans as the pointer cuts it, and their vectors, embedded together (one
        large batch on a GPU serves many documents): what `remember_spans` takes."""
        from .context import SPAN_CHARS
        from .spans import split_spans

        cut = [(text, split_spans(text, SPAN_CHARS)) for text in dict.fromkeys(documents)]
        vectors = self.embed([s.text for _, spans in cut for s in spans], spans=True)
        out, first = [], 0
        for text, spans in cut:
            out.append((text, spans, vectors[first : first + len(spans)]))
            first += len(spans)
        return out

    def remember_spans(self, embedded: Sequence[tuple[str, list[Span], torch.Tensor]]) -> None:
        """Keep span vectors computed elsewhere (`span_vectors`), so `embed_spans` finds them cached."""
        with self._lock:
            for text, spans, vectors in embedded:
                key = (hashlib.sha256(text.encode("utf-8")).hexdigest(), tuple((s.start, s.end) for s in spans))
                self._documents[key] = vectors
                self._documents.move_to_end(key)
            while self.cache_size > 0 and len(self._documents) > self.cache_size:
                self._documents.popitem(last=False)

    def embed_mentions(self, document_text: str, mentions: Sequence) -> torch.Tensor:
        """(M, MENTION_DIM) vectors of value mentions read in their span: the mean of the mention's
        own token states, the mean of the `CUE_TOKENS` before it, and the mean of the `AROUND_TOKENS`
        before and after it together ("signed on 7 May" and "7 May: signed" alike), each unit length."""
        digest = hashlib.sha256(document_text.encode("utf-8")).hexdigest()
        key = (digest, tuple((m.start, m.end) for m in mentions))
        with self._lock:
            cached = self._mentions.get(key)
            if cached is not None:
                self._mentions.move_to_end(key)
                return cached
            vectors = self._mention_vectors(document_text, mentions)
            if self.cache_size > 0:
                self._mentions[key] = vectors
                while len(self._mentions) > self.cache_size:
                    self._mentions.popitem(last=False)
            return vectors

    def _mention_vectors(self, text: str, mentions: Sequence) -> torch.Tensor:
        out = torch.zeros((len(mentions), MENTION_DIM), dtype=torch.float32)
        if not mentions:
            return out
        rest = list(range(len(mentions)))
        if self.mentions_in_spans:
            rest = self._read_in_spans(text, mentions, out)
        if rest:
            out[rest] = 0.0
            self._read_in_windows(text, [mentions[i] for i in rest], out, rest)
        return out

    def _read_in_windows(self, text: str, mentions: Sequence, out: torch.Tensor, rows: Sequence[int]) -> None:
        """Fill `out[rows]` with the mentions read each in its own window of its line (`mention_window`)."""
        windows = [mention_window(text, m) for m in mentions]
        pieces = sorted({w for w in windows})
        index = {w: i for i, w in enumerate(pieces)}
        with torch.inference_mode():
            self._load()
            encoded = self._tokenizer(
                [text[a:b] for a, b in pieces], truncation=True, max_length=self.max_tokens, return_offsets_mapping=True
            )
            states = self._hidden_states(encoded["input_ids"])
        for row, mention, window in zip(rows, mentions, windows):
            offsets = [(a + window[0], b + window[0]) for a, b in encoded["offset_mapping"][index[window]]]
            pool_mention(out[row], states[index[window]], offsets, mention, mention_sentence(text, mention, window))

    def _read_in_spans(self, text: str, mentions: Sequence, out: torch.Tensor) -> list[int]:
        """Fill `out` with the mentions read in the token states of the spans holding them (the pointer's
        cut, kept from its reading or read now); returns the rows no span holds whole, to be read alone."""
        from .context import SPAN_CHARS
        from .spans import split_spans

        spans = split_spans(text, SPAN_CHARS)
        key = (hashlib.sha256(text.encode("utf-8")).hexdigest(), tuple((s.start, s.end) for s in spans))
        with self._lock:
            read = self._span_states.get(key)
            if read is None:
                read = self._read_span_states(key, spans)
            self._span_states.move_to_end(key)
        starts = [s.start for s in spans]
        rest = []
        for row, mention in enumerate(mentions):
            k = bisect.bisect_right(starts, mention.start) - 1
            if k < 0 or mention.end > spans[k].end:
                rest.append(row)
                continue
            sentence = mention_sentence(text, mention, (spans[k].start, spans[k].end))
            if not pool_mention(out[row], read[k].states, read[k].offsets, mention, sentence):
                rest.append(row)  # its tokens fell past the span's token limit
        return rest

    def _read_span_states(self, key: tuple, spans: Sequence[Span]) -> list[SpanStates]:
        """Read `spans` (one document's, under `key`) with the float encoder and keep each one's token
        states and their document offsets for its mentions (`STATE_CACHE` documents at most)."""
        if not spans:
            return []
        with self._lock, torch.inference_mode():
            self._load()
            encoded = self._tokenizer(
                [s.text for s in spans], truncation=True, max_length=self.max_tokens, return_offsets_mapping=True
            )
            states = self._hidden_states(encoded["input_ids"])
            read = [
                SpanStates([(a + s.start, b + s.start) for a, b in offsets], hidden)
                for s, offsets, hidden in zip(spans, encoded["offset_mapping"], states)
            ]
            self._span_states[key] = read
            while len(self._span_states) > STATE_CACHE:
                self._span_states.popitem(last=False)
            return read

    @staticmethod
    def _pooled(read: Sequence[SpanStates]) -> torch.Tensor:
        """(S, 384) each span's mean token state, unit length: what `embed` gives for the same texts."""
        out = torch.zeros((len(read), DIM), dtype=torch.float32)
        for row, span in enumerate(read):
            out[row] = torch.nn.functional.normalize(span.states.mean(dim=0), p=2, dim=0)
        return out

    def _hidden_states(self, ids: list[list[int]], spans: bool = False) -> list[torch.Tensor]:
        """Each tokenized text's last hidden states (T, D), read packed without padding
        (`packed_encoder`); `spans`: a document's spans, read by the int8 copy where there is one."""
        encoder = self._span_model if spans and self._span_model is not None else self._model
        with computing_in(self.dtype, self.device):
            return packed_hidden_states(encoder, ids, self.batch_size, self.device)

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._documents), self.cache_size)

    def forget_questions(self) -> None:
        """Forget the questions' vectors (a new group's questions are embedded afresh); keep the documents'
        and the choices' words'."""
        with self._lock:
            self._questions.clear()

    def clear_cache(self) -> None:
        with self._lock:
            self._documents.clear()
            self._questions.clear()
            self._words.clear()
            self._mentions.clear()
            self._passages.clear()
            self._span_states.clear()
            self._hits = self._misses = 0
