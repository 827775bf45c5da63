"""Encoding a whole document once, window by window, into every layer's keys and values.

Question tokens and answer slots then attend to all of a document's tokens through these cached
states, so no evidence is cut away by retrieval. The encoder's weights are frozen: the states depend
only on the document text, which is what lets the cache and the training loop reuse them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .windows import DocumentTokens, Window, plan_windows

WINDOWS_PER_PASS = 8  # windows encoded in one batched forward pass


@dataclass
class DocumentStates:
    """Every layer's keys and values for each document token, its last-layer state and its characters."""

    keys: torch.Tensor  # (layers, N, H, D)
    values: torch.Tensor  # (layers, N, H, D)
    hidden: torch.Tensor  # (N, C) last-layer state
    offsets: torch.Tensor  # (N, 2) character offsets into the document text

    def __len__(self) -> int:
        return self.hidden.shape[0]

    @property
    def nbytes(self) -> int:
        return sum(t.element_size() * t.nelement() for t in (self.keys, self.values, self.hidden, self.offsets))


def encode_document(
    embed: nn.Module,
    layers: nn.ModuleList,
    tokens: DocumentTokens,
    cls_id: int,
    sep_id: int,
    windows: list[Window] | None = None,
) -> DocumentStates:
    """States of `tokens` from `embed` and `layers` (a BERT-shaped encoder), run over each window."""
    windows = windows if windows is not None else plan_windows(len(tokens))
    device = next(embed.parameters()).device
    n, heads = len(tokens), layers[0].heads
    width = layers[0].query.out_features
    keys = torch.zeros((len(layers), n, heads, width // heads), device=device)
    values = torch.zeros_like(keys)
    hidden = torch.zeros((n, width), device=device)
    ids = torch.tensor(tokens.ids, dtype=torch.long)
    with torch.inference_mode():
        for first in range(0, len(windows), WINDOWS_PER_PASS):
            chunk = windows[first : first + WINDOWS_PER_PASS]
            longest = max(w.end - w.start for w in chunk) + 2
            batch = torch.zeros((len(chunk), longest), dtype=torch.long)
            mask = torch.zeros((len(chunk), longest), dtype=torch.bool)
            for row, w in enumerate(chunk):
                batch[row, 0] = cls_id
                batch[row, 1 : 1 + w.end - w.start] = ids[w.start : w.end]
                batch[row, 1 + w.end - w.start] = sep_id
                mask[row, : w.end - w.start + 2] = True
            batch, mask = batch.to(device), mask.to(device)
            positions = torch.arange(longest, device=device).expand_as(batch)
            x = embed(batch, positions, 0, torch.zeros_like(batch))  # (W, T, C)
            for index, layer in enumerate(layers):
                k, v = layer.split(layer.key(x)), layer.split(layer.value(x))  # (W, H, T, D)
                _scatter(keys[index], k, chunk)
                _scatter(values[index], v, chunk)
                x = layer(x, k, v, mask)
            for row, w in enumerate(chunk):
                hidden[w.keep_start : w.keep_end] = x[row, 1 + w.keep_start - w.start : 1 + w.keep_end - w.start]
    offsets = torch.tensor(tokens.offsets, dtype=torch.long).reshape(n, 2)
    return DocumentStates(keys, values, hidden, offsets)


def _scatter(target: torch.Tensor, states: torch.Tensor, chunk: list[Window]) -> None:
    """Copy each window's kept tokens of `states` (W, H, T, D) into `target` (N, H, D)."""
    for row, w in enumerate(chunk):
        a, b = 1 + w.keep_start - w.start, 1 + w.keep_end - w.start  # +1: the window's [CLS]
        target[w.keep_start : w.keep_end] = states[row, :, a:b].transpose(0, 1)
