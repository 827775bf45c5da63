"""The training loop: data per epoch, length-bucketed batches, AdamW, checkpoint at the end."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import torch

from ..backends.native import model_vocabulary
from ..model.loader import checkpoint_config, from_base, load_checkpoint, random_model, save_checkpoint
from ..model.transformer import BlockDiffusionConfig
from ..reader.chooser_ensemble import chooser_count, read_cue
from ..types import MAX_QUESTIONS
from .config import TrainConfig
from .examples import Example
from .objective import batch_tensors, masked_diffusion_loss
from .prefix_cache import FrozenPrefixCache
from .resume import ResumeError, ResumePoint, clear_resume_point, load_resume_point, save_resume_point
from .preparation import ExamplePreparer, LayoutSpec, plan_epoch

FROZEN_FROM_BASE = ["embed.word.weight"]
GPU_SPAN_BATCH = 256  # spans per encoder call when a GPU embeds an epoch's spans for the workers
CONTRACTNLI_MIN_GROUP = 2  # hypotheses in the smallest ContractNLI training group (the largest: MAX_QUESTIONS)


def build_model(cfg: TrainConfig) -> torch.nn.Module:
    """The model to train, built to its final config: fresh, or continued from a checkpoint (with a
    longer window or a question summary where `cfg` asks for them)."""
    if cfg.init_from:
        saved, _ = checkpoint_config(continued_folder(cfg))
        model_cfg = replace(
            saved,
            max_positions=max(saved.max_positions, cfg.max_positions),  # a longer window for a continued model
            question_summary=saved.question_summary or cfg.question_summary,  # trained in, it stays
            split_digits=cfg.split_digits,
            points_at_spans=saved.points_at_spans or cfg.points_at_spans,
            segments_read_alone=saved.segments_read_alone or cfg.segments_read_alone,
            summary_from_marker=saved.summary_from_marker or cfg.summary_from_marker,
            chooses_values=saved.chooses_values or cfg.chooses_values,
            compares_values=saved.compares_values or cfg.compares_values,
        )
        if cfg.answer_layers and not saved.answer_layers:
            raise ValueError(f"answer_layers trains from the base encoder; {cfg.init_from} was trained without them")
        model, _ = load_checkpoint(continued_folder(cfg), cfg=model_cfg)
    else:
        model_cfg = replace(
            BlockDiffusionConfig.from_name(cfg.model),
            max_positions=cfg.max_positions,
            question_summary=cfg.question_summary or cfg.reads_documents,  # the reader points from the summary
            split_digits=cfg.split_digits,
            reads_documents=cfg.reads_documents,
            points_at_spans=cfg.points_at_spans,
            segments_read_alone=cfg.segments_read_alone,
            summary_from_marker=cfg.summary_from_marker,
            chooses_values=cfg.chooses_values,
            value_choosers=chooser_count(cfg.chooser_cue),
            compares_values=cfg.compares_values,
            comparer_sides=chooser_count(cfg.chooser_cue),
            comparer_answers_alone=cfg.compares_values,  # its sides and gate learn from named comparisons
            answer_layers=cfg.answer_layers,
        )
        model = from_base(model_cfg, cfg.seed) if cfg.from_base else random_model(model_cfg, cfg.seed)
        if model.value_chooser is not None:
            read_cue(model.value_chooser, cfg.chooser_cue)
    if cfg.freeze_word_embeddings:
        model.embed.word.weight.requires_grad_(False)
    if model.answer_layers is not None:  # the prefix pass stays as built, so its states can be kept
        frozen = set(prefix_encoder_keys(model))
        for name, p in model.named_parameters():
            if name in frozen:
                p.requires_grad_(False)
    return model


def continued_folder(cfg: TrainConfig) -> Path:
    """The checkpoint folder a continued run (`init_from`) starts from."""
    from ..models import checkpoint_folder

    return checkpoint_folder(cfg.init_from)


# Written by this run's `train`; everything else a continued checkpoint's config.json holds (the
# absence gate, the calibration maps) is fitted after training and carries over.
OWN_META = ("name", "config", "from_base", "train_config", "training", "context_tokens")


def carried_meta(cfg: TrainConfig) -> dict:
    """What a continued run keeps of its starting checkpoint's config.json: the parts fitted after
    training (gate, calibration maps), and its own record under `continued` (its training config and
    the fits of the parts this run leaves as they were). The calibration maps were fitted on the
    earlier reader: refit them (`calibrate`) once the run ends."""
    if not cfg.init_from:
        return {}
    _, meta = checkpoint_config(continued_folder(cfg))
    kept = {k: v for k, v in meta.items() if k not in OWN_META}
    record = {"from": cfg.init_from, "train_config": meta.get("train_config"), "training": meta.get("training", {})}
    return {**kept, "continued": record}


def prefix_encoder_keys(model: torch.nn.Module) -> list[str]:
    """With `answer_layers`: the weights of the prefix pass, left as built (from the base: as the base has
    them); the answer block's slot embeddings train, as the prefix pass adds none."""
    if getattr(model, "answer_layers", None) is None:
        return []
    return [k for k in model.state_dict() if k.startswith(("layers.", "embed.")) and not k.startswith("embed.slot.")]


def epoch_lines(cfg: TrainConfig, epoch: int, rng: random.Random) -> list[dict]:
    """Labelled request lines for one epoch: fresh generated groups plus ContractNLI training groups
    (and, with `contrastive_share`, copies of some documents with evidence cut out)."""
    from ..datasets.linked_groups import generate_groups

    lines = generate_groups("train", cfg.generated_groups_per_epoch, seed=cfg.seed * 1000 + epoch)
    if cfg.contractnli_path:
        from ..datasets.contractnli import to_requests
        from ..datasets.contrastive import evidence_removed

        train_docs, hypotheses = contractnli_documents(cfg)
        # With answer_layers every epoch groups the hypotheses alike, so each group's prefix states
        # are encoded once and reused (training/prefix_cache.py).
        grouping = random.Random(f"contractnli-groups:{cfg.seed}") if cfg.answer_layers else rng
        for _ in range(cfg.contractnli_repeats):
            for doc in train_docs:
                size = grouping.randint(CONTRACTNLI_MIN_GROUP, MAX_QUESTIONS)
                lines.extend(to_requests(doc, hypotheses, group_size=size, rng=grouping))
                if cfg.contrastive_share and rng.random() < cfg.contrastive_share:
                    copy = evidence_removed(doc, rng)
                    if copy is not None:
                        size = rng.randint(CONTRACTNLI_MIN_GROUP, MAX_QUESTIONS)
                        lines.extend(to_requests(copy, hypotheses, group_size=size, rng=rng))
    rng.shuffle(lines)
    return lines


def fit_pointer(cfg: TrainConfig, model, vocab, log: Callable[[str], None], fit: bool = True):
    """Train the model's span pointer on the gold evidence of the training documents (unless `fit` is
    False: a resumed run's is trained already), freeze it, and return the context builder that lays
    out training examples with it, and what the fit measured."""
    from ..reader.span_pointer import SpanPointer
    from ..retrieval.embedder import SpanEmbedder
    from ..retrieval.pointed import PointedContext
    from .pointer import pointer_examples, train_pointer

    embedder = SpanEmbedder(cache_size=4096)  # every training document stays embedded across epochs
    pointer = model.span_pointer.cpu()
    lines = evidenced_lines(cfg) if (fit and cfg.pointer_epochs) or cfg.pointer_folds else []

    def fitted_on(chosen: Sequence[dict], into: SpanPointer, quiet: bool = False) -> dict:
        into.train()
        return train_pointer(
            into, pointer_examples(chosen, embedder), cfg.pointer_epochs, cfg.seed,
            log=(lambda line: None) if quiet else log, identity_penalty=cfg.pointer_identity_penalty,
        )

    def fresh(chosen: Sequence[dict]) -> SpanPointer:
        pointer = SpanPointer()
        fitted_on(chosen, pointer, quiet=True)
        freeze(pointer)
        return pointer

    fitted = fitted_on(lines, pointer) if fit and cfg.pointer_epochs and lines else {"examples": 0, "epochs": 0}
    freeze(pointer)
    context = PointedContext(vocab, pointer, embedder)
    if cfg.pointer_folds and lines:  # fitted again on a resumed run too: the same seed gives the same folds
        from .cross_fitting import cross_fitted
        from .pointer import hit_at_1

        with torch.random.fork_rng():  # the folds draw nothing the reader's training would otherwise draw
            context, folds = cross_fitted(
                context, lines, cfg.pointer_folds, fresh,
                lambda p, chosen: hit_at_1(p, pointer_examples(chosen, embedder)), cfg.seed, log,
            )
        if fit:
            fitted["cross_fitting"] = folds
    return context, fitted


def _comparer(cfg: TrainConfig, model, saved, pointer, log: Callable[[str], None]) -> dict | None:
    """Fit the model's comparison chooser (both sides started from its fitted value chooser) and freeze
    it; a resumed run's or a continued model's is kept. Returns what the fit measured, or None."""
    comparer = model.comparison_chooser
    if comparer is None:
        return None
    if saved is not None:
        freeze(comparer)
        return saved.summary.get("comparison_chooser")
    if cfg.comparer_groups == 0 and cfg.init_from:
        freeze(comparer)
        return {"kept_from": cfg.init_from}
    if model.value_chooser is None:
        raise ValueError("compares_values needs chooses_values: each side starts from the value chooser")
    from .comparison_choice import fit_comparison_chooser

    comparer.start_from(model.value_chooser)
    return fit_comparison_chooser(comparer, cfg.comparer_groups, cfg.comparer_epochs, cfg.seed, log, pointer=pointer)


def _span_embedder(cfg: TrainConfig, model, device: str):
    """On a GPU, with workers and a span pointer: an embedder there, so each epoch's spans are embedded
    in large batches on the GPU rather than document by document on the workers' CPUs."""
    if torch.device(device).type != "cuda" or not cfg.data_workers or model.span_pointer is None:
        return None
    from ..retrieval.embedder import SpanEmbedder

    return SpanEmbedder(cache_size=0, batch_size=GPU_SPAN_BATCH, device=device)


def freeze(module) -> None:
    """Eval mode, no gradients: a fitted pointer or chooser stays as it is while the reader trains."""
    module.eval()
    for p in module.parameters():
        p.requires_grad_(False)


def contractnli_documents(cfg: TrainConfig, held_out: bool = False) -> tuple[list, dict[str, str]]:
    """(documents, hypotheses) of the run's ContractNLI file: those it learns from (`training_documents`:
    the training split less any left-out fold) or, with `held_out`, the held-out split."""
    from ..datasets.contractnli import load_contractnli, split_documents, training_documents

    docs, hypotheses = load_contractnli(cfg.contractnli_path)
    if held_out:
        return split_documents(docs, cfg.contractnli_validation_fraction, seed=cfg.contractnli_split_seed)[1], hypotheses
    chosen = training_documents(
        docs, cfg.contractnli_validation_fraction, cfg.contractnli_split_seed, cfg.contractnli_folds, cfg.contractnli_left_out_fold
    )
    return chosen, hypotheses


def evidenced_lines(cfg: TrainConfig, held_out: bool = False) -> list[dict]:
    """One line per ContractNLI training document (or, with `held_out`, per held-out document) asking
    all its hypotheses, with gold evidence."""
    if not cfg.contractnli_path:
        return []
    from ..datasets.contractnli import to_requests

    docs, hypotheses = contractnli_documents(cfg, held_out)
    lines = []
    for doc in docs:
        groups = to_requests(doc, hypotheses, group_size=MAX_QUESTIONS)
        merged = dict(groups[0], questions=[q for g in groups for q in g["questions"]])
        merged["evidence"] = {k: v for g in groups for k, v in g["evidence"].items()}
        lines.append(merged)
    return lines


def learning_rate(cfg: TrainConfig, step: int, total_steps: int, elapsed_s: float) -> float:
    """Linear warm-up, then linear decay to 5% over the run: over its steps, or over its time limit
    when that comes first, so a run stopped by `max_minutes` still ends at a low rate."""
    progress = step / total_steps
    if cfg.max_minutes:
        progress = max(progress, elapsed_s / (cfg.max_minutes * 60))
    return cfg.learning_rate * min(1.0, (step + 1) / cfg.warmup_steps) * max(0.05, 1 - progress)


def batches(examples: list[Example], size: int, rng: random.Random) -> Iterator[list[Example]]:
    """Batches of similar prefix length (less padding), in random order."""
    ordered = sorted(examples, key=lambda e: len(e.prefix.token_ids) + rng.random() * 16)
    chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    rng.shuffle(chunks)
    yield from chunks


def train(
    cfg: TrainConfig,
    out: Path,
    device: str = "cpu",
    log: Callable[[str], None] = print,
    retrieval: str = "leading",
    resume: bool = False,
) -> dict:
    """Train, save a checkpoint into `out`, and return a summary of the run.

    `retrieval` chooses how long documents are cut to the context ("leading", "lexical", "hybrid").
    Each finished epoch but the last leaves `out/resume.pt`; `resume` continues from it (see
    `training/resume.py`).
    """
    if cfg.reads_documents:
        from .reading import train_reading

        if resume:
            raise ResumeError("the reading model's training (reads_documents) cannot be resumed")
        return train_reading(cfg, out, device, log)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    model = build_model(cfg).to(device)
    vocab = model_vocabulary(model)
    saved = load_resume_point(out, cfg) if resume else None
    if saved is not None:
        model.load_state_dict(saved.model)
    spec = LayoutSpec(model.cfg.max_positions, cfg.context_tokens, model.cfg.split_digits, retrieval)
    context, pointing = None, None
    if model.span_pointer is not None:
        context, pointing = fit_pointer(cfg, model, vocab, log, fit=saved is None)
        if saved is not None:  # what the first run's fit measured
            pointing = saved.summary["pointer"]
        spec = replace(
            spec,
            pointer={k: v.detach().cpu().clone() for k, v in model.span_pointer.state_dict().items()},
            pointer_folds=context.fold_states() if hasattr(context, "fold_states") else None,
        )
    choosing = None
    if model.value_chooser is not None:
        if saved is not None:
            choosing = saved.summary["value_chooser"]
            freeze(model.value_chooser)
        elif cfg.chooser_groups == 0 and cfg.init_from:  # a continued model keeps its chooser
            choosing = {"kept_from": cfg.init_from}
            freeze(model.value_chooser)
        else:
            from .value_choice import fit_value_chooser

            pointed = context if model.span_pointer is not None else None
            choosing = fit_value_chooser(
                model.value_chooser, cfg.chooser_groups, cfg.chooser_epochs, cfg.seed, log, pointer=pointed
            ) | {"cue": cfg.chooser_cue}
    comparing = _comparer(cfg, model, saved, context if model.span_pointer is not None else None, log)
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=cfg.bf16)
    cache = FrozenPrefixCache(int(cfg.prefix_cache_gb * 2**30)) if model.answer_layers is not None else None
    started = time.monotonic()
    step, seen, total_steps, history, first = 0, 0, None, [], 0
    if saved is not None:
        optimiser.load_state_dict(saved.optimiser)
        rng.setstate(saved.rng)
        generator.set_state(saved.generator)
        step, seen, total_steps, history, first = saved.step, saved.seen, saved.total_steps, saved.history, saved.epoch
        started -= saved.minutes * 60
        log(f"resuming {out} at epoch {first + 1}/{cfg.epochs}, step {step}")
    stop = False

    def planned(epoch: int):
        lines = epoch_lines(cfg, cfg.first_epoch + epoch, rng)
        return plan_epoch(lines, cfg.independent_share, rng)

    with ExamplePreparer(spec, cfg.data_workers, vocab, context, _span_embedder(cfg, model, device)) as preparer:
        plan = saved.next_plan if saved is not None else planned(first)
        upcoming = preparer.start(plan)
        for epoch in range(first, cfg.epochs):
            examples = preparer.finish(upcoming)
            if epoch + 1 < cfg.epochs:  # the workers lay out the next epoch while this one trains
                plan = planned(epoch + 1)
                upcoming = preparer.start(plan)
            if total_steps is None:
                total_steps = max(1, cfg.epochs * math.ceil(len(examples) / cfg.batch_size))
                if cfg.max_steps:
                    total_steps = min(total_steps, cfg.max_steps)
            log(f"epoch {epoch + 1}/{cfg.epochs}: {len(examples)} blocks")
            model.train()
            running = 0.0
            for batch in batches(examples, cfg.batch_size, rng):
                lr = learning_rate(cfg, step, total_steps, time.monotonic() - started)
                for group in optimiser.param_groups:
                    group["lr"] = lr
                tensors = batch_tensors(batch, vocab.pad_id, device)
                prefix = None
                if cache is not None:
                    prefixes = [e.prefix for e in batch]
                    prefix = cache.answer_state(model, prefixes, tensors["prefix_slots"], vocab.pad_id, device)
                with autocast:
                    loss = masked_diffusion_loss(
                        model, tensors, vocab.mask_id, generator, cfg.constrained_loss, prefix, cfg.per_question_loss
                    )
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimiser.step()
                step += 1
                seen += len(batch)
                running += loss.item()
                if step % cfg.log_every == 0:
                    minutes = (time.monotonic() - started) / 60
                    held = f"  prefix cache {cache.hits}/{cache.hits + cache.misses} hits" if cache is not None else ""
                    log(f"step {step}  loss {running / cfg.log_every:.4f}  lr {lr:.2e}  {seen / (minutes * 60):.1f} blocks/s{held}")
                    history.append({"step": step, "loss": running / cfg.log_every, "minutes": round(minutes, 2)})
                    running = 0.0
                if (cfg.max_steps and step >= cfg.max_steps) or (
                    cfg.max_minutes and time.monotonic() - started > cfg.max_minutes * 60
                ):
                    stop = True
                    break
            if stop:
                break
            if epoch + 1 < cfg.epochs:
                save_resume_point(out, cfg, ResumePoint(
                    epoch=epoch + 1, step=step, seen=seen, total_steps=total_steps, history=history,
                    minutes=(time.monotonic() - started) / 60, model=model.state_dict(),
                    optimiser=optimiser.state_dict(), rng=rng.getstate(), generator=generator.get_state(),
                    next_plan=plan, summary={"pointer": pointing, "value_chooser": choosing, "comparison_chooser": comparing},
                ))
    model.eval()
    summary = {
        "steps": step,
        "blocks_seen": seen,
        "minutes": round((time.monotonic() - started) / 60, 2),
        "device": device,
        "retrieval": "pointed" if pointing else retrieval,
        "history": history,
    }
    if pointing:
        summary["pointer"] = pointing
    if choosing:
        summary["value_chooser"] = choosing
    if comparing:
        summary["comparison_chooser"] = comparing
    if cache is not None:
        summary["prefix_cache"] = {"hits": cache.hits, "misses": cache.misses, "held": len(cache), "bytes": cache.bytes}
    omit = FROZEN_FROM_BASE if cfg.from_base and cfg.freeze_word_embeddings else []
    if cfg.from_base:
        omit = sorted(set(omit) | set(prefix_encoder_keys(model)))
    save_checkpoint(
        model, out, f"decision-model-{cfg.name}",
        extra={
            **carried_meta(cfg), "train_config": cfg.to_dict(), "training": summary, "context_tokens": cfg.context_tokens
        },
        omit_from_base=omit,
    )
    clear_resume_point(out)
    return summary
