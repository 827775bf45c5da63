"""`decision-engine batch`: decide a JSON Lines file, or a folder of documents against a checklist,
into OUT and the store, resumably; added to the main CLI's parser."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..options import EngineOptions, add_engine_arguments, add_mode_argument
from ..storable import MAX_TAG_CHARS, tag_problem
from ..store.commands import DB_HELP

EXIT_FATAL = 1
EXIT_SOME_ERRORS = 2
EXIT_INTERRUPTED = 130
MAX_RUN_CHARS = MAX_TAG_CHARS  # the store's run name column


class _Fatal(Exception):
    """A problem that stops the whole job; its message is printed as one line."""


def add_batch_commands(subparsers) -> None:
    """Add `batch` to the subparsers of the `decision-engine` parser."""
    batch = subparsers.add_parser(
        "batch",
        help="decide a JSON Lines file, or every document of a folder against a checklist, resumably",
        description="Decide many requests into OUT (one JSON line per item) and the store, under --run. "
        "Rerunning the same command continues an interrupted job. Exit 0: all decided; 2: some items "
        "were errors (listed in OUT's .errors.jsonl); 1: a fatal problem.",
    )
    batch.add_argument("input", nargs="?", metavar="INPUT.jsonl", help="requests, one per line (samples format)")
    batch.add_argument("--documents", metavar="DIR", help="decide every .txt, .md and .json document under DIR")
    batch.add_argument("--checklist", metavar="CHECKLIST.json", help="with --documents: questions, rules, mode, options")
    batch.add_argument("--out", required=True, metavar="OUT.jsonl", help="one decision per line; appended on a rerun")
    batch.add_argument("--run", required=True, metavar="NAME", help="run name the decisions are stored (and resumed) under")
    batch.add_argument("--db", help=DB_HELP)
    batch.add_argument("--dataset", metavar="TAG", help="dataset tag stored with the run")
    add_mode_argument(batch)
    batch.add_argument("--batch-size", type=int, default=8, help="requests sharing each model call")
    add_engine_arguments(batch)
    batch.add_argument("--engine", choices=["local", "ray"], default="local", help="decide here, or on Ray actors")
    batch.add_argument("--address", help="Ray cluster address (ray://HEAD:10001 or auto); default: start Ray here")
    batch.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the Ray instance started here")
    batch.add_argument("--ray-actors", type=int, help="model replicas on Ray (default: one per CPU, or per GPU)")
    batch.set_defaults(func=_batch)


def _batch(args: argparse.Namespace) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from ..store.database import is_unavailable
    from .inputs import InputError
    from .outputs import OutputError
    from .ray_engine import RayUnavailable

    try:
        return _run(args)
    except (_Fatal, InputError, OutputError, RayUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FATAL
    except SQLAlchemyError as error:
        if not is_unavailable(error):
            raise
        print(f"error: cannot reach the store: {_outage(error)}; rerun the same command to continue", file=sys.stderr)
        return EXIT_FATAL
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to continue", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    from .outputs import errors_path
    from .progress import Progress
    from .runner import BatchJob, run_batch

    started = time.monotonic()  # the summary's seconds include loading the model and starting Ray
    for flag, tag in (("--run", args.run), ("--dataset", args.dataset or None)):  # an empty --dataset is none
        problem = None if tag is None else tag_problem(tag)
        if problem:
            raise _Fatal(f"{flag}: {problem}")
    if args.ray_cpus < 1 or (args.ray_actors is not None and args.ray_actors < 1):
        raise _Fatal("--ray-cpus and --ray-actors must be at least 1")
    if args.address and args.engine != "ray":
        raise _Fatal("--address goes with --engine ray")
    options = EngineOptions.from_args(args)
    items, total = _items(args, options)
    job = BatchJob(Path(args.out), args.run, args.dataset, args.mode, args.batch_size)
    db_engine, session = _open_store(args.db)
    decider = None
    try:
        decider = _decider(args, options)
        progress = Progress(total)
        try:
            run_batch(items, job, decider, session, progress)
        finally:
            progress.close()
    finally:
        session.close()
        db_engine.dispose()
        if decider is not None:
            decider.close()
    errors = f" (see {errors_path(job.out)})" if progress.errors else ""
    print(progress.summary(since=started) + errors)
    return EXIT_SOME_ERRORS if progress.errors else 0


def _items(args: argparse.Namespace, options: EngineOptions):
    """The job's items (read lazily) and how many there are."""
    from .inputs import check_ids, count_lines, document_paths, load_checklist, read_documents, read_lines

    if (args.input is None) == (args.documents is None):
        raise _Fatal("give either INPUT.jsonl or --documents DIR (with --checklist)")
    if (args.documents is None) != (args.checklist is None):
        raise _Fatal("--documents and --checklist go together")
    try:
        if args.input is not None:
            path = Path(args.input)
            if not path.is_file():
                raise _Fatal(f"{path}: no such file")
            return check_ids(read_lines(path, options.limits)), count_lines(path)
        folder = Path(args.documents)
        checklist = load_checklist(Path(args.checklist), options.limits)
        paths = document_paths(folder)
        return check_ids(read_documents(folder, paths, checklist, options.limits)), len(paths)
    except OSError as error:  # InputError (a bad checklist, a missing folder) is reported by the caller
        raise _Fatal(f"cannot read {error.filename}: {error.strerror or error}") from None


def _open_store(url: str | None):
    """An engine and a session on the store, migrated to the newest revision."""
    from ..store.database import session_factory
    from ..store.opening import StoreOpenError, open_store

    try:
        engine = open_store(url, migrate=True)
    except StoreOpenError as error:
        raise _Fatal(str(error)) from None
    return engine, session_factory(engine)()


def _outage(error: Exception) -> str:
    """The first line of the database driver's message about a store outage."""
    return str(getattr(error, "orig", None) or error).strip().splitlines()[0]


def _decider(args: argparse.Namespace, options: EngineOptions):
    from ..model.loader import ModelLoadError

    if args.engine == "ray":
        from .ray_engine import RayDecider, RayUnavailable

        try:
            return RayDecider(options, args.address, args.ray_cpus, args.ray_actors)
        except RayUnavailable as error:
            raise _Fatal(str(error)) from None
    from .deciding import LocalDecider
    from .job_engine import build_job_engine

    try:
        return LocalDecider(build_job_engine(options))
    except ModelLoadError as error:
        raise _Fatal(str(error)) from None
