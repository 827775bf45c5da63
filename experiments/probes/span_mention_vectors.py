"""Probe: each value mention read in the span pointer's pass over the span that holds it, instead of
a pass of its own over the mention's line (`SpanEmbedder._mention_vectors`). The tokens read are the
same (its own, the cue before it, the cue around it, all within its line window); only the text the
encoder sees around them changes. If the span pointer's pass were kept, the engine would save that
second pass over the document's lines on every cold request.

Runs any decision-engine command with the patch in place, e.g.
    python experiments/probes/span_mention_vectors.py fit-chooser --out runs/spanmen --validation validation.jsonl
    python experiments/probes/span_mention_vectors.py eval --path validation.jsonl --modes joint --model runs/spanmen --json
Here the spans are encoded again for the mentions, so this measures answers, not time.
"""

from __future__ import annotations

import sys

import torch

from decision_engine.retrieval import embedder as E
from decision_engine.retrieval.context import SPAN_CHARS
from decision_engine.retrieval.spans import split_spans

_line_vectors = E.SpanEmbedder._mention_vectors


def span_mention_vectors(self, text, mentions):
    """(M, MENTION_DIM) as `_mention_vectors`, each mention read in the span holding it; a mention no
    span holds whole, or past a span's truncation, is read in its line as before."""
    out = torch.zeros((len(mentions), E.MENTION_DIM), dtype=torch.float32)
    if not mentions:
        return out
    spans = split_spans(text, SPAN_CHARS)
    with torch.inference_mode():
        self._load()
        encoded = self._tokenizer(
            [s.text for s in spans], truncation=True, max_length=self.max_tokens, return_offsets_mapping=True
        )
        states = self._hidden_states(encoded["input_ids"])
    elsewhere = []
    for row, m in enumerate(mentions):
        k = next((i for i, s in enumerate(spans) if s.start <= m.start and m.end <= s.end), None)
        if k is None:
            elsewhere.append(row)
            continue
        start, end = E.mention_window(text, m)
        start, end = max(start, spans[k].start), min(end, spans[k].end)
        shifted = [(a + spans[k].start, b + spans[k].start) for a, b in encoded["offset_mapping"][k]]
        offsets = [(a, b) if a >= start and b <= end else (0, 0) for a, b in shifted]  # the line window's tokens
        parts = E.mention_token_parts(offsets, m, E.mention_sentence(text, m, (start, end)))
        if not parts[0]:
            elsewhere.append(row)
            continue
        for part, tokens in enumerate(parts):
            if tokens:
                vector = states[k][tokens].mean(dim=0)
                out[row, part * E.DIM : (part + 1) * E.DIM] = torch.nn.functional.normalize(vector, dim=0)
    if elsewhere:
        out[elsewhere] = _line_vectors(self, text, [mentions[i] for i in elsewhere])
    return out


if __name__ == "__main__":
    E.SpanEmbedder._mention_vectors = span_mention_vectors
    from decision_engine.cli import main

    sys.exit(main(sys.argv[1:]))
