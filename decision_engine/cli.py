"""The `decision-engine` command line: one entry point, a subcommand per job."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from .options import MODES, EngineOptions, add_engine_arguments, add_mode_argument
from .training.config import CHOOSER_CUES

EXIT_INVALID = 2
COMMAND_PROVIDERS = "decision_engine.commands"  # entry-point group: functions adding subcommands to the parser


def _decide(args: argparse.Namespace) -> int:
    from .errors import EngineFailure, RequestError
    from .factory import build_engine
    from .model.loader import ModelLoadError
    from .requests_file import read_requests

    options = EngineOptions.from_args(args)
    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return EXIT_INVALID
    items = list(read_requests(path, options.limits))
    bad = [item for item in items if item.error is not None]
    for item in bad:
        print(f"error: {path}:{item.line}: {item.error}", file=sys.stderr)
    good = [item for item in items if item.error is None]
    if not good:
        return EXIT_INVALID
    try:
        engine = build_engine(options)
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for start in range(0, len(good), args.batch_size):
        chunk = good[start : start + args.batch_size]
        for item in chunk:
            if args.threshold is not None:
                item.request.options.threshold = args.threshold
            if args.mode is not None:
                item.request.mode = args.mode
        # One shared run per chunk; a request the model cannot take fails alone (the service's path too).
        for item, outcome in zip(chunk, engine.decide_many([item.request for item in chunk])):
            if isinstance(outcome, (RequestError, EngineFailure)):
                reason = outcome.reason if isinstance(outcome, EngineFailure) else outcome
                print(f"error: {path}:{item.line}: {reason}", file=sys.stderr)
                bad.append(item)
            else:
                _print_response(item, outcome, args.json)
    return EXIT_INVALID if bad else 0


def _print_response(item, response, as_json: bool) -> None:
    if as_json:
        payload = {"request_id": item.id, **msgspec.to_builtins(response)}
        sys.stdout.write(msgspec.json.encode(payload).decode() + "\n")
        return
    texts = {q.id: q.text for q in item.request.questions}
    print(
        f"== {item.id}  mode={response.mode}  steps={response.steps}  model={response.model}  "
        f"{response.timings_ms['total']:.0f} ms"
    )
    rows = [("question", "answer", "confidence", "step", *(("label",) if item.labels else ()))]
    for a in response.answers:
        row = [f"{a.id}: {texts[a.id][:60]}", _show(a.value), f"{a.confidence:.3f}", str(a.step)]
        if item.labels:
            gold = item.labels.get(a.id)
            row.append("" if gold is None else ("ok " if gold == a.value else "WRONG ") + _show(gold))
        rows.append(tuple(row))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    print()


def _show(value) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def _contractnli_problem(path: str) -> str | None:
    """Why a ContractNLI file cannot be trained or calibrated on (missing, unreadable, malformed or
    empty), checked before a run spends minutes on anything else; None when it reads."""
    from .datasets.contractnli import load_contractnli

    if not Path(path).is_file():
        return f"{path}: no such file"
    try:
        load_contractnli(path)
    except json.JSONDecodeError as error:
        return f"{path}: not JSON ({error})"
    except (OSError, ValueError) as error:  # ContractNliError and encoding errors are ValueErrors
        text = str(error)
        return text if text.startswith(str(path)) else f"{path}: {text}"
    return None


def _train(args: argparse.Namespace) -> int:
    from .training.config import PRESETS, TrainConfig
    from .training.loop import train

    try:
        cfg = TrainConfig.load(args.config)
    except (ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    if args.contractnli:
        cfg.contractnli_path = args.contractnli
    if args.max_minutes is not None:
        cfg.max_minutes = args.max_minutes
    if cfg.init_from and cfg.init_from != "bundled" and not (Path(cfg.init_from) / "config.json").is_file():
        print(
            f"error: init_from {cfg.init_from}: no checkpoint there (train the stage that writes it first)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    if cfg.contractnli_path and (problem := _contractnli_problem(cfg.contractnli_path)):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    out = Path(args.out or f"runs/{args.config if args.config in PRESETS else cfg.name}")
    from .training.resume import ResumeError

    try:
        summary = train(cfg, out, args.device, log=lambda line: print(line, flush=True), retrieval=args.retrieval, resume=args.resume)
    except ResumeError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    print(f"saved {out} after {summary['steps']} steps in {summary['minutes']} min")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from .evaluation import evaluate, load_groups, swap_documents, with_swap_drop
    from .model.loader import ModelLoadError

    path = Path(args.path)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return EXIT_INVALID
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        print(f"error: --modes: unknown mode(s) {unknown}; use {', '.join(MODES)}", file=sys.stderr)
        return EXIT_INVALID
    try:
        groups = load_groups(path, args.format, args.split, args.group_size)
    except (ValueError, KeyError, msgspec.DecodeError, RecursionError) as error:  # RecursionError: nested too deeply
        print(f"error: {path}: cannot read as {args.format}: {error}", file=sys.stderr)
        return EXIT_INVALID
    if args.limit:
        groups = groups[: args.limit]
    own_groups = groups
    if args.swap_documents:
        if args.gold_evidence_first:
            print("error: --swap-documents: gold evidence belongs to the original documents; "
                  "drop --gold-evidence-first", file=sys.stderr)
            return EXIT_INVALID
        try:
            groups = swap_documents(groups)
        except ValueError as error:
            print(f"error: --swap-documents: {error}", file=sys.stderr)
            return EXIT_INVALID
    priors, problem = _prior_answers(args, path)
    if problem:
        print(f"error: --prior-from: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if args.answers and (problem := _writable(Path(args.answers))):
        print(f"error: --answers: {problem}", file=sys.stderr)
        return EXIT_INVALID
    from .factory import build_engine

    try:
        engine = build_engine(EngineOptions.from_args(args))
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.gold_evidence_first:
        problem = _rank_gold_evidence_first(engine, groups, args.retrieval)
        if problem:
            print(f"error: --gold-evidence-first: {problem}", file=sys.stderr)
            return EXIT_INVALID
    f1 = ("contradiction", "entailment") if args.format == "contractnli" else ()
    rows: list[dict] | None = [] if args.answers else None
    report = {mode: evaluate(engine, groups, mode, args.batch_size, f1, priors, rows) for mode in modes}
    if args.swap_documents:  # the same groups of their own documents, for the drop
        report = {
            mode: with_swap_drop(metrics, evaluate(engine, own_groups, mode, args.batch_size, f1, priors))
            for mode, metrics in report.items()
        }
    if rows is not None and (problem := _write_answer_rows(Path(args.answers), rows)):
        print(f"error: --answers: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if args.json:
        print(msgspec.json.encode(report).decode())
        return 0
    print(f"{len(groups)} groups from {path} ({args.format}), model {engine.model.name}")
    flat = {mode: _flatten(metrics) for mode, metrics in report.items()}
    keys = sorted({k for metrics in flat.values() for k in metrics})
    print("metric".ljust(28) + "".join(m.rjust(14) for m in modes))
    for key in keys:
        cells = []
        for mode in modes:
            value = flat[mode].get(key, "")
            cells.append(_cell(value).rjust(14))
        print(key.ljust(28) + "".join(cells))
    return 0


def _writable(path: Path) -> str | None:
    """Why a file cannot be written at `path` (checked before the work that fills it), or None."""
    if path.is_dir():
        return f"{path} is a folder"
    if not path.parent.is_dir():
        return f"{path.parent}: no such folder"
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"{path}: not writable"
    return None


def _write_answer_rows(path: Path, rows: Sequence[dict]) -> str | None:
    """Write `rows` to `path` as JSON Lines; the problem, or None."""
    try:
        path.write_bytes(b"".join(msgspec.json.encode(row) + b"\n" for row in rows))
    except OSError as error:
        return f"cannot write {path}: {error.strerror or error}"
    return None


def _prior_answers(args: argparse.Namespace, path: Path) -> tuple[dict | None, str | None]:
    """The yardstick answers (each question id's most common training answer), or the problem.

    From `--prior-from` when given; for ContractNLI's validation split, from its training documents.
    """
    from .evaluation import load_groups, majority_answers

    if args.prior_from:
        source = Path(args.prior_from)
        if not source.is_file():
            return None, f"{source}: no such file"
        try:
            labelled = load_groups(source, "jsonl")
        except (ValueError, KeyError, TypeError, msgspec.DecodeError, RecursionError) as error:
            return None, f"{source}: cannot read as labelled JSON Lines: {error}"
        if not labelled:
            return None, f"{source}: no line carries \"labels\""
        return majority_answers(g.labels for g in labelled), None
    if args.format == "contractnli" and args.split == "validation":
        from .datasets.contractnli import load_contractnli, split_documents

        train, _ = split_documents(load_contractnli(path)[0])
        return majority_answers(doc.labels for doc in train), None
    return None, None


def _generate(args: argparse.Namespace) -> int:
    from .datasets.linked_groups import generate_groups

    if args.count < 0:
        print(f"error: --count must be 0 or more, got {args.count}", file=sys.stderr)
        return EXIT_INVALID
    lines = (msgspec.json.encode(group).decode() + "\n" for group in generate_groups(args.split, args.count, args.seed))
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as out:
                out.writelines(lines)
        except OSError as error:
            print(f"error: --out {args.out}: cannot write ({error.strerror})", file=sys.stderr)
            return EXIT_INVALID
    else:
        sys.stdout.writelines(lines)
    return 0


def _rank_gold_evidence_first(engine, groups, retrieval: str) -> str | None:
    """Make the engine's retrieval rank each question's gold evidence first; the problem, if it cannot."""
    from .retrieval.builder import RetrievalContext
    from .retrieval.gold_first import GoldFirstRetriever, gold_evidence

    if hasattr(engine.context, "question_evidence"):
        return "needs a model that retrieves its context; this one lays out each question's evidence with its span pointer"
    if not isinstance(engine.context, RetrievalContext):
        return f"needs --retrieval hybrid or lexical, not {retrieval}"
    gold = {}
    for group in groups:
        gold.update(gold_evidence(group.request_line))
    if not gold:
        return "these groups carry no gold evidence"
    engine.context.retriever = GoldFirstRetriever(engine.context.retriever, gold)
    return None


BY_QUESTION = ("accuracy_by_question", "questions_by_question", "prior_accuracy_by_question")  # --json only


def _cell(value) -> str:
    """One figure of the text table: floats to four places, an interval as "low-high"."""
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, list) and all(isinstance(v, float) for v in value):
        return "-".join(f"{v:.3f}" for v in value)
    return str(value)


def _flatten(metrics: dict) -> dict:
    """Nested metrics (accuracy by answer type) as "outer.inner" keys, for the text table; the
    per-question figures, one row per question id, only in --json."""
    flat = {}
    for key, value in metrics.items():
        if key in BY_QUESTION:
            continue
        if isinstance(value, dict):
            flat.update({f"{key}.{inner}": v for inner, v in value.items()})
        else:
            flat[key] = value
    return flat


def _schemas(args: argparse.Namespace) -> int:
    from .schema_files import stale, write

    folder = Path(args.out)
    if args.check:
        drift = stale(folder)
        for name in drift:
            print(f"{folder / name} is out of date; run: decision-engine schemas --out {folder}", file=sys.stderr)
        return 1 if drift else 0
    for path in write(folder):
        print(path)
    return 0


def _models(args: argparse.Namespace) -> int:
    from .models import supported_kinds

    print(supported_kinds())
    return 0


def _fit_reworded(args: argparse.Namespace, fit, **options) -> int:
    """`_fit_part` for a fit that takes --question-variants and --reword-documents, checked first."""
    problem = None
    if args.question_variants < 0:
        problem = "--question-variants must be 0 or more"
    elif args.reword_documents and not args.question_variants:
        problem = "--reword-documents rewords the document each question copy reads: give --question-variants"
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    return _fit_part(
        args,
        functools.partial(fit, question_variants=args.question_variants, reword_documents=args.reword_documents, **options),
    )


def _chooser_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with `fit-chooser`'s options taken together, or None."""
    if args.drills < 0:
        return "--drills must be 0 or more"
    if args.as_written < 0:
        return "--as-written must be 0 or more"
    if args.generic and args.new_operations:
        return "--generic fits new choosers: leave out --new-operations"
    if args.mentions_in_spans and (args.generic or args.new_operations):
        return "--mentions-in-spans fits new value choosers: leave out --new-operations and --generic"
    return None


def _fit_chooser(args: argparse.Namespace) -> int:
    if problem := _chooser_problem(args):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if args.new_operations:
        from .training.operation_fit import add_operations

        return _fit_reworded(args, add_operations, int8_parts=_int8_parts(args))
    from .training.value_choice import add_value_chooser

    return _fit_reworded(
        args, add_value_chooser, cue=args.cue, int8_parts=_int8_parts(args), drills=args.drills,
        as_written=args.as_written, generic_below=args.generic_below if args.generic else None, mentions_in_spans=args.mentions_in_spans,
    )


def _fit_comparer(args: argparse.Namespace) -> int:
    from .training.comparison_choice import add_comparison_chooser

    return _fit_reworded(args, add_comparison_chooser)


def _fit_siblings(args: argparse.Namespace) -> int:
    from .training.sibling_fit import add_sibling_weights

    return _fit_part(args, functools.partial(add_sibling_weights, comparer=args.comparer))


def _fit_choices(args: argparse.Namespace) -> int:
    from .training.choice_fit import add_choice_reader

    int8 = _int8_parts(args)
    if args.readers < 1:
        print("error: --readers must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    return _fit_reworded(args, add_choice_reader, int8_parts=int8, readers=args.readers)


def _fit_agreement(args: argparse.Namespace) -> int:
    from .training.agreement_fit import add_agreement_reader

    if args.question_variants < 0:
        print("error: --question-variants must be 0 or more", file=sys.stderr)
        return EXIT_INVALID
    return _fit_part(
        args, functools.partial(add_agreement_reader, question_variants=args.question_variants, reword=args.reword)
    )


def _fit_value_agreement(args: argparse.Namespace) -> int:
    from .training.value_agreement_fit import add_value_agreement_reader

    if args.question_variants < 0:
        print("error: --question-variants must be 0 or more", file=sys.stderr)
        return EXIT_INVALID
    if args.readers < 1:
        print("error: --readers must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    int8 = _int8_parts(args)
    return _fit_part(args, functools.partial(
        add_value_agreement_reader, question_variants=args.question_variants, readers=args.readers, int8_parts=int8
    ))


def _fit_cross(args: argparse.Namespace) -> int:
    from .training.cross_fit import add_cross_reader

    if args.rank < 1:
        print("error: --rank must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    return _fit_part(args, functools.partial(add_cross_reader, rank=args.rank))


def _int8_parts(args: argparse.Namespace) -> list[str]:
    """The parts `--int8` names (comma-separated), none where it is not given."""
    return [part for part in (args.int8 or "").split(",") if part]


def _fit_part(args: argparse.Namespace, fit) -> int:
    """Fit one chooser onto a checkpoint (`fit(folder, out, groups, epochs, seed, log=, held_out=)`)."""
    from .model.loader import ModelLoadError
    from .models import checkpoint_folder

    folder = checkpoint_folder(args.model)
    if args.groups < 1 or args.epochs < 1:
        print("error: --groups and --epochs must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    held_out = []
    if args.validation:
        from .evaluation import load_groups

        try:
            held_out = [g.request_line for g in load_groups(Path(args.validation), "jsonl")]
        except (OSError, msgspec.DecodeError) as error:
            print(f"error: --validation {args.validation}: {error}", file=sys.stderr)
            return EXIT_INVALID
    try:
        fitted = fit(
            folder, Path(args.out), args.groups, args.epochs, args.seed, log=lambda line: print(line, flush=True), held_out=held_out
        )
    except (ModelLoadError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    print(msgspec.json.encode({"out": args.out, **fitted}).decode())
    return 0


def _fit_pointer(args: argparse.Namespace) -> int:
    from .model.loader import ModelLoadError
    from .models import checkpoint_folder
    from .training.pointer import refit_pointer

    folder = checkpoint_folder(args.model)
    if args.epochs < 1 or args.identity_penalty < 0:
        print("error: --epochs must be at least 1 and --identity-penalty at least 0", file=sys.stderr)
        return EXIT_INVALID
    if not Path(args.contractnli).is_file():
        print(f"error: --contractnli {args.contractnli}: no such file", file=sys.stderr)
        return EXIT_INVALID
    try:
        fitted = refit_pointer(
            folder, Path(args.out), Path(args.contractnli), args.epochs, args.identity_penalty, args.seed,
            log=lambda line: print(line, flush=True), evidence_only=args.evidence_only,
        )
    except (ModelLoadError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    print(msgspec.json.encode({"out": args.out, **fitted}).decode())
    return 0


def _train_all(args: argparse.Namespace) -> int:
    from .training.recipe import StageFailed, run_recipe

    if not Path(args.contractnli).is_file():
        print(f"error: --contractnli {args.contractnli}: no such file", file=sys.stderr)
        return EXIT_INVALID
    try:
        record = run_recipe(args.contractnli, Path(args.out), main, log=lambda line: print(line, flush=True))
    except StageFailed as failed:
        print(f"error: {failed}", file=sys.stderr)
        return failed.code
    print(msgspec.json.encode(record).decode())
    return 0


def _graft_heads(args: argparse.Namespace) -> int:
    from .model.loader import ModelLoadError
    from .models import checkpoint_folder
    from .training.graft import graft_heads

    reader, heads = checkpoint_folder(args.reader), checkpoint_folder(args.heads)
    try:
        grafted = graft_heads(reader, heads, Path(args.out), names=(args.reader, args.heads))
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    print(msgspec.json.encode(grafted).decode())
    return 0


def _fit_gate(args: argparse.Namespace) -> int:
    from .training.absence_fit import gate_checkpoint

    return _fit_on_contractnli(args, functools.partial(gate_checkpoint, novel=args.novel))


def _fit_verdict(args: argparse.Namespace) -> int:
    from .training.verdict_fit import add_verdict_reader

    if args.epochs < 1 or args.rank < 1:
        print("error: --epochs and --rank must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    if args.drills < 0 or args.paraphrase_drills < 0:
        print("error: --drills and --paraphrase-drills must be 0 or more", file=sys.stderr)
        return EXIT_INVALID

    def fit(engine, folder, out, contractnli, log):
        int8 = _int8_parts(args)
        return add_verdict_reader(
            engine, folder, out, contractnli, args.epochs, args.rank, args.seed, log=log, wide=args.wide, int8_parts=int8,
            drills=args.drills, paraphrase_drills=args.paraphrase_drills,
        )

    return _fit_on_contractnli(args, fit)


def _fit_on_contractnli(args: argparse.Namespace, fit) -> int:
    """Fit one part of a checkpoint on ContractNLI through an engine opened on it
    (`fit(engine, folder, out, contractnli, log)`), and print what it returns."""
    from .datasets.contractnli import ContractNliError
    from .factory import build_engine
    from .model.loader import ModelLoadError
    from .models import checkpoint_folder, open_model

    folder = checkpoint_folder(args.model)
    if not Path(args.contractnli).is_file():
        print(f"error: --contractnli {args.contractnli}: no such file", file=sys.stderr)
        return EXIT_INVALID
    try:
        engine = build_engine(model=open_model(folder))
        fitted = fit(engine, folder, Path(args.out), Path(args.contractnli), lambda line: print(line, flush=True))
    except (ModelLoadError, ValueError, ContractNliError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    print(msgspec.json.encode({"out": args.out, **fitted}).decode())
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from .factory import build_engine
    from .kinds import all_kinds
    from .model.loader import ModelLoadError
    from .models import checkpoint_folder, open_model
    from .training.calibration_fit import calibrate_checkpoint

    folder = checkpoint_folder(args.model)
    if args.contractnli and (problem := _contractnli_problem(args.contractnli)):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if args.groups < 0 or (args.groups == 0 and not args.contractnli):
        print("error: give --contractnli or at least one generated group (--groups)", file=sys.stderr)
        return EXIT_INVALID
    if args.cross_fit and (args.cross_fit < 2 or not args.contractnli or args.reword):
        problem = (
            "--cross-fit needs at least 2 folds" if args.cross_fit < 2
            else "--cross-fit needs --contractnli: its training documents are what the folds deal" if not args.contractnli
            else "--cross-fit decides documents as they are written: leave out --reword"
        )
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    kinds = tuple(k for k in (args.kinds or "").split(",") if k)
    known = [k.name for k in all_kinds()] + ["compared", "hypothesis"]  # see engine.calibration_kind
    if unknown := sorted(set(kinds) - set(known)):
        print(f"error: --kinds: unknown answer kind {unknown[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
        return EXIT_INVALID
    try:
        model = open_model(folder, device=args.device)
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    if not hasattr(model, "calibration"):
        print(f"error: {folder} is not a checkpoint of this project", file=sys.stderr)
        return EXIT_INVALID
    model.calibration = None  # fit on raw confidences
    engine = build_engine(model=model)
    contractnli = Path(args.contractnli) if args.contractnli else None
    try:
        fitted = calibrate_checkpoint(
            engine, folder, Path(args.out), contractnli, args.groups, log=lambda line: print(line, flush=True), kinds=kinds,
            reword=args.reword, cross_fit=args.cross_fit, device=args.device,
        )
    except (ModelLoadError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    print(msgspec.json.encode({"out": args.out, **fitted}).decode())
    return 0


def _add_contractnli_fit_arguments(parser: argparse.ArgumentParser, part: str, reads: str) -> None:
    """--model, --out and --contractnli of a fit that reads ContractNLI through a span pointer's checkpoint."""
    parser.add_argument("--model", default="bundled", help='checkpoint folder with a span pointer, or "bundled" (default)')
    parser.add_argument("--out", required=True, help=f"folder for the checkpoint with {part}")
    parser.add_argument("--contractnli", required=True, help=f"ContractNLI JSON: {reads}")


def _add_rewording_arguments(
    parser: argparse.ArgumentParser,
    variants: int = 0,
    default_said: str = "default 0",
    reads: str = "its mentions in the document with a quarter of the other words left out",
) -> None:
    """--question-variants and --reword-documents of a fit (`_fit_reworded`): `variants` copies by
    default, and what each copy `reads` reworded."""
    parser.add_argument(
        "--question-variants", type=int, default=variants,
        help=f"also train on this many copies of each question with a quarter of its words left out ({default_said})",
    )
    parser.add_argument("--reword-documents", action="store_true", help=f"each question's copy also reads {reads}")


def _add_fit_arguments(parser: argparse.ArgumentParser, model_help: str, part: str, epochs: int, questions: str) -> None:
    """The arguments of a command that fits one chooser onto a checkpoint (`_fit_part`)."""
    parser.add_argument("--model", default="bundled", help=model_help)
    parser.add_argument("--out", required=True, help=f"folder for the checkpoint with {part}")
    parser.add_argument("--groups", type=int, default=1000, help="generated training groups to learn from")
    parser.add_argument("--epochs", type=int, default=epochs, help=f"passes over their {questions}")
    parser.add_argument("--validation", help="labelled JSON Lines file to measure the fitted chooser on (held out)")
    parser.add_argument("--seed", type=int, default=0)


def _add_int8_argument(parser: argparse.ArgumentParser, example: str) -> None:
    parser.add_argument(
        "--int8", help=f'comma-separated parts of the checkpoint to store in int8 from now on, e.g. "{example}"'
    )


def build_parser() -> argparse.ArgumentParser:
    from .training.config import PRESETS as TRAIN_PRESETS

    parser = argparse.ArgumentParser(prog="decision-engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    decide = sub.add_parser("decide", help="decide the request(s) in a JSON or JSON Lines file")
    decide.add_argument("file", help="one request (JSON) or several (JSON Lines)")
    add_mode_argument(decide)
    decide.add_argument("--json", action="store_true", help="one JSON response per line")
    add_engine_arguments(decide)
    decide.add_argument("--threshold", type=float, help="override each request's confidence threshold")
    decide.add_argument("--batch-size", type=int, default=8, help="requests sharing each forward pass")
    decide.set_defaults(func=_decide)

    train = sub.add_parser("train", help="train the decision model (masked-diffusion objective)")
    presets = ", ".join(TRAIN_PRESETS)
    train.add_argument("--config", default="shipped", help=f"preset ({presets}) or a JSON config file")
    add_engine_arguments(train, model=False)  # --device and --retrieval, defaulting as inference does
    train.add_argument("--out", help="checkpoint folder (default runs/<preset>, or runs/<name> for a config file)")
    train.add_argument("--contractnli", help="ContractNLI JSON to train on (its validation split is held out)")
    train.add_argument("--max-minutes", type=float, help="stop and save after this many minutes")
    train.add_argument("--resume", action="store_true", help="continue the run in --out from its last finished epoch")
    train.set_defaults(func=_train)

    recipe = sub.add_parser(
        "train-all",
        help="train every part of a fresh model from the base encoder, stage by stage, as the bundled one "
        "was (run it again to go on after an interruption)",
    )
    recipe.add_argument("--contractnli", required=True, help="ContractNLI JSON (its validation split is held out)")
    recipe.add_argument("--out", required=True, help="folder for the stages' checkpoints and recipe.json")
    recipe.set_defaults(func=_train_all)

    grafting = sub.add_parser(
        "graft-heads",
        help="a checkpoint whose reader comes from one checkpoint and whose heads (pointers, choosers, "
        "readers, gate, calibration maps) from another; fit the calibration maps again afterwards",
    )
    grafting.add_argument("--reader", required=True, help='checkpoint folder whose reader to take, or "bundled"')
    grafting.add_argument("--heads", default="bundled", help='checkpoint folder whose heads to take, or "bundled" (default)')
    grafting.add_argument("--out", required=True, help="folder for the grafted checkpoint")
    grafting.set_defaults(func=_graft_heads)

    chooser = sub.add_parser("fit-chooser", help="fit a value chooser (grounded integer and date slots) onto a checkpoint")
    _add_fit_arguments(chooser, 'checkpoint folder, or "bundled" (default)', "its chooser", 40, "integer and date questions")
    _add_rewording_arguments(chooser)
    chooser.add_argument(
        "--cue", choices=CHOOSER_CUES, default="both",
        help="the words read as what a mention is: the eight tokens before it, sixteen on each side, or both "
        "(default: two choosers, one per cue, their probabilities averaged)",
    )
    chooser.add_argument(
        "--new-operations", action="store_true",
        help="keep the checkpoint's value choosers and fit only the forms of operations added since they were "
        "fitted (such as count_at_least); every other weight is held, so answers change only where such a "
        "candidate is on offer",
    )
    chooser.add_argument(
        "--drills", type=int, default=0,
        help="value drills to learn from beside the generated groups: files of dated acts, deadlines, charges and "
        "counts about random parties, asked in general words (`datasets/value_drills.py`); default 0",
    )
    chooser.add_argument(
        "--as-written", type=int, default=0,
        help="of the generated training groups, how many (from the first) are also asked for dates, amounts and "
        "counts their documents write as they are (`datasets/as_written.py`); default 0",
    )
    chooser.add_argument(
        "--generic", action="store_true",
        help="keep the checkpoint's value choosers and fit generic ones beside them (with --as-written or --drills), which "
        "answer a slot where the value choosers' top probability is under --generic-below",
    )
    chooser.add_argument(
        "--generic-below", type=float, default=0.2,
        help="with --generic: the value choosers' top probability under which the generic ones answer (default 0.2)",
    )
    chooser.add_argument(
        "--mentions-in-spans", action="store_true",
        help="read each value mention in the token states of the span the span pointer embeds, not in a window of "
        "its own, so a new document costs the sentence encoder its spans only (needs a span pointer; fit the "
        "comparison chooser again afterwards, as it reads the same mentions)",
    )
    _add_int8_argument(chooser, "value_chooser")
    chooser.set_defaults(func=_fit_chooser)

    siblings = sub.add_parser(
        "fit-siblings",
        help="fit how a checkpoint's value chooser weighs what the other questions of a joint request answer",
    )
    _add_fit_arguments(
        siblings, 'checkpoint folder with a value chooser, or "bundled" (default)', "its sibling weights", 30,
        "integer and date questions",
    )
    siblings.add_argument(
        "--comparer", action="store_true",
        help="also fit the comparison chooser's sides to weigh what the grounded slots answer (measured, not bundled)",
    )
    siblings.set_defaults(func=_fit_siblings, groups=400)

    comparer = sub.add_parser(
        "fit-comparer", help="fit a comparison chooser (boolean slots answered by comparing two values) onto a checkpoint"
    )
    _add_fit_arguments(
        comparer, 'checkpoint folder with a value chooser, or "bundled" (default)', "its comparison chooser", 20,
        "boolean questions",
    )
    _add_rewording_arguments(comparer)
    comparer.set_defaults(func=_fit_comparer)

    choosing = sub.add_parser(
        "fit-choices", help="fit a choice reader (boolean and enum slots read from the document's sentence vectors) onto a checkpoint"
    )
    _add_fit_arguments(choosing, 'checkpoint folder, or "bundled" (default)', "its choice reader", 20, "boolean and enum questions")
    _add_int8_argument(choosing, "comparison_chooser")
    choosing.add_argument(
        "--readers", type=int, default=3,
        help="heads fitted alike from seeds S, S+1, ..., their log-probabilities averaged (default 3, as bundled)",
    )
    _add_rewording_arguments(
        choosing, 2, "default 2, as bundled", "the document's spans with a quarter of their words left out"
    )
    choosing.set_defaults(func=_fit_choices)

    agreeing = sub.add_parser(
        "fit-agreement",
        help="fit an agreement reader onto a checkpoint: joint boolean and enum answers weighed again with the surer ones",
    )
    _add_fit_arguments(
        agreeing, 'checkpoint folder, or "bundled" (default)', "its agreement reader", 4,
        "weighed answers (the boolean and enum answers it decides with a surer one beside them)",
    )
    agreeing.add_argument(
        "--question-variants", type=int, default=2,
        help="also train on this many copies of each weighed answer with a quarter of every question's words left out (default 2)",
    )
    agreeing.add_argument(
        "--reword", action="store_true",
        help="decide each training group with a quarter of the words of its questions and its document left out",
    )
    agreeing.set_defaults(func=_fit_agreement, groups=1600)

    valuing = sub.add_parser(
        "fit-value-agreement",
        help="fit a value agreement reader onto a checkpoint: joint integer and date answers weighed again with "
        "the surer boolean and enum answers",
    )
    _add_fit_arguments(
        valuing, 'checkpoint folder, or "bundled" (default)', "its value agreement reader", 5,
        "weighed answers (the integer and date answers it chooses with a surer boolean or enum answer beside them)",
    )
    valuing.add_argument(
        "--question-variants", type=int, default=0,
        help="also train on this many copies of each weighed answer with a quarter of every question's words left out (default 0)",
    )
    valuing.add_argument(
        "--readers", type=int, default=1,
        help="heads, head k fitted from seed S+k on its own draw of --groups groups, their scores averaged (default 1)",
    )
    _add_int8_argument(valuing, "value_chooser")
    valuing.set_defaults(func=_fit_value_agreement, groups=1600)

    crossing = sub.add_parser(
        "fit-cross", help="fit a cross reader onto a checkpoint: each boolean or enum question, its choices and its evidence read as one text"
    )
    _add_fit_arguments(crossing, 'checkpoint folder with a span pointer, or "bundled" (default)', "its cross reader", 2, "boolean and enum questions")
    crossing.add_argument("--rank", type=int, default=8, help="rank of the updates of the base encoder's projections")
    crossing.set_defaults(func=_fit_cross)

    pointing = sub.add_parser("fit-pointer", help="fit a checkpoint's span pointer again on ContractNLI gold evidence")
    pointing.add_argument("--model", default="bundled", help='checkpoint folder, or "bundled" (default)')
    pointing.add_argument("--out", required=True, help="folder for the checkpoint with its new pointer")
    pointing.add_argument("--contractnli", required=True, help="ContractNLI JSON file (its training documents teach the pointer)")
    pointing.add_argument("--epochs", type=int, default=20, help="passes over the training documents' gold evidence")
    pointing.add_argument("--identity-penalty", type=float, default=0.0, help="weight holding the pointer near cosine ranking")
    pointing.add_argument("--seed", type=int, default=0, help="the document split's seed, as in training")
    pointing.add_argument(
        "--evidence-only", action="store_true",
        help="fit a second pointer that only orders the evidence answers report (the reader's layout, and so every answer, unchanged)",
    )
    pointing.set_defaults(func=_fit_pointer)

    gating = sub.add_parser(
        "fit-gate", help='fit a checkpoint\'s absence gate: how strongly a clause was found, as odds on "not mentioned"'
    )
    _add_contractnli_fit_arguments(gating, "its gate", "its training split is read (never the held-out one)")
    gating.add_argument(
        "--novel", action="store_true",
        help="keep the checkpoint's gate for the hypotheses it was fitted on and add one for every other hypothesis, "
        "reading how far the pointer's best span stands out (its top probability) rather than its raw score",
    )
    gating.set_defaults(func=_fit_gate)

    verdicts = sub.add_parser(
        "fit-verdict", help="fit a verdict reader onto a checkpoint: each hypothesis read with its evidence as one text"
    )
    _add_contractnli_fit_arguments(
        verdicts, "its verdict reader", "its training split teaches the reader; the held-out one is measured"
    )
    verdicts.add_argument("--epochs", type=int, default=3, help="passes over the training hypotheses")
    verdicts.add_argument("--rank", type=int, default=8, help="rank of the updates of the base encoder's projections")
    verdicts.add_argument("--seed", type=int, default=0, help="the document split's seed, as in training")
    verdicts.add_argument(
        "--wide", action="store_true", help="update the attention output and feed-forward projections too (about 1.3 MB at rank 16)"
    )
    verdicts.add_argument(
        "--drills", type=int, default=0,
        help="hypothesis drills to learn from as well: training documents' own sentences asked back as entailed, "
        "turned or changed (contradicted) and asked of a document on another subject (not mentioned)",
    )
    verdicts.add_argument(
        "--paraphrase-drills", type=int, default=0,
        help="paraphrase drills to learn from as well: generated training documents asked their own clauses and "
        "file notes in another of the generator's phrasings, as they are (entailed), turned or changed "
        "(contradicted), and terms they lack (not mentioned); `datasets/paraphrase_drills.py`",
    )
    _add_int8_argument(verdicts, "comparison_chooser")
    verdicts.set_defaults(func=_fit_verdict)

    calibrate = sub.add_parser("calibrate", help="fit a checkpoint's confidence calibration on training material")
    calibrate.add_argument("--model", default="bundled", help='checkpoint folder, or "bundled" (default)')
    calibrate.add_argument("--out", required=True, help="folder for the checkpoint with its calibration")
    calibrate.add_argument("--contractnli", help="ContractNLI JSON: its training split is decided (never the held-out one)")
    calibrate.add_argument("--groups", type=int, default=200, help="fresh generated training groups to decide as well")
    calibrate.add_argument(
        "--kinds", help='comma-separated answer kinds to fit again, such as "compared" or "hypothesis"; the others keep their maps'
    )
    calibrate.add_argument(
        "--reword", action="store_true",
        help="decide every group (generated and ContractNLI) with a quarter of its words left out, as a wording never seen in training",
    )
    calibrate.add_argument(
        "--cross-fit", type=int, default=0, metavar="FOLDS",
        help="decide each ContractNLI training document with a reader trained, as the checkpoint's was, without its fold "
        "(grafted under the checkpoint's heads); at least 2 folds",
    )
    calibrate.add_argument("--device", default="cpu", help="torch device the model decides on, e.g. cpu or cuda")
    calibrate.set_defaults(func=_calibrate)

    evaluate = sub.add_parser("eval", help="accuracy per mode over labelled requests")
    evaluate.add_argument("--path", required=True, help="labelled JSON Lines (samples format) or ContractNLI JSON")
    evaluate.add_argument("--format", choices=["jsonl", "contractnli"], default="jsonl")
    evaluate.add_argument("--modes", default="joint,independent,sequential", help="comma-separated modes")
    evaluate.add_argument("--split", choices=["all", "train", "validation"], default="all",
                          help="ContractNLI: evaluate on this split of the file's documents")
    evaluate.add_argument("--group-size", type=int, default=8, help="ContractNLI hypotheses per group")
    evaluate.add_argument("--limit", type=int, help="evaluate only the first N groups")
    add_engine_arguments(evaluate)
    evaluate.add_argument("--batch-size", type=int, default=8)
    evaluate.add_argument("--gold-evidence-first", action="store_true",
                          help="rank each question's gold evidence first (what perfect retrieval would give)")
    evaluate.add_argument("--swap-documents", action="store_true",
                          help="a control: ask each group of the next different document instead of its own; "
                               "also reports the accuracy on their own documents and the drop (swap_drop)")
    evaluate.add_argument("--prior-from", metavar="FILE",
                          help="labelled JSON Lines whose most common answer per question id is the yardstick "
                               "(ContractNLI's validation split uses its training documents without this)")
    evaluate.add_argument("--json", action="store_true", help="one JSON object keyed by mode")
    evaluate.add_argument("--answers", metavar="FILE",
                          help="also write each question's outcome, one JSON object per line: mode, group, question, "
                               "type, label, answer, right, confidence, fixed_by, first evidence span (with "
                               "--swap-documents, those of the swapped documents)")
    evaluate.set_defaults(func=_eval)

    generate = sub.add_parser("generate", help="write generated linked compliance groups (samples format, labelled)")
    generate.add_argument("--split", choices=["train", "validation"], default="validation",
                          help="validation uses only the held-out templates and paraphrases")
    generate.add_argument("--count", type=int, default=200, help="how many groups")
    generate.add_argument("--seed", type=int, default=7, help="the same split, count and seed give the same groups")
    generate.add_argument("--out", help="JSON Lines file to write (default: standard output)")
    generate.set_defaults(func=_generate)

    kinds = sub.add_parser("models", help="list the kinds of checkpoint folder --model accepts")
    kinds.set_defaults(func=_models)

    schemas = sub.add_parser("schemas", help="write (or --check) the JSON Schema files of request and response")
    schemas.add_argument("--out", default="schemas", help="folder of the schema files")
    schemas.add_argument("--check", action="store_true", help="exit 1 if the files differ from the types")
    schemas.set_defaults(func=_schemas)

    from .batch.commands import add_batch_commands
    from .bench.commands import add_bench_commands
    from .store.commands import add_store_commands

    _add_provided_commands(sub)
    add_store_commands(sub)
    add_batch_commands(sub)
    add_bench_commands(sub)
    return parser


def _add_provided_commands(sub) -> None:
    """Subcommands of packages that build on this one (the REST service's `serve`), found through their
    entry points so that the core never imports them."""
    from importlib.metadata import entry_points

    providers = {point.name: point for point in entry_points(group=COMMAND_PROVIDERS)}  # one per name
    for name in sorted(providers):
        providers[name].load()(sub)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "threshold", None) is not None and not 0 < args.threshold <= 1:
        print("error: --threshold must be in (0, 1]", file=sys.stderr)
        return EXIT_INVALID
    if getattr(args, "batch_size", 1) < 1:
        print("error: --batch-size must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    try:
        code = args.func(args)
        sys.stdout.flush()  # here, so that a closed pipe is met inside the try
    except BrokenPipeError:
        return _reader_left()
    return code


def _reader_left() -> int:
    """The reader of our output went away (`report | head`): stop quietly, as other command-line tools do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush at exit must not fail again
    os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
