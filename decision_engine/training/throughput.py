"""Training throughput, side by side, on the same ContractNLI groups.

`python -m decision_engine.training.throughput --contractnli FILE` times optimiser steps of three loops,
taking turns batch by batch so a slow spell of a shared machine slows all alike, and prints blocks per
CPU-second of each:

- `plain`: the context-window loop (320 document tokens beside the questions), the loop of the models
  bundled before the span pointer;
- `pointed`: the span-pointer loop of the `heads-reader` preset (the bundled reader's until 2026-12-07),
  every layer trained over each question and its own evidence;
- `answer_layers`: the bundled reader's loop (the `shipped` preset): the same examples, the prefix
  states encoded once by the frozen base and reused, the answer layers trained on top
  (`TrainConfig.answer_layers`, training/prefix_cache.py). Its one-time
  encoding is reported apart and spread over one pass and over `--epochs` passes.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from ..backends.native import model_vocabulary
from ..datasets.contractnli import load_contractnli, split_documents, to_requests
from .config import PRESETS, TrainConfig
from .examples import examples_from_line
from .loop import build_model, fit_pointer
from .objective import batch_tensors, masked_diffusion_loss
from .prefix_cache import FrozenPrefixCache
from .preparation import LayoutSpec, layout_for

LOOPS = ("plain", "pointed", "answer_layers")


def _cpu_seconds() -> float:
    return time.process_time()


def _config(contractnli: str, **changes) -> TrainConfig:
    base = {**PRESETS["heads-reader"], "contractnli_path": contractnli, "pointer_epochs": 0, "chooses_values": False}
    return TrainConfig(**{**base, **changes})


def measure(
    contractnli: str, documents: int = 12, batches: int = 12, batch_size: int = 8, epochs: int = 10, seed: int = 0
) -> dict:
    """Blocks per CPU-second of each loop over the ContractNLI groups of `documents` training documents."""
    rng = random.Random(seed)
    docs, hypotheses = load_contractnli(contractnli)
    train_docs, _ = split_documents(docs, 0.2, seed=seed)
    lines = [line for doc in train_docs[:documents] for line in to_requests(doc, hypotheses, rng=rng)]

    configs = {
        "plain": _config(contractnli, points_at_spans=False, segments_read_alone=False),
        "pointed": _config(contractnli),
        "answer_layers": _config(contractnli, answer_layers=True),
    }
    models = {name: build_model(cfg) for name, cfg in configs.items()}
    vocab = model_vocabulary(models["plain"])
    plain_layout = layout_for(LayoutSpec(models["plain"].cfg.max_positions, configs["plain"].context_tokens, False, "lexical"), vocab)
    context, _ = fit_pointer(configs["pointed"], models["pointed"], vocab, lambda _: None)  # untrained: ranks by cosine and BM25
    pointed_spec = LayoutSpec(models["pointed"].cfg.max_positions, configs["pointed"].context_tokens, False, "lexical")
    pointed_layout = layout_for(pointed_spec, vocab, context)
    pools = {
        "plain": [e for line in lines for e in examples_from_line(plain_layout, line, "joint")],
        "pointed": [e for line in lines for e in examples_from_line(pointed_layout, line, "joint")],
    }
    pools["answer_layers"] = pools["pointed"]

    cache = FrozenPrefixCache(8 << 30)
    began = _cpu_seconds()
    for i in range(0, len(pools["answer_layers"]), batch_size):
        cache.states(models["answer_layers"], [e.prefix for e in pools["answer_layers"][i : i + batch_size]], vocab.pad_id, "cpu")
    encoding_s = _cpu_seconds() - began

    generator = torch.Generator().manual_seed(seed)
    optimisers = {
        name: torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5) for name, model in models.items()
    }
    seconds = dict.fromkeys(LOOPS, 0.0)
    blocks = dict.fromkeys(LOOPS, 0)
    for b in range(batches):
        order = LOOPS[b % len(LOOPS):] + LOOPS[: b % len(LOOPS)]
        for name in order:
            model = models[name]
            batch = rng.sample(pools[name], batch_size)
            began = _cpu_seconds()
            tensors = batch_tensors(batch, vocab.pad_id, "cpu")
            prefix = None
            if name == "answer_layers":
                prefixes = [e.prefix for e in batch]
                prefix = cache.answer_state(model, prefixes, tensors["prefix_slots"], vocab.pad_id, "cpu")
            loss = masked_diffusion_loss(model, tensors, vocab.mask_id, generator, True, prefix)
            optimisers[name].zero_grad(set_to_none=True)
            loss.backward()
            optimisers[name].step()
            seconds[name] += _cpu_seconds() - began
            blocks[name] += len(batch)
    rates = {name: blocks[name] / seconds[name] for name in LOOPS}
    per_pass = len(pools["answer_layers"]) / rates["answer_layers"]

    def with_encoding(passes: int) -> float:
        return passes * len(pools["answer_layers"]) / (passes * per_pass + encoding_s)

    return {
        "documents": documents,
        "groups": len(lines),
        "batches_each": batches,
        "mean_prefix_tokens": {
            name: round(sum(len(e.prefix.token_ids) for e in pools[name]) / len(pools[name]), 1) for name in ("plain", "pointed")
        },
        "blocks_per_cpu_s": {name: round(rate, 3) for name, rate in rates.items()},
        "answer_layers_encoding_cpu_s": round(encoding_s, 1),
        "answer_layers_with_encoding_blocks_per_cpu_s": {
            "one_pass": round(with_encoding(1), 3), f"{epochs}_passes": round(with_encoding(epochs), 3),
        },
        "answer_layers_over_plain": round(rates["answer_layers"] / rates["plain"], 2),
        "answer_layers_over_pointed": round(rates["answer_layers"] / rates["pointed"], 2),
        f"answer_layers_over_plain_with_encoding_over_{epochs}_passes": round(with_encoding(epochs) / rates["plain"], 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contractnli", required=True, help="ContractNLI JSON file")
    parser.add_argument("--documents", type=int, default=12)
    parser.add_argument("--batches", type=int, default=12, help="timed batches of each loop")
    parser.add_argument("--epochs", type=int, default=10, help="passes the one-time encoding is spread over")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.contractnli, args.documents, args.batches, epochs=args.epochs), indent=1))


if __name__ == "__main__":
    main()
