"""The reading model: a block-diffusion transformer whose questions and answer slots read a whole document.

The document is encoded once, window by window, by a frozen copy of the base encoder
(`reader.encoding`); every layer of the trainable model lets question tokens and answer positions
attend to that layer's cached document keys and values, beside the question prefix. A pointer scores
each document token for each question; it is trained on gold evidence, names the evidence each answer
reports, and its weighted document states feed the question's answer positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..reader.encoding import DocumentStates
from .transformer import BlockDiffusionConfig, BlockDiffusionModel, Embeddings, Layer, PrefixState, question_means


@dataclass
class DocumentMemory:
    """A padded batch of document states: what each prefix of the batch reads."""

    keys: list[torch.Tensor]  # per layer (B, H, N, D)
    values: list[torch.Tensor]  # per layer (B, H, N, D)
    hidden: torch.Tensor  # (B, N, C)
    mask: torch.Tensor  # (B, N) True on real (and not hidden) document tokens

    @classmethod
    def stack(cls, documents: Sequence[DocumentStates], device, dtype=torch.float32) -> DocumentMemory:
        width = max(max(len(d) for d in documents), 1)
        layers, _, heads, dim = documents[0].keys.shape
        channels = documents[0].hidden.shape[-1]
        keys = torch.zeros((layers, len(documents), heads, width, dim), device=device, dtype=dtype)
        values = torch.zeros_like(keys)
        hidden = torch.zeros((len(documents), width, channels), device=device, dtype=dtype)
        mask = torch.zeros((len(documents), width), dtype=torch.bool, device=device)
        for i, d in enumerate(documents):
            n = len(d)
            keys[:, i, :, :n] = d.keys.to(device, dtype).transpose(1, 2)
            values[:, i, :, :n] = d.values.to(device, dtype).transpose(1, 2)
            hidden[i, :n] = d.hidden.to(device, dtype)
            mask[i, :n] = True
        return cls(list(keys.unbind(0)), list(values.unbind(0)), hidden, mask)

    def hiding(self, hidden_tokens: torch.Tensor) -> DocumentMemory:
        """The same memory with the tokens where `hidden_tokens` (B, N) is True taken out of view."""
        return DocumentMemory(self.keys, self.values, self.hidden, self.mask & ~hidden_tokens)


@dataclass
class ReadState(PrefixState):
    """A prefix state that also holds, per question, its pointer over the document and what it found."""

    pointer: torch.Tensor | None = None  # (B, S + 1, N) pointer logits over document tokens (-inf off the document)
    evidence: torch.Tensor | None = None  # (B, S + 1, C) pointer-weighted document state per question
    documents: list | None = None  # per row, (text, states) of the document read, set by the backend

    def select(self, rows) -> ReadState:
        base = super().select(rows)
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.mask.device)
        return ReadState(
            base.keys, base.values, base.mask, base.lengths, base.summaries, base.block_start,
            pointer=None if self.pointer is None else self.pointer.index_select(0, index),
            evidence=None if self.evidence is None else self.evidence.index_select(0, index),
            documents=None if self.documents is None else [self.documents[r] for r in rows],
        )


def zero_linear(width: int) -> nn.Linear:
    layer = nn.Linear(width, width)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class ReadingModel(BlockDiffusionModel):
    """`BlockDiffusionModel` plus a frozen document encoder, document attention in every layer and a pointer."""

    def __init__(self, cfg: BlockDiffusionConfig):
        if not cfg.question_summary:
            raise ValueError("the reading model points from each question's summary: question_summary must be on")
        super().__init__(cfg)
        self.document_embed = Embeddings(cfg)  # frozen base encoder: loaded from the base package, never trained
        self.document_layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.layers))
        for p in [*self.document_embed.parameters(), *self.document_layers.parameters()]:
            p.requires_grad_(False)
        self.pointer_query = nn.Linear(cfg.hidden, cfg.hidden)
        self.pointer_key = nn.Linear(cfg.hidden, cfg.hidden)
        self.evidence_in = zero_linear(cfg.hidden)  # zero at first: the pointer's find starts as a no-op

    def encode_prefix(self, ids, slots, mask, memory: DocumentMemory | None = None, frozen_layers: int = 0) -> ReadState:
        """ids, slots, mask: (B, T) padded question prefixes, each reading its row of `memory`.

        The first `frozen_layers` layers run without gradient (training leaves them as the base has them)."""
        if memory is None:
            raise ValueError("the reading model needs the document's states")
        positions = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        joint_mask = torch.cat([memory.mask, mask], dim=1)  # (B, N + T)
        keys, values = [], []
        grad = torch.is_grad_enabled()
        with torch.set_grad_enabled(grad and frozen_layers == 0):
            x = self.embed(ids, positions, 0, slots)
        for index, layer in enumerate(self.layers):
            with torch.set_grad_enabled(grad and index >= frozen_layers):
                k = torch.cat([memory.keys[index], layer.split(layer.key(x))], dim=2)  # (B, H, N + T, D)
                v = torch.cat([memory.values[index], layer.split(layer.value(x))], dim=2)
                keys.append(k)
                values.append(v)
                x = layer(x, k, v, joint_mask)
        summaries = question_means(x, slots, mask, self.cfg.max_slots)  # (B, S + 1, C)
        pointer = self.point(summaries, memory)
        evidence = pointer.softmax(dim=-1).nan_to_num(0.0) @ memory.hidden  # (B, S + 1, C)
        return ReadState(keys, values, joint_mask, mask.sum(dim=1), summaries, pointer=pointer, evidence=evidence)

    def point(self, summaries, memory: DocumentMemory) -> torch.Tensor:
        """(B, S + 1, N) logits of each question's pointer over the document's tokens."""
        query = self.pointer_query(summaries)  # (B, S + 1, C)
        key = self.pointer_key(memory.hidden)  # (B, N, C)
        logits = query @ key.transpose(1, 2) / key.shape[-1] ** 0.5
        return logits.masked_fill(~memory.mask[:, None, :], float("-inf"))

    def block_inputs(self, prefix: ReadState, x, slots):
        """The block's inputs plus its question's summary and what that question's pointer found."""
        x = super().block_inputs(prefix, x, slots)
        return x + self.evidence_in(torch.gather(prefix.evidence, 1, slots[..., None].expand(-1, -1, x.shape[-1])))

    def forward(self, prefix_ids, prefix_slots, prefix_mask, block_ids, block_slots, columns=None, memory=None, frozen_layers=0):
        """Training entry: answer-block logits and the prefix state (for the pointer's evidence loss)."""
        prefix = self.encode_prefix(prefix_ids, prefix_slots, prefix_mask, memory, frozen_layers)
        return self.logits(self.block_hidden(prefix, block_ids, block_slots), columns), prefix

    def encode_document_windows(self, tokens, cls_id: int, sep_id: int) -> DocumentStates:
        from ..reader.encoding import encode_document

        return encode_document(self.document_embed, self.document_layers, tokens, cls_id, sep_id)


def evidence_loss(pointer: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """-log of the pointer mass on gold tokens, averaged over the questions that have any.

    pointer: (B, S + 1, N) logits; gold: (B, S + 1, N) True on each question's gold evidence tokens.
    """
    has = gold.any(dim=-1)  # (B, S + 1)
    if not has.any():
        return pointer.new_zeros(())
    total = torch.logsumexp(pointer, dim=-1)
    on_gold = torch.logsumexp(pointer.masked_fill(~gold, float("-inf")), dim=-1)
    return (total - on_gold)[has].mean()
