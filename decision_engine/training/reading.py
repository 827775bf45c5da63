"""Training the reading model: document states encoded once and reused, an evidence loss beside the answer loss,
and questions asked again with their evidence hidden, so habit alone cannot lower the loss.

Every document is encoded by the frozen document encoder once, before the first step; each step then
runs only question prefixes and answer blocks against those stored states.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..backends.protocol import PrefixInput
from ..backends.vocabulary import Vocabulary
from ..decoding.layout import LeadingContext, lay_out
from ..errors import RequestError
from ..model.reading import DocumentMemory, ReadingModel, evidence_loss
from ..reader.encoding import DocumentStates
from ..reader.windows import tokenize_document
from ..types import MAX_QUESTIONS
from ..validation import request_from_object
from .config import TrainConfig
from .objective import batch_tensors as block_batch_tensors
from .objective import mask_block, masked_token_loss

NOT_MENTIONED = "not mentioned"
MAX_POSITIONS = 512  # the reading model's window for questions and answers


@dataclass(frozen=True)
class ReadingExample:
    """One answer block over questions-only prefix, the document it reads, and what the pointer should find."""

    document: str  # key into the run's document states
    prefix: PrefixInput
    gold: list[int]  # gold token per block position
    slots: list[int]  # 1-based slot number per block position
    allowed: list[list[int]]  # per block position: every token its schema lets it hold
    evidence: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # slot number -> gold character ranges
    hidden: tuple[tuple[int, int], ...] = ()  # character ranges taken out of the document's view


def lay_out_line(vocab: Vocabulary, line: dict[str, Any], independent: int | None = None) -> list[ReadingExample]:
    """The blocks of one labelled line as the engine lays them out for a reading model: the whole group,
    plus question `independent` alone (its independent-mode block) when given."""
    labels = line.get("labels") or {}
    try:
        request = request_from_object(line)
        layouts = [lay_out(request, "joint", vocab, LeadingContext(vocab), MAX_POSITIONS, reads_documents=True)]
        if independent is not None:
            layouts.append(lay_out(request, "independent", vocab, LeadingContext(vocab), MAX_POSITIONS, reads_documents=True))
    except RequestError:
        return []
    ids = [q.id for q in request.questions]
    if set(labels) != set(ids):
        return []
    evidence = line.get("evidence") or {}
    blocks = layouts[0].blocks
    if independent is not None:
        blocks = [*blocks, layouts[1].blocks[independent % len(ids)]]
    out = []
    for block in blocks:
        spaces = block.group.constraints.spaces
        gold, slots, allowed = [], [], []
        for slot, number in zip(block.slots, block.numbers):
            tokens = spaces[slot].encode(labels[ids[slot]])
            gold.extend(tokens)
            slots.extend([number] * len(tokens))
            allowed.extend(spaces[slot].allowed([None] * spaces[slot].length, set(range(spaces[slot].classes.count))))
        found = {n: [tuple(r) for r in evidence.get(ids[s], [])] for s, n in zip(block.slots, block.numbers)}
        out.append(ReadingExample(request.document.text, block.prefix, gold, slots, allowed, found))
    return out


def hidden_evidence_examples(vocab: Vocabulary, line: dict[str, Any], rng: random.Random, share: float) -> list[ReadingExample]:
    """ContractNLI questions asked alone with their gold evidence hidden: the answer becomes "not mentioned"."""
    out = []
    for question in line["questions"]:
        ranges = (line.get("evidence") or {}).get(question["id"]) or []
        if not ranges or NOT_MENTIONED not in (question["schema"].get("enum") or []) or rng.random() >= share:
            continue
        alone = {**line, "questions": [question], "rules": [], "labels": {question["id"]: NOT_MENTIONED}, "evidence": {}}
        for example in lay_out_line(vocab, alone):
            out.append(ReadingExample(example.document, example.prefix, example.gold, example.slots, example.allowed,
                                      {}, tuple(tuple(r) for r in ranges)))
    return out


def token_mask(states: DocumentStates, ranges: Sequence[tuple[int, int]]) -> torch.Tensor:
    """(N,) True on document tokens that overlap any of the character `ranges`."""
    mask = torch.zeros(len(states), dtype=torch.bool)
    starts, ends = states.offsets[:, 0], states.offsets[:, 1]
    for a, b in ranges:
        mask |= (starts < b) & (ends > a)
    return mask


def batch_tensors(examples: Sequence[ReadingExample], states: dict[str, DocumentStates], pad_id: int, device) -> dict:
    """The plain objective's padded prefixes and blocks, plus the documents' memory and gold evidence tokens."""
    tensors = block_batch_tensors(examples, pad_id, device)
    documents = [states[e.document] for e in examples]
    memory = DocumentMemory.stack(documents, device)
    n = memory.mask.shape[1]
    hide = torch.zeros((len(examples), n), dtype=torch.bool)
    gold_tokens = torch.zeros((len(examples), MAX_QUESTIONS + 1, n), dtype=torch.bool)  # per slot number
    for i, (e, d) in enumerate(zip(examples, documents)):
        if e.hidden:
            hide[i, : len(d)] = token_mask(d, e.hidden)
        for number, ranges in e.evidence.items():
            if ranges:
                gold_tokens[i, number, : len(d)] = token_mask(d, ranges)
    return {**tensors, "memory": memory.hiding(hide.to(device)), "gold_tokens": gold_tokens.to(device)}


def reading_loss(
    model: ReadingModel, batch: dict, mask_id: int, generator: torch.Generator, evidence_weight: float, frozen_layers: int = 0
):
    """(total, answer, evidence): the constrained masked-diffusion loss on the block plus the pointer's evidence loss."""
    inputs, masked = mask_block(batch, mask_id, generator)
    logits, prefix = model(
        batch["prefix_ids"], batch["prefix_slots"], batch["prefix_mask"], inputs, batch["block_slots"], batch["columns"],
        batch["memory"], frozen_layers,
    )
    logits = logits.float().masked_fill(~batch["allowed"], float("-inf"))
    answer = masked_token_loss(logits, batch["gold_column"], masked)
    pointer = prefix.pointer.float()
    evidence = evidence_loss(pointer, batch["gold_tokens"][:, : pointer.shape[1]])
    return answer + evidence_weight * evidence, answer, evidence


def encode_documents(model: ReadingModel, vocab: Vocabulary, texts: Sequence[str], log: Callable[[str], None]) -> dict[str, DocumentStates]:
    """Each distinct document's states, encoded once by the frozen encoder and kept in bfloat16."""
    states: dict[str, DocumentStates] = {}
    started = time.monotonic()
    for text in texts:
        if text in states:
            continue
        s = model.encode_document_windows(tokenize_document(vocab, text), vocab.cls_id, vocab.sep_id)
        states[text] = DocumentStates(s.keys.bfloat16(), s.values.bfloat16(), s.hidden.bfloat16(), s.offsets)
    tokens = sum(len(s) for s in states.values())
    log(f"encoded {len(states)} documents ({tokens} tokens) in {time.monotonic() - started:.0f} s")
    return states


def training_lines(cfg: TrainConfig, epoch: int, rng: random.Random) -> list[dict]:
    """One fixed pool of `generated_groups_per_epoch` generated groups (their documents are encoded once,
    so the pool is reused every epoch) plus this epoch's regrouping of the ContractNLI training documents."""
    from ..datasets.linked_groups import generate_groups

    lines = generate_groups("train", cfg.generated_groups_per_epoch, seed=cfg.seed)
    if cfg.contractnli_path:
        from ..datasets.contractnli import to_requests
        from .loop import contractnli_documents

        train_docs, hypotheses = contractnli_documents(cfg)
        for _ in range(cfg.contractnli_repeats):
            for doc in train_docs:
                lines.extend(to_requests(doc, hypotheses, group_size=rng.randint(2, MAX_QUESTIONS), rng=rng))
    return lines


def epoch_examples(cfg: TrainConfig, vocab: Vocabulary, lines: list[dict], rng: random.Random) -> list[ReadingExample]:
    out = []
    for line in lines:
        alone = rng.randrange(len(line["questions"])) if rng.random() < cfg.independent_share else None
        out.extend(lay_out_line(vocab, line, alone))
        if line.get("evidence"):
            out.extend(hidden_evidence_examples(vocab, line, rng, cfg.hidden_evidence_share))
    return out


def batches(examples: list[ReadingExample], states: dict[str, DocumentStates], size: int, rng: random.Random) -> Iterator[list[ReadingExample]]:
    """Batches of documents of similar length (less padding of the memory), in random order."""
    ordered = sorted(examples, key=lambda e: len(states[e.document]) * (1 + 0.1 * rng.random()))
    chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    rng.shuffle(chunks)
    yield from chunks


def train_reader(
    cfg: TrainConfig, model: ReadingModel, vocab: Vocabulary, device: str = "cpu", log: Callable[[str], None] = print
) -> dict:
    """Train `model` in place; returns a summary of the run (steps, examples per second, loss history)."""
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    model.to(device)
    lines = training_lines(cfg, 0, rng)
    states = encode_documents(model, vocab, [line["document"]["text"] for line in lines], log)
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    started = time.monotonic()
    step, seen, history, total_steps = 0, 0, [], None
    train_seconds = 0.0
    for epoch in range(cfg.epochs):
        if epoch:
            lines = training_lines(cfg, epoch, rng)
        examples = epoch_examples(cfg, vocab, lines, rng)
        if total_steps is None:
            total_steps = cfg.epochs * math.ceil(len(examples) / cfg.batch_size)
            total_steps = min(total_steps, cfg.max_steps or total_steps)
        log(f"epoch {epoch + 1}/{cfg.epochs}: {len(examples)} blocks")
        model.train()
        sums = [0.0, 0.0]
        for batch in batches(examples, states, cfg.batch_size, rng):
            began = time.monotonic()
            progress = max(step / total_steps, (began - started) / (cfg.max_minutes * 60) if cfg.max_minutes else 0.0)
            lr = cfg.learning_rate * min(1.0, (step + 1) / cfg.warmup_steps) * max(0.05, 1 - progress)
            for group in optimiser.param_groups:
                group["lr"] = lr
            tensors = batch_tensors(batch, states, vocab.pad_id, device)
            loss, answer, evidence = reading_loss(
                model, tensors, vocab.mask_id, generator, cfg.evidence_weight, cfg.frozen_layers
            )
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimiser.step()
            train_seconds += time.monotonic() - began
            step += 1
            seen += len(batch)
            sums[0] += answer.item()
            sums[1] += evidence.item()
            if step % cfg.log_every == 0:
                minutes = (time.monotonic() - started) / 60
                log(f"step {step}  answer {sums[0] / cfg.log_every:.4f}  evidence {sums[1] / cfg.log_every:.4f}  "
                    f"lr {lr:.2e}  {seen / train_seconds:.2f} blocks/s  {minutes:.1f} min")
                history.append({"step": step, "answer_loss": sums[0] / cfg.log_every,
                                "evidence_loss": sums[1] / cfg.log_every, "minutes": round(minutes, 2)})
                sums = [0.0, 0.0]
            if (cfg.max_steps and step >= cfg.max_steps) or (cfg.max_minutes and time.monotonic() - started > cfg.max_minutes * 60):
                break
        else:
            continue
        break
    model.eval()
    return {
        "steps": step,
        "blocks_seen": seen,
        "blocks_per_train_second": round(seen / train_seconds, 3) if train_seconds else 0.0,
        "minutes": round((time.monotonic() - started) / 60, 2),
        "device": device,
        "history": history,
    }


def train_reading(cfg: TrainConfig, out: Path, device: str = "cpu", log: Callable[[str], None] = print) -> dict:
    """Build (or continue) the reading model, train it, and save it into `out` without its frozen parts."""
    from ..backends.native import model_vocabulary
    from ..model.loader import frozen_document_keys, save_checkpoint
    from .loop import FROZEN_FROM_BASE, build_model

    model = build_model(cfg)
    if not isinstance(model, ReadingModel):
        raise ValueError(f"{cfg.init_from}: not a reading model's checkpoint, so it cannot continue as one")
    summary = train_reader(cfg, model, model_vocabulary(model), device, log)
    omit = [*frozen_document_keys(model), *(FROZEN_FROM_BASE if cfg.freeze_word_embeddings else [])] if cfg.from_base else []
    save_checkpoint(model, out, f"decision-model-{cfg.name}", extra={"train_config": cfg.to_dict(), "training": summary},
                    omit_from_base=omit)
    return summary
