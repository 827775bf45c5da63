"""Training throughput, side by side: the context-window loop and the reading loop on the same groups.

`python -m decision_engine.training.throughput --contractnli FILE` times optimiser steps of both loops,
taking turns batch by batch so a slow spell of a shared machine slows both alike, and prints blocks
per CPU-second of each, with the reading loop's one-time document encoding counted in (spread over one
pass of the groups) and left out (what every later epoch costs).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace

import torch

from ..backends.native import model_vocabulary
from ..datasets.contractnli import load_contractnli, split_documents, to_requests
from .config import PRESETS, TrainConfig
from .examples import examples_from_line
from .loop import build_model
from .objective import batch_tensors, masked_diffusion_loss
from .preparation import LayoutSpec, layout_for
from .reading import batch_tensors as reading_tensors
from .reading import encode_documents, lay_out_line, reading_loss


def _cpu_seconds() -> float:
    return time.process_time()


def measure(contractnli: str, documents: int = 12, batches: int = 12, batch_size: int = 8, seed: int = 0) -> dict:
    """Blocks per CPU-second of both loops over the ContractNLI groups of `documents` training documents."""
    rng = random.Random(seed)
    docs, hypotheses = load_contractnli(contractnli)
    train_docs, _ = split_documents(docs, 0.2, seed=seed)
    lines = [line for doc in train_docs[:documents] for line in to_requests(doc, hypotheses, rng=rng)]

    plain_cfg = TrainConfig(**{**PRESETS["shipped"], "init_from": None, "contractnli_path": contractnli})
    plain = build_model(plain_cfg)
    vocab = model_vocabulary(plain)
    layout = layout_for(LayoutSpec(plain.cfg.max_positions, plain_cfg.context_tokens, False, "lexical"), vocab)
    plain_examples = [e for line in lines for e in examples_from_line(layout, line, "joint")]

    reading_cfg = replace(plain_cfg, reads_documents=True)
    reader = build_model(reading_cfg)
    began = _cpu_seconds()
    states = encode_documents(reader, vocab, [line["document"]["text"] for line in lines], lambda _: None)
    encoding_s = _cpu_seconds() - began
    reading_examples = [e for line in lines for e in lay_out_line(vocab, line)]

    generator = torch.Generator().manual_seed(seed)
    optimisers = {
        name: torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        for name, model in (("plain", plain), ("reading", reader))
    }
    seconds = {"plain": 0.0, "reading": 0.0}
    blocks = {"plain": 0, "reading": 0}
    for b in range(batches):
        for name in ("plain", "reading") if b % 2 == 0 else ("reading", "plain"):
            pool = plain_examples if name == "plain" else reading_examples
            batch = rng.sample(pool, batch_size)
            began = _cpu_seconds()
            if name == "plain":
                loss = masked_diffusion_loss(plain, batch_tensors(batch, vocab.pad_id, "cpu"), vocab.mask_id, generator, True)
            else:
                tensors = reading_tensors(batch, states, vocab.pad_id, "cpu")
                loss = reading_loss(reader, tensors, vocab.mask_id, generator, reading_cfg.evidence_weight,
                                    reading_cfg.frozen_layers)[0]
            optimisers[name].zero_grad(set_to_none=True)
            loss.backward()
            optimisers[name].step()
            seconds[name] += _cpu_seconds() - began
            blocks[name] += len(batch)
    plain_rate = blocks["plain"] / seconds["plain"]
    reading_rate = blocks["reading"] / seconds["reading"]
    one_pass = len(reading_examples) / reading_rate + encoding_s
    return {
        "documents": documents,
        "groups": len(lines),
        "batches_each": batches,
        "plain_blocks_per_cpu_s": plain_rate,
        "reading_blocks_per_cpu_s": reading_rate,
        "reading_over_plain": reading_rate / plain_rate,
        "document_encoding_cpu_s": encoding_s,
        "reading_over_plain_with_encoding_over_one_pass": (len(reading_examples) / one_pass) / plain_rate,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contractnli", required=True, help="ContractNLI JSON file")
    parser.add_argument("--documents", type=int, default=12)
    parser.add_argument("--batches", type=int, default=12, help="timed batches of each loop")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.contractnli, args.documents, args.batches), indent=1))


if __name__ == "__main__":
    main()
