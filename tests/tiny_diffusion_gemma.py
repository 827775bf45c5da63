"""A tiny random DiffusionGemma checkpoint and its tokenizer, written to a folder (for tests and the golden fixture)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch

from tiny_tokenizers import word_level_tokenizer

SPECIALS = ["<pad>", "<eos>", "<bos>", "[UNK]"]  # DiffusionGemma's default pad 0, eos 1, bos 2
SLIDING_WINDOW = 16  # tokens; the tests' long prefixes are several times longer


def tiny_config(vocab_size: int, initializer_range: float = 0.02):
    """Two layers (one sliding-window, one global) of width 32, two experts, a vision tower of one tiny layer."""
    import transformers

    text = dict(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, global_head_dim=16, sliding_window=SLIDING_WINDOW,
        max_position_embeddings=1024, layer_types=["sliding_attention", "full_attention"],
        pad_token_id=0, eos_token_id=1, bos_token_id=2, num_experts=2, top_k_experts=1, moe_intermediate_size=32,
        initializer_range=initializer_range,
    )
    vision = dict(model_type="gemma4_vision", hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                  num_attention_heads=1, num_key_value_heads=1, head_dim=8, position_embedding_size=16, patch_size=4)
    return transformers.DiffusionGemmaConfig(
        text_config=text, vision_config=vision, canvas_length=8, initializer_range=initializer_range
    )


def save_tiny_diffusion_gemma(
    folder: Path, texts: Iterable[str], seed: int = 0, initializer_range: float = 0.02
) -> None:
    """Random weights (seeded, of standard deviation `initializer_range`) and a word-level tokenizer over `texts`,
    saved as a checkpoint folder."""
    import transformers

    tok = word_level_tokenizer(texts, SPECIALS, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                               unk_token="[UNK]")
    torch.manual_seed(seed)
    model = transformers.DiffusionGemmaForBlockDiffusion(tiny_config(len(tok), initializer_range)).eval()
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
