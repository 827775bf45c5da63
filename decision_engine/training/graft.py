"""A checkpoint whose reader comes from one checkpoint and whose heads come from another.

The reader is the block-diffusion transformer itself: its embeddings, layers (and answer layers),
output head and question summary. The heads are everything fitted beside it over the frozen base
encoder's vectors: the span and evidence pointers, the value choosers, the comparison chooser, the
choice, verdict and agreement readers, and what the heads checkpoint records in its config (the
absence gate, the calibration maps, the parts stored in int8). So a reader trained again (by another
loop, on a GPU) can be measured under the heads a model already has, without fitting them again.
The calibration maps were fitted to the heads checkpoint's own reader: fit them again (`calibrate`)
before trusting the grafted model's confidences.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..model.loader import ModelLoadError, load_checkpoint, model_class, save_checkpoint

READER_PARTS = (
    "embed.", "layers.", "answer_layers.", "slot_keys", "head_", "question_summary.", "document_embed.",
    "document_layers.",
)
# config fields that say how the reader is built; every other field says which heads there are
READER_FIELDS = (
    "max_positions", "max_slots", "split_digits", "question_summary", "reads_documents", "segments_read_alone",
    "summary_from_marker", "answer_layers",
)
SHAPE_FIELDS = ("vocab_size", "hidden", "layers", "heads", "intermediate", "type_vocab")
_OWN_RECORDS = ("name", "config", "from_base", "train_config", "context_tokens")


def is_reader_key(key: str) -> bool:
    """Whether a state key belongs to the reader rather than to a head."""
    return key.startswith(READER_PARTS)


def graft_heads(reader: Path, heads: Path, out: Path, names: tuple[str, str] | None = None) -> dict:
    """Write to `out` the reader of checkpoint `reader` under the heads of checkpoint `heads`; return
    what was taken from where (`names`: how to record the two, as given; their paths by default).
    Raises ModelLoadError where the two readers differ in shape."""
    reader_name, heads_name = names or (str(reader), str(heads))
    reader_model, reader_meta = load_checkpoint(reader)
    heads_model, heads_meta = load_checkpoint(heads)
    if differ := [f for f in SHAPE_FIELDS if getattr(reader_model.cfg, f) != getattr(heads_model.cfg, f)]:
        raise ModelLoadError(
            f"{reader} and {heads} have readers of different shapes ({', '.join(differ)}); heads read the "
            "reader's vocabulary and width, so they cannot be grafted"
        )
    cfg = replace(heads_model.cfg, **{f: getattr(reader_model.cfg, f) for f in READER_FIELDS})
    model = model_class(cfg)(cfg)
    own_reader, own_heads = reader_model.state_dict(), heads_model.state_dict()
    state = {}
    for key in model.state_dict():
        source = own_reader if is_reader_key(key) else own_heads
        if key not in source:
            raise ModelLoadError(f"{reader if source is own_reader else heads} has no weight {key!r} for the grafted model")
        state[key] = source[key]
    model.load_state_dict(state, strict=True)
    extra = {k: v for k, v in heads_meta.items() if k not in _OWN_RECORDS}
    extra["train_config"] = reader_meta.get("train_config")
    extra["context_tokens"] = reader_meta.get("context_tokens", heads_meta.get("context_tokens"))
    extra["training"] = {**heads_meta.get("training", {}), "grafted_reader": reader_meta.get("training", {})}
    # the config of the run the heads were fitted over (its own record, or the one it was grafted with)
    heads_config = heads_meta.get("grafted", {}).get("heads_train_config", heads_meta.get("train_config"))
    extra["grafted"] = {"reader": reader_name, "heads": heads_name, "heads_train_config": heads_config}
    omit = sorted(
        {k for k in reader_meta.get("from_base", []) if is_reader_key(k)}
        | {k for k in heads_meta.get("from_base", []) if not is_reader_key(k)}
    )
    save_checkpoint(model, out, reader_meta.get("name", reader.name), extra=extra, omit_from_base=omit)
    changed = {f: getattr(cfg, f) for f in READER_FIELDS if getattr(cfg, f) != getattr(heads_model.cfg, f)}
    return {"out": str(out), "reader": reader_name, "heads": heads_name, "reader_config": changed}
