"""`decision-engine serve`: the service with the bundled model and a SQLite file, in one command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..options import EngineOptions, add_engine_arguments
from .settings import ServiceSettings


def add_service_commands(sub) -> None:
    """Add `serve` to the subparsers of the `decision-engine` parser (declared as an entry point)."""
    serve = sub.add_parser("serve", help="run the REST service (migrates the store on first start)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--db", help="database URL (default: $DATABASE_URL, else sqlite:///decisions.sqlite3)")
    add_engine_arguments(serve)
    serve.add_argument("--no-auth", action="store_true", help="accept requests without API keys (local experiments only)")
    serve.add_argument("--no-document-text", action="store_true", help="store only each document's SHA-256")
    serve.add_argument("--max-in-flight", type=int, default=64, help="requests served at once; past it 429")
    serve.add_argument("--max-queued-decisions", type=int, default=ServiceSettings.max_queued_decisions,
                       help="decisions waiting for the model at once; past it 429 with the measured Retry-After")
    serve.add_argument("--batch-max", type=int, default=16, help="requests sharing one model call")
    serve.add_argument("--batch-wait-ms", type=float, default=5.0, help="how long a request waits for company")
    serve.add_argument("--request-timeout-s", type=float, default=ServiceSettings.request_timeout_s,
                       help="a decision not made within this many seconds is a 503 and its work is dropped")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from ..models import unavailable_device
    from .app import create_app

    if min(args.max_in_flight, args.max_queued_decisions, args.batch_max) < 1 or args.batch_wait_ms < 0:
        print("error: --max-in-flight, --max-queued-decisions and --batch-max must be at least 1, "
              "--batch-wait-ms at least 0", file=sys.stderr)
        return 2
    if not 0 < args.request_timeout_s <= 3600:
        print("error: --request-timeout-s must be more than 0 and at most 3600", file=sys.stderr)
        return 2
    settings = ServiceSettings(
        database_url=args.db,
        engine=EngineOptions.from_args(args),
        auth=not args.no_auth,
        store_document_text=not args.no_document_text,
        max_in_flight=args.max_in_flight,
        batch_max=args.batch_max,
        max_queued_decisions=args.max_queued_decisions,
        batch_wait_ms=args.batch_wait_ms,
        request_timeout_s=args.request_timeout_s,
    )
    if not settings.auth:
        print("warning: --no-auth: anyone who can reach this port can decide, label and read", file=sys.stderr)
    if args.model and not (Path(args.model) / "config.json").is_file():
        print(f"error: {args.model} has no config.json; expected a checkpoint folder", file=sys.stderr)
        return 1
    if problem := unavailable_device(settings.engine.device):
        print(f"error: {problem}", file=sys.stderr)
        return 1
    # The model loads on start in the thread that will run it (see DecisionBatcher).
    app = create_app(settings)
    # On SIGTERM, requests in flight get until their time budget ends, then the process stops.
    grace = max(30, int(settings.request_timeout_s) + 5)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=grace)
    return 0
