"""Checkpoint folders of real-size diffusion LLMs without weights, for `decision-engine bench --random-weights`.

A folder holds config.json and a tokenizer, nothing else: the benchmark builds the model from the
config with random weights on the GPU (backends/random_weights.py), so a multi-billion-parameter
model is measured without downloading or writing its weights. The tokenizer is the base encoder's
(WordPiece, 30,522 ids), whose special tokens stand in for the model's; ids past it are simply never
in a prompt. The figures are those of the model's shapes, not of its answers.

    python -m decision_engine.bench.real_size --kind diffusion-gemma --out rs
    python -m decision_engine.bench.real_size --kind llada --remote-code DIR --out rs-llada

`--size tiny` writes the same kind at toy dimensions, to rehearse the GPU run on a CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

KINDS = ("diffusion-gemma", "llada")
SIZES = ("real", "tiny")

# The base encoder's tokenizer: [PAD] 0, [CLS] 101, [SEP] 102, [MASK] 103.
PAD_ID, CLS_ID, SEP_ID = 0, 101, 102

# LLaDA-8B's dimensions in the LLaDA stand-in's config format (tests/remote_code/configuration_llada_standin.py).
# The stand-in has learned positions and a 2x MLP, so LLaDA's intermediate size (12288) and rope theta
# (500000) have no field there: the model is about 5.4B parameters, not 8B.
LLADA_8B = dict(
    d_model=4096,  # hidden size
    n_layers=32,
    n_heads=32,
    vocab_size=126_464,
    mask_token_id=126_336,  # LLaDA's <|mdm_mask|>
    max_sequence_length=4096,  # positions
)
LLADA_TINY = dict(d_model=32, n_layers=2, n_heads=2, vocab_size=126_464, mask_token_id=126_336, max_sequence_length=4096)
LLADA_AUTO_MAP = {
    "AutoConfig": "configuration_llada_standin.LLaDAStandInConfig",
    "AutoModel": "modeling_llada_standin.LLaDAStandInModelLM",
}


# DiffusionGemma 26B-A4B's text dimensions (those of Gemma 4 26B-A4B, which it is built on; transformers'
# DiffusionGemmaTextConfig defaults are a dense model's and have no experts, which DiffusionGemma needs).
# 25.4B parameters in all, about 4B active per token; the vision tower keeps transformers' defaults.
DIFFUSION_GEMMA_26B_A4B = dict(
    hidden_size=2816,
    intermediate_size=2112,  # the dense MLP beside the experts
    num_experts=128,
    top_k_experts=8,
    moe_intermediate_size=704,  # per expert
    num_hidden_layers=30,  # five sliding-window layers to one global
    num_attention_heads=16,
    num_key_value_heads=8,
    num_global_key_value_heads=2,
    head_dim=256,
    global_head_dim=512,
    sliding_window=1024,  # tokens
    max_position_embeddings=262_144,
    vocab_size=262_144,
)


def diffusion_gemma_config(size: str):
    """DiffusionGemma 26B-A4B's dimensions ("real"), or two layers of width 32 ("tiny"); the special ids
    are the base tokenizer's."""
    import transformers

    ids = dict(pad_token_id=PAD_ID, bos_token_id=CLS_ID, eos_token_id=SEP_ID)
    if size == "real":
        vision = dict(model_type="gemma4_vision")  # named: transformers 5.1x builds no default vision config
        return transformers.DiffusionGemmaConfig(text_config={**DIFFUSION_GEMMA_26B_A4B, **ids}, vision_config=vision)
    text = dict(
        vocab_size=32_768, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, global_head_dim=16, sliding_window=16, max_position_embeddings=8192,
        layer_types=["sliding_attention", "full_attention"], num_experts=2, top_k_experts=1, moe_intermediate_size=32,
        **ids,
    )
    vision = dict(model_type="gemma4_vision", hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                  num_attention_heads=1, num_key_value_heads=1, head_dim=8, position_embedding_size=16, patch_size=4)
    return transformers.DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=32)


def write_folder(kind: str, out: Path, size: str = "real", remote_code: Path | None = None) -> Path:
    """Write config.json and the base tokenizer for `kind` at `size` into `out` (created); no weights.
    LLaDA's modelling code is not part of this package: `remote_code` names the folder holding
    configuration_llada_standin.py and modeling_llada_standin.py, which are copied beside the config."""
    from ..backends.native import base_tokenizer

    if kind not in KINDS or size not in SIZES:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} and size one of {', '.join(SIZES)}")
    out.mkdir(parents=True, exist_ok=True)
    if kind == "diffusion-gemma":
        diffusion_gemma_config(size).save_pretrained(str(out))
    else:
        if remote_code is None:
            raise ValueError("--kind llada needs --remote-code: the folder with the stand-in's modelling code")
        for module in {name.split(".")[0] for name in LLADA_AUTO_MAP.values()}:
            shutil.copy(remote_code / f"{module}.py", out / f"{module}.py")
        dims = LLADA_8B if size == "real" else LLADA_TINY
        config = dict(model_type="llada", auto_map=LLADA_AUTO_MAP, pad_token_id=PAD_ID, bos_token_id=CLS_ID,
                      eos_token_id=SEP_ID, **dims)
        (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    base_tokenizer().save_pretrained(str(out))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decision_engine.bench.real_size", description=__doc__.split("\n")[0])
    parser.add_argument("--kind", choices=KINDS, required=True)
    parser.add_argument("--out", type=Path, required=True, help="folder to write (config.json and the tokenizer)")
    parser.add_argument("--size", choices=SIZES, default="real", help="tiny: toy dimensions, for rehearsals on a CPU")
    parser.add_argument("--remote-code", type=Path, help="llada: folder with the stand-in's modelling code")
    args = parser.parse_args(argv)
    try:
        folder = write_folder(args.kind, args.out, args.size, args.remote_code)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
