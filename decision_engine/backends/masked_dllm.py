"""Mask-token diffusion LLMs that ship their own modelling code (LLaDA, Dream).

These are full-sequence models: every position attends to every other, so there
is no prefix cache to keep, and each denoising step re-runs prefix and block
together. The cache is the tokenised prefix, laid out as for a masked LM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..model.loader import ModelLoadError
from ..options import DLLM_LOADERS
from .hf_masked_lm import FullSequenceBackend
from .vocabulary import Vocabulary, VocabularyError

LOADERS = DLLM_LOADERS  # auto classes tried, in this order
SHIFTED_MODEL_TYPES = ("dream",)  # model types whose logits at i predict the token at i + 1


@dataclass(frozen=True)
class MaskedDLLMOptions:
    """What a checkpoint's config.json may leave out; None takes it from the checkpoint."""

    mask_token_id: int | None = None  # None: config.json's mask_token_id, else the tokenizer's mask token
    loader: str | None = None  # transformers auto class; None: the first of LOADERS that config.json's auto_map names
    block_size: int | None = None  # the checkpoint's diffusion block, recorded on the backend; None: config.json's
    # block_size/block_length, else none (full-sequence models, which denoise the whole answer block at once)
    shift_logits: bool | None = None  # logits at i score position i + 1; None: by model_type (Dream does)


def checkpoint_config(folder: Path) -> dict:
    """config.json of a checkpoint folder, as a dict."""
    return json.loads((Path(folder) / "config.json").read_text())


def is_masked_dllm(config: dict) -> bool:
    """A checkpoint that brings its own modelling code and does not register as a transformers masked LM."""
    auto_map = config.get("auto_map") or {}
    return bool(auto_map) and "AutoModelForMaskedLM" not in auto_map


def _loader_name(config: dict, options: MaskedDLLMOptions) -> str:
    if options.loader is not None:
        return options.loader
    auto_map = config.get("auto_map") or {}
    for name in LOADERS:
        if name in auto_map:
            return name
    raise ModelLoadError(
        f"config.json's auto_map names no model class ({', '.join(LOADERS)}); pass --loader"
    )


class MaskedDLLMBackend(FullSequenceBackend):
    """Drives a remote-code mask-token diffusion LLM from a local folder (never downloaded)."""

    def __init__(
        self,
        path: str | Path,
        device: str = "cpu",
        trust_remote_code: bool = False,
        options: MaskedDLLMOptions = MaskedDLLMOptions(),
        *,
        random_weights: bool = False,
    ):
        import transformers

        folder = Path(path)
        if not trust_remote_code:
            raise ModelLoadError(f"{folder} runs its own modelling code; allow it with --trust-remote-code")
        config = checkpoint_config(folder)
        loader_name = _loader_name(config, options)
        loader = getattr(transformers, loader_name, None)
        if loader is None:
            raise ModelLoadError(f"transformers {transformers.__version__} has no {loader_name}")
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=True
        )
        mask_id = options.mask_token_id if options.mask_token_id is not None else config.get("mask_token_id")
        try:
            self.vocab = Vocabulary.from_tokenizer(tokenizer, mask_id=mask_id, pad_id=config.get("pad_token_id"))
        except VocabularyError as error:
            hint = "; set mask_token_id in config.json or pass --mask-token-id" if mask_id is None else ""
            raise ModelLoadError(f"{folder}: {error}{hint}") from None
        if random_weights:  # benchmarks: config.json alone, no weights read
            from .random_weights import random_model

            made = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=True)
            model = random_model(lambda **kw: loader.from_config(made, trust_remote_code=True, **kw), device)
        else:
            model = loader.from_pretrained(str(folder), local_files_only=True, trust_remote_code=True)
        self.model = model.to(device).eval()
        self.device = torch.device(device)
        self.name = f"masked-dllm:{folder.name}"
        self.version = getattr(model.config, "_commit_hash", None) or ""
        self.max_positions = int(config.get("max_sequence_length") or config.get("max_position_embeddings") or 4096)
        self.block_size = options.block_size or config.get("block_size") or config.get("block_length")
        model_type = str(config.get("model_type", "")).lower()
        self.shift_logits = options.shift_logits if options.shift_logits is not None else (
            model_type in SHIFTED_MODEL_TYPES
        )
        self.context_tokens: int | None = None  # the window alone limits the context
        self.reads_documents = False  # the document is laid into the prefix as context tokens
