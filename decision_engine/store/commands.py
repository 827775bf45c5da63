"""`decision-engine db|keys|report`: the store's subcommands, added to the main CLI's parser."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

EXIT_UNAVAILABLE = 1
EXIT_INVALID = 2
DB_HELP = "database URL (default: $DATABASE_URL, else sqlite:///decisions.sqlite3)"


def _store_command(handler: Callable[[argparse.Namespace, Engine], int]) -> Callable[[argparse.Namespace], int]:
    """Open the store named by --db, run `handler(args, engine)`, and turn an outage into one line."""

    def run(args: argparse.Namespace) -> int:
        from alembic.util import CommandError

        from .opening import StoreOpenError, opened_store

        try:
            with opened_store(args.db) as engine:
                return handler(args, engine)
        except StoreOpenError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID if error.bad_url else EXIT_UNAVAILABLE
        except CommandError as error:  # e.g. an unknown revision
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID

    return run


def _db_upgrade(args, engine) -> int:
    from .migrate import current_revision, upgrade

    upgrade(engine, args.revision)
    print(f"store {_shown(engine)} at revision {current_revision(engine) or 'none'}")
    return 0


def _db_downgrade(args, engine) -> int:
    from .migrate import current_revision, downgrade

    downgrade(engine, args.revision)
    print(f"store {_shown(engine)} at revision {current_revision(engine) or 'none'}")
    return 0


def _db_current(args, engine) -> int:
    from .migrate import current_revision, head_revision

    current, head = current_revision(engine), head_revision()
    print(f"{current or 'none'}{' (head)' if current == head else f' (head is {head})'}")
    return 0


def _db_check(args, engine) -> int:
    from .migrate import check, current_revision

    problems = check(engine)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} difference(s) between the models and the store", file=sys.stderr)
        return 1
    print(f"the store {_shown(engine)} matches the models at revision {current_revision(engine)}")
    return 0


def _shown(engine: Engine) -> str:
    """The store's URL as a user may see it (password hidden)."""
    return engine.url.render_as_string(hide_password=True)


def _duration(text: str) -> dt.timedelta:
    """`90m`, `12h`, `30d`, `8w` (or plain seconds) as a timedelta; the argparse type of --expires-in."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
    number, unit = (text[:-1], text[-1]) if text[-1:].lower() in units else (text, "s")
    try:
        seconds = float(number) * units[unit.lower()]
        if not 0 < seconds <= 100 * 365 * 86_400:
            raise ValueError
        return dt.timedelta(seconds=seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90m, 12h, 30d or 8w") from None


def _keys_create(args, engine) -> int:
    from .database import session_factory
    from .keys import create_key
    from .migrate import current_revision, head_revision, upgrade

    if current_revision(engine) != head_revision():
        upgrade(engine)
    with session_factory(engine)() as session:
        key_id, key = create_key(session, args.scope, args.expires_in)
    expires = None if args.expires_in is None else dt.datetime.now(dt.UTC) + args.expires_in
    until = "" if expires is None else f", valid until about {expires:%Y-%m-%d %H:%M} UTC"
    print(f"API key {key_id} with scope {args.scope!r} in {_shown(engine)}{until}.")
    print("It is shown only now and cannot be recovered:")
    print(key)
    return 0


def _when(moment: dt.datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M}"


def _keys_list(args, engine) -> int:
    from .database import session_factory
    from .keys import list_keys
    from .migrate import current_revision

    if current_revision(engine) is None:
        print(f"error: the store at {_shown(engine)} has no tables yet; run: decision-engine db upgrade", file=sys.stderr)
        return 1
    with session_factory(engine)() as session:
        keys = list_keys(session)
    now = dt.datetime.now(dt.UTC)
    if args.json:
        for key in keys:
            fields = {name: v.isoformat() if isinstance(v, dt.datetime) else v for name, v in vars(key).items()}
            print(json.dumps(fields | {"state": key.state(now)}))
        return 0
    print(f"API keys in {_shown(engine)} (times in UTC):")
    rows = [("id", "prefix", "scope", "created", "last used", "expires", "state")]
    for key in keys:
        state = key.state(now) + (f" {_when(key.revoked_at)}" if key.revoked_at else "")
        rows.append((str(key.id), key.prefix, key.scope, _when(key.created_at), _when(key.last_used_at), _when(key.expires_at), state))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def _keys_revoke(args, engine) -> int:
    from .database import session_factory
    from .keys import revoke_key

    with session_factory(engine)() as session:
        revoked = revoke_key(session, args.key_id)
    if not revoked:
        print(f"error: no active API key {args.key_id} in {_shown(engine)}", file=sys.stderr)
        return 1
    print(f"API key {args.key_id} revoked in {_shown(engine)}; the service refuses it from its next request")
    return 0


def _db_prune(args: argparse.Namespace) -> int:
    try:
        before = _moment("--before", args.before)
        before = before if before.tzinfo else before.replace(tzinfo=dt.UTC)
        before.astimezone(dt.UTC)
    except (ValueError, OverflowError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    return _store_command(lambda args, engine: _prune(args, engine, before))(args)


def _prune(args, engine, before: dt.datetime) -> int:
    from .database import session_factory
    from .migrate import current_revision
    from .retention import prune

    if current_revision(engine) is None:
        print(f"error: the store at {_shown(engine)} has no tables yet; nothing to prune", file=sys.stderr)
        return 1
    with session_factory(engine)() as session:
        removed = prune(session, before, run=args.run, dry_run=args.dry_run)
    which = f" of run {args.run!r}" if args.run else ""
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"{verb} {removed.decisions} decisions{which} stored before {before.astimezone(dt.UTC).isoformat()} "
        f"({removed.questions} questions, {removed.answers} answers, {removed.labels} labels) "
        f"and {removed.documents} documents no other decision refers to, from {_shown(engine)}"
    )
    return 0


def _moment(flag: str, text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        example = "e.g. 2025-01-31 or 2025-01-31T12:00:00Z"
        raise ValueError(f"{flag}: {text!r} is not an ISO date or time, {example}") from None


def _report(args: argparse.Namespace) -> int:
    from ..storable import text_problem

    try:
        since, until = _moment("--since", args.since), _moment("--until", args.until)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    for flag, value in (("--run", args.run), ("--dataset", args.dataset), ("--model", args.model)):
        if value is not None and text_problem(value):
            print(f"error: {flag}: {text_problem(value)}", file=sys.stderr)
            return EXIT_INVALID
    return _store_command(lambda args, engine: _print_report(args, engine, since, until))(args)


def _print_report(args, engine, since, until) -> int:
    import msgspec

    from .database import session_factory
    from .migrate import current_revision
    from .records import ReportFilters
    from .reports import accuracy_report, format_report

    if current_revision(engine) is None:
        print("error: the store has no tables yet; run: decision-engine db upgrade", file=sys.stderr)
        return 1
    filters = ReportFilters(
        run=args.run, dataset=args.dataset, model=args.model, mode=args.mode, since=since, until=until
    )
    with session_factory(engine)() as session:
        report = accuracy_report(session, filters)
    print(msgspec.json.encode(report).decode() if args.json else format_report(report))
    return 0


def add_store_commands(subparsers) -> None:
    """Add `db`, `keys` and `report` to the subparsers of the `decision-engine` parser."""
    from .schema import SCOPES

    db = subparsers.add_parser("db", help="create, migrate and check the decision store's tables")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="migrate the store up (creating its tables)")
    upgrade.add_argument("--revision", default="head", help="target revision (default: head)")
    downgrade = db_sub.add_parser("downgrade", help="migrate the store down; 'base' drops every table")
    downgrade.add_argument("revision", help="target revision, e.g. base")
    check = db_sub.add_parser("check", help="exit 1 and list differences if the store and the models disagree")
    current = db_sub.add_parser("current", help="print the store's revision")
    for parser, handler in (
        (upgrade, _db_upgrade), (downgrade, _db_downgrade), (check, _db_check), (current, _db_current)
    ):
        parser.add_argument("--db", help=DB_HELP)
        parser.set_defaults(func=_store_command(handler))
    prune = db_sub.add_parser("prune", help="remove decisions (answers, labels, orphaned documents) stored before a date")
    prune.add_argument("--before", required=True, help="ISO date or date-time (UTC unless given); older decisions go")
    prune.add_argument("--run", help="only decisions of this run name")
    prune.add_argument("--dry-run", action="store_true", help="count what would go and remove nothing")
    prune.add_argument("--db", help=DB_HELP)
    prune.set_defaults(func=_db_prune)

    keys = subparsers.add_parser("keys", help="manage the service's API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create an API key and print it once")
    create.add_argument("--scope", required=True, choices=SCOPES, help="what the key may do (admin: everything)")
    create.add_argument("--expires-in", type=_duration, help="valid for this long, e.g. 90m, 12h, 30d (default: until revoked)")
    create.add_argument("--db", help=DB_HELP)
    create.set_defaults(func=_store_command(_keys_create))
    listing = keys_sub.add_parser("list", help="every key: id, scope, created, last used, expiry, revoked")
    listing.add_argument("--json", action="store_true", help="one JSON object per key")
    listing.add_argument("--db", help=DB_HELP)
    listing.set_defaults(func=_store_command(_keys_list))
    revoke = keys_sub.add_parser("revoke", help="revoke an API key by its id")
    revoke.add_argument("key_id", type=int, help="the id printed when the key was created")
    revoke.add_argument("--db", help=DB_HELP)
    revoke.set_defaults(func=_store_command(_keys_revoke))

    report = subparsers.add_parser("report", help="accuracy of stored answers against their labels")
    report.add_argument("--run", help="only this run name")
    report.add_argument("--dataset", help="only this dataset")
    report.add_argument("--model", help="only this model")
    report.add_argument("--mode", choices=["joint", "independent", "sequential"], help="only this decoding mode")
    report.add_argument("--since", help="only decisions at or after this ISO date/time (UTC unless given)")
    report.add_argument("--until", help="only decisions before this ISO date/time (UTC unless given)")
    report.add_argument("--db", help=DB_HELP)
    report.add_argument("--json", action="store_true", help="the report as one JSON object")
    report.set_defaults(func=_report)
