"""The verdict reader: a hypothesis read against the clauses its question's evidence names, as one text.

The reader's own layers see a hypothesis beside its evidence too, but they also learn every other
kind of question. The verdict reader is a cross-encoder trained on hypothesis slots alone: the base
sentence encoder (pinned, frozen) reads "[CLS] hypothesis [SEP] evidence [SEP]", where the evidence is
the first `passages` spans the evidence pointer ranks for that question, and a head over its mean
state says absent, entailed or contradicted. Only low-rank updates of each layer's query, key and
value projections (rank `rank`) and the head are trained and saved, about 0.2 MB in fp16 at rank 8;
a `wide` reader also updates the attention output and both feed-forward projections (about 1.3 MB
at rank 16).

Its log-probabilities are added, per choice, to the odds of a hypothesis slot (the slot's
`choice_bias`, beside the absence gate's), so the slot's answer is the product of both readers'
beliefs: where they disagree the surer one wins (`training/verdict_fit.py` fits it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .absence_gate import choice_words, is_absence_choice

DIM = 384  # the base sentence encoder's width
FEED_FORWARD = 1536  # its feed-forward width
LAYERS = 6  # its layers
TARGETS = ("query", "key", "value")  # the square projections each layer's low-rank updates change
WIDE_TARGETS = (*TARGETS, "attn_out")  # those of a wide reader
FEED_FORWARD_TARGETS = ("ff_in", "ff_out")  # and its feed-forward projections, (out, in) below
SHAPES = {"ff_in": (FEED_FORWARD, DIM), "ff_out": (DIM, FEED_FORWARD)}
VERDICTS = ("absent", "entailed", "contradicted")  # the head's outputs, in order
ENTAILED = frozenset({"entailment", "entailed"})
CONTRADICTED = frozenset({"contradiction", "contradicted"})
PASSAGES = 3  # evidence spans read per hypothesis, best first
MAX_TOKENS = 256  # hypothesis and evidence together; the evidence is cut to fit
ALPHA = 16.0  # the low-rank update is scaled by ALPHA / rank


def verdict_of(choice: object) -> int | None:
    """Which of `VERDICTS` an enum choice says, or None for a choice that is not a verdict."""
    if not isinstance(choice, str):
        return None
    if is_absence_choice(choice):
        return 0
    words = choice_words(choice)
    return 1 if words in ENTAILED else 2 if words in CONTRADICTED else None


class VerdictReader(nn.Module):
    """The trained part of the verdict reader: per layer and target projection a low-rank update
    (`down` then `up`; `up` starts at zero, so an untrained reader leaves the base encoder as it is),
    and the head. The encoder it updates is the pinned base, loaded on first use (`encoder`)."""

    def __init__(self, rank: int = 8, wide: bool = False):
        super().__init__()
        self.rank = rank
        self.square = WIDE_TARGETS if wide else TARGETS
        self.down = nn.Parameter(torch.empty(LAYERS, len(self.square), rank, DIM))
        self.up = nn.Parameter(torch.zeros(LAYERS, len(self.square), DIM, rank))
        nn.init.kaiming_uniform_(self.down.view(-1, DIM), a=math.sqrt(5))
        self.feed_forward = FEED_FORWARD_TARGETS if wide else ()
        for name in self.feed_forward:
            out, width = SHAPES[name]
            down = nn.Parameter(torch.empty(LAYERS, rank, width))
            nn.init.kaiming_uniform_(down.view(-1, width), a=math.sqrt(5))
            self.register_parameter(f"{name}_down", down)
            self.register_parameter(f"{name}_up", nn.Parameter(torch.zeros(LAYERS, out, rank)))
        self.head = nn.Linear(DIM, len(VERDICTS))
        self._built: dict[str, Any] = {}  # the merged base encoder and its tokenizer, on first use (not saved)
        self._lock = threading.Lock()

    @property
    def scale(self) -> float:
        return ALPHA / self.rank

    @property
    def targets(self) -> tuple[str, ...]:
        return (*self.square, *self.feed_forward)

    def factors(self, layer: int, target: str) -> tuple[torch.Tensor, torch.Tensor]:
        """One projection's update as (down (rank, in), up (out, rank))."""
        if target in self.square:
            t = self.square.index(target)
            return self.down[layer, t], self.up[layer, t]
        return getattr(self, f"{target}_down")[layer], getattr(self, f"{target}_up")[layer]

    def delta(self, layer: int, target: str) -> torch.Tensor:
        """The low-rank update of one projection's weight, (out, in)."""
        down, up = self.factors(layer, target)
        return self.scale * up @ down

    def attach(self, encoder: nn.Module, dropout: float = 0.1) -> list:
        """Hook this reader's updates onto a base encoder's projections, for training (gradients reach
        `down` and `up`, the base stays as it is); returns the hooks, to remove when done."""
        drop = nn.Dropout(dropout)
        hooks = []
        for layer, target, linear in _projections(encoder, self.targets):
            def added(module, inputs, output, layer=layer, target=target):
                x = drop(inputs[0]) if module.training else inputs[0]
                down, up = self.factors(layer, target)
                return output + self.scale * ((x @ down.T) @ up.T)
            hooks.append(linear.register_forward_hook(added))
        return hooks

    def logits(self, encoder: nn.Module, encoded: dict) -> torch.Tensor:
        """(N, 3) verdict logits of tokenized (hypothesis, evidence) pairs, read by `encoder`."""
        hidden = encoder(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled.to(self.head.weight.dtype))

    def log_probs(self, hypotheses: Sequence[str], evidence: Sequence[Sequence[str]]) -> torch.Tensor:
        """(N, 3) log-probabilities of each verdict for each hypothesis and its evidence (best first)."""
        if not hypotheses:
            return torch.zeros((0, len(VERDICTS)))
        with self._lock, torch.inference_mode():
            encoder, tokenizer = self.encoder()
            encoded = {k: v.to(self.down.device) for k, v in tokenize_pairs(tokenizer, hypotheses, evidence).items()}
            return self.logits(encoder, encoded).float().log_softmax(dim=-1).cpu()

    def choice_bias(self, choices: Sequence[object], log_probs: torch.Tensor) -> list[float]:
        """Per choice, the log-probability of the verdict it says (0 for a choice that says none)."""
        found = [verdict_of(c) for c in choices]
        return [0.0 if v is None else float(log_probs[v]) for v in found]

    def encoder(self):
        """The base encoder with this reader's updates folded into its weights, and its tokenizer
        (built once, on first use)."""
        if not self._built:
            encoder, tokenizer = load_base_encoder()
            encoder = encoder.to(self.down.device)  # where this reader's weights are (the engine's device)
            with torch.no_grad():
                for layer, target, linear in _projections(encoder, self.targets):
                    linear.weight += self.delta(layer, target).to(linear.weight.dtype)
            self._built.update(encoder=encoder.eval(), tokenizer=tokenizer)
        return self._built["encoder"], self._built["tokenizer"]

    def forget_encoder(self) -> None:
        """Drop the merged encoder (after the updates changed, it would be stale)."""
        self._built.clear()


def load_base_encoder():
    """The pinned base sentence encoder (a transformers BertModel, float32, eval mode) and its tokenizer."""
    from transformers import AutoModel, AutoTokenizer

    from ..model.loader import base_model_dir

    folder = str(base_model_dir())
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return AutoModel.from_pretrained(folder, local_files_only=True).eval(), tokenizer


def tokenize_pairs(tokenizer, hypotheses: Sequence[str], evidence: Sequence[Sequence[str]]) -> dict:
    """Padded (hypothesis, evidence) pairs as the verdict reader reads them: the first `PASSAGES`
    spans, whitespace folded, cut so the pair fits `MAX_TOKENS`."""
    passages = [" ".join(" ".join(span.split()) for span in spans[:PASSAGES]) for spans in evidence]
    return tokenizer(
        list(hypotheses), passages, truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt"
    )


def _projections(encoder: nn.Module, targets: Sequence[str]):
    """(layer, target, linear) for each of a BERT encoder's projections named in `targets`."""
    for layer, block in enumerate(encoder.encoder.layer):
        linears = {
            "query": block.attention.self.query, "key": block.attention.self.key, "value": block.attention.self.value,
            "attn_out": block.attention.output.dense, "ff_in": block.intermediate.dense, "ff_out": block.output.dense,
        }
        for name in targets:
            yield layer, name, linears[name]
