"""The sentence encoder's forward pass over texts packed end to end, without padding.

A BERT layer's linear maps, layer norms and activations read each token alone, so they run once over
every real token of a call, as one (N, C) matrix: no padding row is computed, and one large matrix
product replaces a small one per batch. Only attention needs the texts apart; it runs per batch of
like-length texts, padded to the longest, as the padded forward did. The same weights read the same
tokens: in float32 the states match transformers' BertModel to rounding (a few millionths).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

CHUNK_TOKENS = 8192  # tokens packed into one pass: (N, 1536) float32 activations stay about 50 MB


def packed_hidden_states(encoder, ids: Sequence[Sequence[int]], batch_size: int, device: torch.device) -> list:
    """Each tokenized text's last hidden states (T, D), float32 on the CPU, in the order of `ids`.
    Attention batches hold `batch_size` texts in order of length, as the padded forward's batches did."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    states: list[torch.Tensor | None] = [None] * len(ids)
    batches = [order[first : first + batch_size] for first in range(0, len(order), batch_size)]
    for chunk in _chunks(batches, ids):
        rows = [i for batch in chunk for i in batch]
        hidden = _forward(encoder, [ids[i] for i in rows], [len(batch) for batch in chunk], device)
        for i, state in zip(rows, hidden):
            states[i] = state.float().cpu()
    return states  # type: ignore[return-value]


def _chunks(batches: list[list[int]], ids: Sequence[Sequence[int]]) -> list[list[list[int]]]:
    """Consecutive attention batches grouped into passes of at most `CHUNK_TOKENS` tokens (a single
    batch over it is a pass of its own)."""
    chunks: list[list[list[int]]] = []
    tokens = 0
    for batch in batches:
        size = sum(len(ids[i]) for i in batch)
        if not chunks or tokens + size > CHUNK_TOKENS:
            chunks.append([])
            tokens = 0
        chunks[-1].append(batch)
        tokens += size
    return chunks


def _forward(encoder, ids: list[Sequence[int]], batch_sizes: list[int], device: torch.device) -> list[torch.Tensor]:
    """The encoder over `ids` packed; `batch_sizes`: how many consecutive texts attend as one batch."""
    lengths = [len(text) for text in ids]
    tokens = torch.tensor([token for text in ids for token in text], dtype=torch.long, device=device)
    positions = torch.cat([torch.arange(n, device=device) for n in lengths])
    embeddings = encoder.embeddings
    segment = embeddings.token_type_embeddings.weight[0]  # every token in the first segment
    x = embeddings.word_embeddings(tokens) + segment + embeddings.position_embeddings(positions)  # transformers' order
    x = embeddings.LayerNorm(x)  # (N, C): every text's tokens, end to end
    batches = _attention_batches(lengths, batch_sizes, device)
    heads = encoder.config.num_attention_heads
    for layer in encoder.encoder.layer:
        attention = layer.attention
        q, k, v = attention.self.query(x), attention.self.key(x), attention.self.value(x)  # (N, C) each
        context = _attend(q, k, v, batches, heads)
        x = attention.output.LayerNorm(attention.output.dense(context) + x)
        inner = layer.intermediate.intermediate_act_fn(layer.intermediate.dense(x))
        x = layer.output.LayerNorm(layer.output.dense(inner) + x)
    return list(x.split(lengths))


def _attention_batches(lengths: list[int], batch_sizes: list[int], device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per batch: (n, L) the packed index of each text's tokens (0 on padding) and (n, L) True on real
    tokens, L the batch's longest text."""
    starts = [0]
    for n in lengths:
        starts.append(starts[-1] + n)
    batches, first = [], 0
    for size in batch_sizes:
        rows = range(first, first + size)
        width = max(lengths[i] for i in rows)
        index = torch.zeros((size, width), dtype=torch.long)
        real = torch.zeros((size, width), dtype=torch.bool)
        for r, i in enumerate(rows):
            index[r, : lengths[i]] = torch.arange(starts[i], starts[i + 1])
            real[r, : lengths[i]] = True
        batches.append((index.to(device), real.to(device)))
        first += size
    return batches


def _attend(q, k, v, batches, heads: int) -> torch.Tensor:
    """Scaled dot-product attention of packed (N, C) queries, keys and values within each batch's texts."""
    width = q.shape[-1] // heads
    context = torch.empty_like(q)
    for index, real in batches:
        qs, ks, vs = (t[index].view(*index.shape, heads, width).transpose(1, 2) for t in (q, k, v))
        read = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=real[:, None, None, :])  # (n, H, L, W)
        context[index[real]] = read.transpose(1, 2).reshape(*index.shape, heads * width)[real].to(context.dtype)
    return context
