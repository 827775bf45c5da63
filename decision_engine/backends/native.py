"""The bundled block-diffusion model behind the denoiser's model interface."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import torch

from ..calibration import Calibration
from ..int8 import per_token_int8
from ..reader.absence_gate import AbsenceGate
from ..model.loader import base_model_dir, from_base, load_checkpoint
from ..model.reading import DocumentMemory
from ..model.transformer import BlockDiffusionModel, PrefixState
from ..precision import keep_weight_copies
from ..reader.document_cache import DEFAULT_CACHE_BYTES, DocumentCache, document_key
from ..reader.encoding import DocumentStates
from ..reader.evidence import document_spans, pointed_spans, span_token_index
from ..reader.windows import tokenize_document
from ..types import Evidence
from .protocol import PrefixInput
from .vocabulary import Vocabulary

UNTRAINED_NAME = "minilm-l6-block-diffusion-untrained"


def base_tokenizer():
    """The WordPiece tokenizer shipped with the base encoder package (loaded offline)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base_model_dir()), local_files_only=True)


def model_vocabulary(model: BlockDiffusionModel) -> Vocabulary:
    """The base tokenizer's vocabulary, reading text the way `model` was trained to (digits split or not)."""
    return Vocabulary.from_tokenizer(base_tokenizer(), split_digits=model.cfg.split_digits)


def pad_prefixes(prefixes: Sequence[PrefixInput], pad_id: int, device) -> tuple[torch.Tensor, ...]:
    """Right-padded (ids, slots, mask), each (B, T)."""
    width = max(len(p.token_ids) for p in prefixes)
    ids = torch.full((len(prefixes), width), pad_id, dtype=torch.long)
    slots = torch.zeros((len(prefixes), width), dtype=torch.long)
    mask = torch.zeros((len(prefixes), width), dtype=torch.bool)
    for i, p in enumerate(prefixes):
        n = len(p.token_ids)
        ids[i, :n] = torch.tensor(p.token_ids)
        slots[i, :n] = torch.tensor(p.slot_ids)
        mask[i, :n] = True
    return ids.to(device), slots.to(device), mask.to(device)


def pad_positions(prefixes: Sequence[PrefixInput], device) -> torch.Tensor | None:
    """Right-padded (B, T) positions of prefixes laid out per question; None where none restarts them."""
    if all(p.positions is None for p in prefixes):
        return None
    width = max(len(p.token_ids) for p in prefixes)
    positions = torch.zeros((len(prefixes), width), dtype=torch.long)
    for i, p in enumerate(prefixes):
        n = len(p.token_ids)
        positions[i, :n] = torch.tensor(p.positions if p.positions is not None else range(n))
    return positions.to(device)


class NativeBackend:
    """Runs `BlockDiffusionModel` with a real per-layer prefix KV cache."""

    def __init__(
        self,
        model: BlockDiffusionModel,
        vocab: Vocabulary,
        name: str,
        device: str = "cpu",
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ):
        self.model = model.to(device).eval()
        self.vocab = vocab
        self.name = name
        self.version = ""  # short content hash of the checkpoint; empty for the untrained base
        self.device = torch.device(device)
        self.max_positions = model.cfg.max_positions
        self.context_tokens: int | None = None  # document-token cap the model was trained with
        self.reads_documents = model.cfg.reads_documents
        self.documents: DocumentCache = DocumentCache(cache_bytes)  # encoded documents, for reading models
        self.span_pointer = model.span_pointer  # lays each question's evidence beside it (retrieval/pointed.py)
        self.evidence_pointer = model.evidence_pointer  # orders the evidence answers report, where fitted
        self.value_chooser = model.value_chooser  # grounds integer and date slots (grounding/grounder.py)
        self.generic_chooser = model.generic_chooser  # grounds them where it is unsure (reader/fallback_chooser.py)
        self.generic_below = model.cfg.generic_below  # the value chooser's top probability under which it does
        self.mentions_in_spans = model.cfg.mentions_in_spans  # the choosers read mentions in the pointer's spans
        self.comparison_chooser = model.comparison_chooser  # may answer boolean slots by a comparison (the same)
        self.verdict_reader = model.verdict_reader  # weighs in on hypothesis slots (reader/verdict_reader.py)
        self.choice_reader = model.choice_reader  # weighs in on boolean and enum slots (reader/choice_reader.py)
        self.cross_reader = model.cross_reader  # and so does this one, reading their evidence (reader/cross_reader.py)
        self.agreement_reader = model.agreement_reader  # weighs joint answers again (reader/agreement_reader.py)
        self.value_agreement_reader = model.value_agreement_reader  # and their integer and date answers (decoding/value_agreement.py)
        self.calibration = None  # maps raw confidence to reported confidence per answer kind (calibration.py)
        self.absence_gate = None  # shifts "not mentioned" by how strongly a passage was found (reader/absence_gate.py)

    def keep_weight_copies(self, dtype: torch.dtype) -> None:
        """For passes under autocast to `dtype`: the linear layers of the transformer layers keep a copy
        of their weights in it (`precision.keep_weight_copies`); the heads' small layers do not."""
        for layers in (self.model.layers, self.model.answer_layers):
            if layers is not None:
                keep_weight_copies(layers, dtype)

    def quantize_int8(self) -> None:
        """Compute the transformer layers' linear layers in int8 from now on (`int8.Int8Linear`); the
        heads' small layers stay float32. Inference only: the layers no longer train."""
        for layers in (self.model.layers, self.model.answer_layers):
            if layers is not None:
                per_token_int8(layers)

    def encode_prefix(self, prefixes: Sequence[PrefixInput]) -> PrefixState:
        ids, slots, mask = pad_prefixes(prefixes, self.vocab.pad_id, self.device)
        with torch.inference_mode():
            if not self.reads_documents:
                return self.model.encode_prefix(ids, slots, mask, pad_positions(prefixes, self.device))
            texts = [p.document or "" for p in prefixes]
            states = [self.document_states(text) for text in texts]
            cache = self.model.encode_prefix(ids, slots, mask, DocumentMemory.stack(states, self.device))
            cache.documents = list(zip(texts, states))
            return cache

    def document_states(self, text: str) -> DocumentStates:
        """The document's encoded states: from the cache, or encoded now (once per text and model version)."""
        key = document_key(text, salt=self.version or self.name)
        tokens = lambda: tokenize_document(self.vocab, text)  # noqa: E731 - only on a miss
        return self.documents.get_or_compute(
            key, lambda: self.model.encode_document_windows(tokens(), self.vocab.cls_id, self.vocab.sep_id)
        )

    def pointed_evidence(self, cache, numbers: Sequence[Sequence[int]]) -> list[dict[int, list[Evidence]]]:
        """Per row, for each of its slot `numbers`, the spans holding most of that question's pointer mass."""
        found = []
        for row, ((text, states), asked) in enumerate(zip(cache.documents, numbers)):
            spans = document_spans(text)
            per_slot: dict[int, list[Evidence]] = {}
            if not spans:
                found.append(per_slot)
                continue
            token_span = span_token_index(spans, states.offsets)
            for number in asked:
                pointer = cache.pointer[row, number, : len(states)]
                per_slot[number] = [
                    Evidence(start=s.start, end=s.end, text=s.text, score=round(mass, 4))
                    for s, mass in pointed_spans(text, spans, token_span, pointer)
                ]
            found.append(per_slot)
        return found

    def block_logits(
        self,
        cache: PrefixState,
        block_ids: torch.Tensor,
        block_slots: torch.Tensor,
        columns: torch.Tensor | None = None,
    ) -> torch.Tensor:
        with torch.inference_mode():
            hidden = self.model.block_hidden(cache, block_ids.to(self.device), block_slots.to(self.device))
            return self.model.logits(hidden, None if columns is None else columns.to(self.device))


def load_native(path: Path | None, device: str = "cpu") -> NativeBackend:
    """A checkpoint folder, or (path None) the base encoder with an untrained head."""
    if path is None:
        model = from_base()
        return NativeBackend(model, model_vocabulary(model), UNTRAINED_NAME, device)
    model, meta = load_checkpoint(path, device)
    backend = NativeBackend(model, model_vocabulary(model), meta.get("name", path.name), device)
    backend.context_tokens = meta.get("context_tokens")
    backend.calibration = Calibration.from_dict(meta.get("calibration"))
    backend.absence_gate = AbsenceGate.from_dict(meta.get("absence_gate"))
    backend.version = checkpoint_version(path)
    return backend


def checkpoint_version(folder: Path) -> str:
    """The first 12 hex digits of the SHA-256 over a checkpoint's files, so stored decisions name exact weights."""
    digest = hashlib.sha256()
    for file in sorted(Path(folder).iterdir()):
        if file.is_file() and file.suffix in (".json", ".safetensors"):
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:12]
