"""The `decision-engine` command line: one entry point, a subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

EXIT_INVALID = 2


def _decide(args: argparse.Namespace) -> int:
    from .engine import DecisionEngine
    from .model.loader import ModelLoadError
    from .models import open_model
    from .requests_file import read_requests
    from .validation import Limits

    limits = Limits(max_document_chars=args.max_document_chars)
    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return EXIT_INVALID
    items = list(read_requests(path, limits))
    bad = [item for item in items if item.error is not None]
    for item in bad:
        print(f"error: {path}:{item.line}: {item.error}", file=sys.stderr)
    good = [item for item in items if item.error is None]
    if not good:
        return EXIT_INVALID
    try:
        engine = DecisionEngine(open_model(args.model, args.device, args.trust_remote_code), limits)
    except ModelLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    from .errors import RequestError

    for start in range(0, len(good), args.batch_size):
        chunk = good[start : start + args.batch_size]
        for item in chunk:
            if args.threshold is not None:
                item.request.options.threshold = args.threshold
        try:
            responses = engine.decide_batch([item.request for item in chunk], args.mode)
        except RequestError as error:
            # A model-specific problem (e.g. choices the tokenizer cannot tell apart): decide one by one.
            responses = []
            for item in chunk:
                try:
                    responses.append(engine.decide(item.request, args.mode))
                except RequestError as single:
                    print(f"error: {path}:{item.line}: {single}", file=sys.stderr)
                    bad.append(item)
                    responses.append(None)
        for item, response in zip(chunk, responses):
            if response is not None:
                _print_response(item, response, args.json)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="decision-engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    decide = sub.add_parser("decide", help="decide the request(s) in a JSON or JSON Lines file")
    decide.add_argument("file", help="one request (JSON) or several (JSON Lines)")
    decide.add_argument("--mode", choices=["joint", "independent", "sequential"], help="override each request's mode")
    decide.add_argument("--json", action="store_true", help="one JSON response per line")
    decide.add_argument("--model", help="checkpoint folder (default: the bundled model)")
    decide.add_argument("--trust-remote-code", action="store_true", help="allow a Hugging Face model's own code")
    decide.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    decide.add_argument("--threshold", type=float, help="override each request's confidence threshold")
    decide.add_argument("--batch-size", type=int, default=8, help="requests sharing each forward pass")
    decide.add_argument("--max-document-chars", type=int, default=1_000_000, help="reject longer documents")
    decide.set_defaults(run=_decide)

    schemas = sub.add_parser("schemas", help="write (or --check) the JSON Schema files of request and response")
    schemas.add_argument("--out", default="schemas", help="folder of the schema files")
    schemas.add_argument("--check", action="store_true", help="exit 1 if the files differ from the types")
    schemas.set_defaults(run=_schemas)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "threshold", None) is not None and not 0 < args.threshold <= 1:
        print("error: --threshold must be in (0, 1]", file=sys.stderr)
        return EXIT_INVALID
    if getattr(args, "batch_size", 1) < 1:
        print("error: --batch-size must be at least 1", file=sys.stderr)
        return EXIT_INVALID
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
