"""The engine's joint decoding side by side with the model's own `generate`, at one fixed step count.

On the same groups, batch by batch (the two taking turns), the engine decides each batch in joint
mode with every block held to `steps` forward passes, and DiffusionGemma's `generate` denoises one
canvas per group, over the same prompt the engine encodes for it, in exactly `steps` decoder passes
(its early stop turned off). A forward pass is one batched call of the answer-block decoder.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from ..backends.diffusion_gemma import DiffusionGemmaBackend, framed, left_pad
from ..backends.protocol import PrefixInput
from ..engine import DecisionEngine
from ..types import DecisionRequest
from .runner import clear_document_cache, decided


def has_own_generate(model) -> bool:
    """Whether the benchmark can run the model's own generate beside the engine (DiffusionGemma)."""
    return isinstance(model, DiffusionGemmaBackend)


@dataclass
class _Record:
    prefixes: list[PrefixInput] = field(default_factory=list)  # what the engine encoded, in order
    block_calls: int = 0


@contextlib.contextmanager
def recording(model) -> Iterator[_Record]:
    """Within the block, the prefixes `model.encode_prefix` is given and the number of `block_logits` calls."""
    record = _Record()
    encode, block = model.encode_prefix, model.block_logits

    def encode_prefix(prefixes, *args, **kwargs):
        record.prefixes.extend(prefixes)
        return encode(prefixes, *args, **kwargs)

    def block_logits(*args, **kwargs):
        record.block_calls += 1
        return block(*args, **kwargs)

    model.encode_prefix, model.block_logits = encode_prefix, block_logits
    try:
        yield record
    finally:
        del model.encode_prefix, model.block_logits


def generate_batch(backend: DiffusionGemmaBackend, prompts: Sequence[PrefixInput], steps: int) -> int:
    """One call of the model's `generate` over the prompts (left-padded, one canvas each) in `steps`
    denoising steps; returns the decoder passes it ran."""
    ids, mask, _ = left_pad(prompts, backend.vocab.pad_id, backend.device)
    passes = [0]
    hook = backend.model.model.decoder.register_forward_hook(lambda *_: passes.__setitem__(0, passes[0] + 1))
    try:
        backend.model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=backend.model.config.canvas_length,
            max_denoising_steps=steps, stability_threshold=None, confidence_threshold=None, disable_compile=True,
        )
    finally:
        hook.remove()
    return passes[0]


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def side_by_side(engine: DecisionEngine, requests: Sequence[DecisionRequest], steps: int, batch_size: int) -> dict:
    """Forward passes and groups per second of the engine (joint mode) and of the model's own generate,
    on the same requests in batches of `batch_size`; `requests` already hold the engine to `steps`."""
    backend = engine.model
    device = torch.device(backend.device)
    engine_s = generate_s = 0.0
    engine_passes = generate_passes = prompt_tokens = prompts = 0
    warm = False
    for turn, first in enumerate(range(0, len(requests), batch_size)):
        chunk = requests[first : first + batch_size]
        clear_document_cache(engine)
        _synchronize(device)
        began = time.perf_counter()
        with recording(backend) as record:
            decided(engine.decide_many(chunk, "joint"))
        _synchronize(device)
        engine_s += time.perf_counter() - began
        engine_passes += record.block_calls
        framed_prompts = [framed(p, backend.chat_head, backend.chat_tail) for p in record.prefixes]
        if not warm:  # first allocations of the generate path, untimed (the engine was warmed up already)
            generate_batch(backend, framed_prompts, steps)
            warm = True
        _synchronize(device)
        began = time.perf_counter()
        generate_passes += generate_batch(backend, framed_prompts, steps)
        _synchronize(device)
        generate_s += time.perf_counter() - began
        prompt_tokens += sum(len(p.token_ids) for p in framed_prompts)
        prompts += len(framed_prompts)
    groups = len(requests)
    return {
        "steps": steps,  # forward passes per block, the engine's and generate's alike
        "mode": "joint",
        "batch_size": batch_size,
        "groups": groups,
        "prompts": prompts,  # the engine's prefixes, each generate's prompt too
        "mean_prompt_tokens": prompt_tokens / prompts if prompts else 0.0,
        "canvas_length": int(backend.model.config.canvas_length),  # tokens generate denoises per prompt
        "seconds": engine_s,
        "forward_passes": engine_passes,
        "forward_passes_per_s": engine_passes / engine_s,
        "groups_per_s": groups / engine_s,
        "generate_seconds": generate_s,
        "generate_forward_passes": generate_passes,
        "generate_forward_passes_per_s": generate_passes / generate_s,
        "generate_groups_per_s": groups / generate_s,
        "groups_per_s_over_generate": (groups / engine_s) / (groups / generate_s),
        "forward_passes_per_s_over_generate": (engine_passes / engine_s) / (generate_passes / generate_s),
    }
