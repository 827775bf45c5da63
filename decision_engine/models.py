"""Opening the model the engine runs: the bundled weights by default, or a checkpoint folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .backends.protocol import DenoisingModel
from .model.loader import ModelLoadError

BUNDLED_WEIGHTS = Path(__file__).resolve().parent / "weights"


def checkpoint_folder(name: str) -> Path:
    """The checkpoint folder a command's `--model` (or `--reader`, `--heads`, `init_from`) names:
    "bundled" is the bundled weights."""
    return BUNDLED_WEIGHTS if name == "bundled" else Path(name)


MODEL_KINDS = {  # what --model accepts, told apart by the folder's config.json
    "native": 'this project\'s block-diffusion checkpoint (config.json with "config" and "name")',
    "hf-masked-lm": "a transformers masked LM (BERT, ModernBERT)",
    "masked-dllm": "a mask-token diffusion LLM with its own modelling code, named by config.json's auto_map "
    "(LLaDA, Dream; block models read their prefix into a KV cache once: SDAR, model_type \"sdar\", LLaDA2, "
    "\"llada2_moe\", and Fast-dLLM v2, \"Fast_dLLM_Qwen\"); needs --trust-remote-code",
    "diffusion-gemma": 'transformers\' DiffusionGemmaForBlockDiffusion (model_type "diffusion_gemma"; '
    "transformers >= 5.11)",
}


def supported_kinds() -> str:
    """One line per model kind `--model` accepts."""
    return "\n".join(f"{kind}: {what}" for kind, what in MODEL_KINDS.items())


def kind_names() -> str:
    """The model kinds on one line, for errors; `decision-engine models` describes each."""
    return ", ".join(MODEL_KINDS) + "; `decision-engine models` describes them"


def model_kind(meta: dict) -> str:
    """The kind of checkpoint a folder's config.json describes (masked LM when nothing else fits)."""
    from .backends.masked_dllm import is_masked_dllm

    if "config" in meta and "name" in meta:
        return "native"
    if meta.get("model_type") == "diffusion_gemma":
        return "diffusion-gemma"
    if is_masked_dllm(meta):
        return "masked-dllm"
    return "hf-masked-lm"


def unavailable_device(device: str) -> str | None:
    """Why a model cannot run on `device` here (a CUDA device on a machine without one), or None."""
    import torch

    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        return f"device {device}: this machine has no CUDA device that torch can use; use --device cpu"
    return None


def open_model(
    path: str | Path | None = None,
    device: str = "cpu",
    trust_remote_code: bool = False,
    dllm_options=None,
    *,
    random_weights: bool = False,
) -> DenoisingModel:
    """The checkpoint in folder `path`, with the backend its config.json calls for (`MODEL_KINDS`), or with
    no path or "bundled" (as the training commands name it) the bundled weights (the base encoder with an
    untrained head when none ship). `dllm_options`
    (a `MaskedDLLMOptions`) fills in what a masked diffusion LLM's config.json leaves out; given for a
    checkpoint of another kind, it is an error. With `random_weights` (benchmarks only; diffusion-gemma
    and masked-dllm folders) no weights are read: the model is built from config.json on `device` in
    bfloat16 with seeded random weights."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .backends.native import load_native

    if problem := unavailable_device(device):
        raise ModelLoadError(problem)

    if path is None or str(path) == "bundled":
        bundled = BUNDLED_WEIGHTS if (BUNDLED_WEIGHTS / "config.json").is_file() else None
        return load_native(bundled, device)
    folder = Path(path)
    config = folder / "config.json"
    if not config.is_file():
        raise ModelLoadError(f"{folder} has no config.json; expected a checkpoint folder of a supported kind ({kind_names()})")
    try:
        meta = json.loads(config.read_text())
    except json.JSONDecodeError as error:
        raise ModelLoadError(f"{config} is not valid JSON: {error}") from None
    kind = model_kind(meta)
    if random_weights and kind not in ("diffusion-gemma", "masked-dllm"):
        raise ModelLoadError(f"--random-weights applies to diffusion-gemma and masked-dllm checkpoints; {folder} is {kind}")
    if dllm_options is not None and dllm_options != _no_dllm_options() and kind != "masked-dllm":
        raise ModelLoadError(f"--mask-token-id, --block-size and --loader apply to masked-dllm checkpoints; {folder} is {kind}")
    if kind == "native":
        return load_native(folder, device)
    if kind == "masked-dllm":
        from .backends.block_dllm import block_backend_class
        from .backends.masked_dllm import MaskedDLLMBackend

        backend = block_backend_class(meta) or MaskedDLLMBackend
        try:
            return backend(
                folder, device, trust_remote_code, dllm_options or _no_dllm_options(), random_weights=random_weights
            )
        except (OSError, ValueError, ImportError) as error:
            raise ModelLoadError(f"cannot load {folder} as a masked diffusion LLM: {error}") from None
    if kind == "diffusion-gemma":
        from .backends.diffusion_gemma import DiffusionGemmaBackend

        try:
            return DiffusionGemmaBackend(folder, device, random_weights=random_weights)
        except (OSError, ValueError) as error:
            raise ModelLoadError(f"cannot load {folder} as DiffusionGemma: {error}") from None
    from .backends.hf_masked_lm import HFMaskedLMBackend

    try:
        return HFMaskedLMBackend(folder, device, trust_remote_code)
    except (OSError, ValueError) as error:
        raise ModelLoadError(
            f"cannot load {folder} as a masked LM: {error} (supported kinds: {kind_names()})"
        ) from None


def _no_dllm_options():
    from .backends.masked_dllm import MaskedDLLMOptions

    return MaskedDLLMOptions()
