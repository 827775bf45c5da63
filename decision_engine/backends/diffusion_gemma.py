"""DiffusionGemma (transformers' `DiffusionGemmaForBlockDiffusion`) behind the denoiser's model interface.

Its causal encoder writes the prefix's KV cache once; its bidirectional decoder reads
that cache (never writing it) to denoise the answer block. The model has no mask
token: open positions hold fixed noise tokens, and each step's logits are fed back
as the next step's self-conditioning signal. Prefixes are left-padded with per-row
position ids, so a row's numbers do not depend on what it is batched with.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..model.loader import ModelLoadError
from .protocol import PrefixInput
from .vocabulary import Vocabulary, VocabularyError

MIN_TRANSFORMERS = "5.11"  # the first transformers with DiffusionGemmaForBlockDiffusion
NOISE_MULTIPLIER = 2654435761  # Knuth's multiplicative hash: spreads noise tokens over the vocabulary


def noise_tokens(length: int, vocab_size: int, device) -> torch.Tensor:
    """The noise token (L,) each open canvas position holds: fixed per position, so runs are deterministic."""
    return (torch.arange(1, length + 1, device=device) * NOISE_MULTIPLIER) % vocab_size


def block_diffusion_class():
    """transformers' DiffusionGemmaForBlockDiffusion, or a ModelLoadError naming the transformers it needs."""
    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) < Version(MIN_TRANSFORMERS):
        raise ModelLoadError(
            f"DiffusionGemma needs transformers >= {MIN_TRANSFORMERS}; this is transformers {transformers.__version__}"
        )
    return transformers.DiffusionGemmaForBlockDiffusion


def cache_keyword(module: torch.nn.Module) -> str:
    """The keyword `module.forward` takes the KV cache by: `cache` from transformers 5.2x, `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


@dataclass
class GemmaPrefixCache:
    """The encoder's KV cache of left-padded prefixes, plus what the decoder needs beside it."""

    kv: object  # transformers Cache, read-only for the decoder
    mask: torch.Tensor  # (B, T) True on real prefix tokens
    next_position: torch.Tensor  # (B,) position id of each row's first block token
    previous: torch.Tensor | None = None  # (B, L, V) last step's logits: the self-conditioning signal

    def select(self, rows: Sequence[int]) -> GemmaPrefixCache:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.mask.device)
        kv = copy.copy(self.kv)
        kv.layers = [copy.copy(layer) for layer in self.kv.layers]
        kv.batch_select_indices(index)  # rebinds each layer's keys/values: the original rows stay intact
        previous = None if self.previous is None else self.previous.index_select(0, index)
        mask, next_position = self.mask.index_select(0, index), self.next_position.index_select(0, index)
        return GemmaPrefixCache(kv, mask, next_position, previous)


def left_pad(prefixes: Sequence[PrefixInput], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-padded ids (B, T), mask (B, T) and position ids (B, T) counting from each row's first real token."""
    width = max(len(p.token_ids) for p in prefixes)
    ids = torch.full((len(prefixes), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prefixes), width), dtype=torch.bool)
    for i, p in enumerate(prefixes):
        n = len(p.token_ids)
        ids[i, width - n :] = torch.tensor(p.token_ids)
        mask[i, width - n :] = True
    positions = (mask.long().cumsum(dim=1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


CHAT_SLOT = "\u2063DECISION-PREFIX\u2063"  # stands for the engine's prefix while the chat template is rendered


def chat_frame(tokenizer) -> tuple[list[int], list[int]]:
    """The token ids the tokenizer's chat format puts before and after one user message (ready for the
    model's answer); both empty when the tokenizer has no chat template."""
    if not getattr(tokenizer, "chat_template", None):
        return [], []
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": CHAT_SLOT}], tokenize=False, add_generation_prompt=True
    )
    if rendered.count(CHAT_SLOT) != 1:
        return [], []  # a template that does not show the message once cannot frame the prefix
    head, tail = rendered.split(CHAT_SLOT)
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"] if text else []  # noqa: E731
    return list(encode(head)), list(encode(tail))


def framed(prefix: PrefixInput, head: Sequence[int], tail: Sequence[int]) -> PrefixInput:
    """The prefix inside the chat frame; the frame's tokens belong to no question."""
    if not head and not tail:
        return prefix
    ids = [*head, *prefix.token_ids, *tail]
    return PrefixInput(ids, [0] * len(head) + list(prefix.slot_ids) + [0] * len(tail), prefix.document)


class DiffusionGemmaBackend:
    """Drives a local DiffusionGemma checkpoint folder (never downloaded)."""

    def __init__(self, path: str | Path, device: str = "cpu", *, random_weights: bool = False):
        from transformers import AutoConfig, AutoTokenizer

        loader = block_diffusion_class()
        folder = Path(path)
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        if random_weights:  # benchmarks: config.json alone, no weights read
            from .random_weights import random_model

            config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
            model = random_model(lambda **kw: loader._from_config(config, **kw), device)
        else:
            model = loader.from_pretrained(str(folder), local_files_only=True)
        text = model.config.text_config
        # No mask token exists: the id only marks open positions in the denoiser's block and never reaches the model.
        placeholder = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else text.pad_token_id
        try:
            self.vocab = Vocabulary.from_tokenizer(tokenizer, mask_id=placeholder, pad_id=text.pad_token_id)
        except VocabularyError as error:
            raise ModelLoadError(f"{folder}: {error}") from None
        self.model = model.to(device).eval()
        self.cache_keyword = cache_keyword(model.model.decoder)  # how this transformers names the decoder's cache
        self.device = torch.device(device)
        self.name = f"diffusion-gemma:{folder.name}"
        self.version = getattr(model.config, "_commit_hash", None) or ""
        self.chat_head, self.chat_tail = chat_frame(tokenizer)  # the prompt is the model's chat format where it has one
        self.max_positions = int(text.max_position_embeddings) - len(self.chat_head) - len(self.chat_tail)
        self.context_tokens: int | None = None  # the window alone limits the context
        self.reads_documents = False  # the document is laid into the prefix as context tokens

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> GemmaPrefixCache:
        prefixes = [framed(p, self.chat_head, self.chat_tail) for p in prefixes]
        ids, mask, positions = left_pad(prefixes, self.vocab.pad_id, self.device)
        with torch.inference_mode():
            out = self.model.model.encoder(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        kv = out.cache if getattr(out, "cache", None) is not None else out.past_key_values  # by transformers version
        return GemmaPrefixCache(kv, mask, positions[:, -1] + 1)

    def block_logits(
        self,
        cache: GemmaPrefixCache,
        block_ids: torch.Tensor,  # (B, L) with the vocabulary's mask id on open positions
        block_slots: torch.Tensor,  # (B, L), 0 on padding
        columns: torch.Tensor | None = None,
    ) -> torch.Tensor:
        block_ids, block_slots = block_ids.to(self.device), block_slots.to(self.device)
        real = block_slots > 0
        noise = noise_tokens(block_ids.shape[1], self.model.config.text_config.vocab_size, self.device)[None, :]
        canvas = torch.where(real & (block_ids == self.vocab.mask_id), noise, block_ids)  # committed stay fixed
        canvas = torch.where(real, canvas, self.vocab.pad_id)
        previous = cache.previous
        if previous is not None and previous.shape[1] != canvas.shape[1]:
            previous = previous[:, : canvas.shape[1]]  # blocks only finish, so the widest open block only narrows
        with torch.inference_mode():
            logits = self.decode(cache, canvas, real, previous)
        cache.previous = logits
        return logits if columns is None else logits.index_select(-1, columns.to(self.device))

    def decode(
        self, cache: GemmaPrefixCache, canvas: torch.Tensor, real: torch.Tensor, previous: torch.Tensor | None
    ) -> torch.Tensor:
        """Logits (B, L, V), soft-capped as the model's own forward does, of `canvas` (B, L) over the cache."""
        positions = cache.next_position[:, None] + torch.arange(canvas.shape[1], device=self.device)[None, :]
        hidden = self.model.model.decoder(
            decoder_input_ids=canvas,
            **{self.cache_keyword: cache.kv},
            self_conditioning_logits=previous,
            decoder_attention_mask=torch.cat([cache.mask, real], dim=1),
            decoder_position_ids=positions,
        ).last_hidden_state
        cap = self.model.final_logit_softcapping
        return torch.tanh(self.model.lm_head(hidden).float() / cap) * cap
