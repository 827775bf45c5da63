"""Training the span pointer on gold evidence, before the reader trains on what it points at.

Span and question vectors come from the frozen base encoder and are computed once per document, so
an epoch over the pointer's examples costs milliseconds: only the pointer's bilinear form and its
two scalars learn. An optional penalty holds the form near the identity (cosine ranking).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ..metrics import overlaps
from ..reader.span_pointer import SpanPointer, pointer_loss
from ..retrieval.embedder import SpanEmbedder
from ..retrieval.pointed import PointerFeatures, pointer_features

IDENTITY_PENALTY = 1e-3  # weight of ||W - I||^2 beside the evidence loss, as the bundled reader was trained with


@dataclass
class PointerExample:
    """One document's spans and questions, with each question's gold spans."""

    features: PointerFeatures
    gold: torch.Tensor  # (Q, S) True on spans overlapping the question's gold evidence


def pointer_examples(lines: Sequence[dict], embedder: SpanEmbedder) -> list[PointerExample]:
    """Examples from labelled request lines whose questions carry gold evidence ranges."""
    out = []
    for line in lines:
        evidence = line.get("evidence") or {}
        asked = [(q["text"], evidence.get(q["id"]) or []) for q in line["questions"]]
        asked = [(text, ranges) for text, ranges in asked if ranges]
        if not asked:
            continue
        features = pointer_features(embedder, line["document"]["text"], [t for t, _ in asked])
        if not features.spans:
            continue
        gold = torch.tensor(
            [[overlaps((s.start, s.end), ranges) for s in features.spans] for _, ranges in asked], dtype=torch.bool
        )
        out.append(PointerExample(features, gold))
    return out


def hit_at_1(pointer: SpanPointer, examples: Sequence[PointerExample]) -> float:
    """Share of questions whose top-ranked span overlaps their gold evidence."""
    hits = total = 0
    with torch.no_grad():
        for e in examples:
            f = e.features
            best = pointer(f.question_vectors, f.span_vectors, f.lexical).argmax(dim=-1)
            hits += int(e.gold[torch.arange(len(best)), best].sum())
            total += len(best)
    return hits / max(total, 1)


def train_pointer(
    pointer: SpanPointer,
    examples: Sequence[PointerExample],
    epochs: int,
    seed: int = 0,
    learning_rate: float = 2e-3,
    log: Callable[[str], None] = print,
    identity_penalty: float = IDENTITY_PENALTY,
) -> dict:
    """Fit `pointer` to the examples' gold spans; returns hit@1 before and after, on the examples."""
    before = hit_at_1(pointer, examples)
    rng = random.Random(seed)
    optimiser = torch.optim.Adam(pointer.parameters(), lr=learning_rate)
    identity = torch.eye(pointer.question.weight.shape[0])
    order = list(range(len(examples)))
    for epoch in range(epochs):
        rng.shuffle(order)
        total = 0.0
        for i in order:
            f = examples[i].features
            loss = pointer_loss(pointer(f.question_vectors, f.span_vectors, f.lexical), examples[i].gold)
            if identity_penalty:
                loss = loss + identity_penalty * (pointer.question.weight - identity).pow(2).sum()
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            total += loss.item()
        if (epoch + 1) % 10 == 0 or epoch + 1 == epochs:
            log(f"pointer epoch {epoch + 1}/{epochs}: loss {total / max(len(order), 1):.4f}")
    after = hit_at_1(pointer, examples)
    log(f"pointer hit@1 on its training documents: {before:.3f} -> {after:.3f}")
    return {
        "examples": len(examples), "epochs": epochs, "identity_penalty": identity_penalty,
        "hit_at_1_before": round(before, 4), "hit_at_1_after": round(after, 4),
    }


def refit_pointer(
    folder: Path,
    out: Path,
    contractnli: Path,
    epochs: int,
    identity_penalty: float,
    seed: int = 0,
    log: Callable[[str], None] = print,
    evidence_only: bool = False,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with its span pointer fitted again from
    the start on the ContractNLI training documents (the reader and value chooser unchanged); returns
    the fit's summary, with hit@1 on the held-out documents of the same split.

    With `evidence_only` the fitted pointer becomes the checkpoint's evidence pointer
    (`orders_evidence`): it orders the evidence answers report, while the pointer the reader was
    trained with still lays out what each question reads, so no answer changes."""
    from ..model.loader import checkpoint_config, load_checkpoint, save_refitted
    from .config import TrainConfig
    from .loop import evidenced_lines

    saved, _ = checkpoint_config(folder)
    if not saved.points_at_spans:
        raise ValueError(f"{folder} has no span pointer to fit")
    model, meta = load_checkpoint(folder)
    cfg = TrainConfig(contractnli_path=str(contractnli), seed=seed)
    embedder = SpanEmbedder(cache_size=0)
    torch.manual_seed(seed)
    pointer = SpanPointer()
    pointer.train()
    fitted = train_pointer(pointer, pointer_examples(evidenced_lines(cfg), embedder), epochs, seed, log=log, identity_penalty=identity_penalty)
    pointer.eval()
    held_out = pointer_examples(evidenced_lines(cfg, held_out=True), embedder)
    fitted["held_out_documents"] = len(held_out)
    fitted["held_out_hit_at_1"] = round(hit_at_1(pointer, held_out), 4)
    log(f"pointer hit@1 on {len(held_out)} held-out documents: {fitted['held_out_hit_at_1']:.3f}")
    if evidence_only:
        model.cfg = replace(model.cfg, orders_evidence=True)
        model.evidence_pointer = pointer
        save_refitted(model, meta, out, folder, "evidence_pointer", fitted)
    else:
        model.span_pointer.load_state_dict(pointer.state_dict())
        save_refitted(model, meta, out, folder, "pointer", fitted)
    return fitted
