"""Loopback load test: concurrent clients POST decisions for a while; every 2xx must be stored exactly once.

    python -m decision_engine.service.load_test --url http://127.0.0.1:8000 --concurrency 50 --duration 30 \
        [--key KEY] [--db URL] [--levels 1,16]

Prints one JSON object: per concurrency level the requests, status counts, decisions/s and latency
percentiles (of the decisions made, each from the start of the attempt that made it); with --db, how many
acknowledged decisions the store holds once, twice or not at all. A client told 429 or 503 waits the
`Retry-After` seconds (at most until its level ends) before trying again, as a well-behaved client does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "lease_termination.jsonl"


def load_bodies(path: Path) -> list[bytes]:
    """Requests from a samples file, labels and ids dropped."""
    bodies = []
    for line in path.read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            obj.pop("labels", None)
            obj.pop("id", None)
            bodies.append(json.dumps(obj).encode())
    if not bodies:
        raise ValueError(f"{path} holds no requests")
    return bodies


async def run_level(url: str, bodies: list[bytes], concurrency: int, duration: float, key: str | None) -> dict:
    """`concurrency` clients, each posting one request after another for `duration` seconds."""
    import httpx

    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    statuses: Counter[str] = Counter()
    latencies: list[float] = []
    ids: list[str] = []
    stop_at = time.perf_counter() + duration
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def client(n: int, http: httpx.AsyncClient) -> None:
        i = n
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            try:
                reply = await http.post(f"{url}/v1/decisions", content=bodies[i % len(bodies)], headers=headers)
            except httpx.HTTPError as error:
                statuses[type(error).__name__] += 1
                await asyncio.sleep(0.05)
                continue
            finally:
                i += concurrency
            statuses[str(reply.status_code)] += 1
            if reply.status_code in (429, 503):
                await asyncio.sleep(max(0.0, min(_retry_after_s(reply), stop_at - time.perf_counter())))
            elif 200 <= reply.status_code < 300:
                latencies.append(time.perf_counter() - started)
                ids.append(reply.json()["id"])

    began = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(n, http) for n in range(concurrency)))
    elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "concurrency": concurrency,
        "seconds": round(elapsed, 2),
        "requests": sum(statuses.values()),
        "statuses": dict(statuses),
        "server_errors": sum(v for k, v in statuses.items() if k.startswith("5")),
        "decisions_per_s": round(len(ids) / elapsed, 2),
        "latency_p50_s": round(statistics.median(latencies), 4) if latencies else None,
        "latency_p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 4) if latencies else None,
        "ids": ids,
    }


def _retry_after_s(reply) -> float:
    """The reply's Retry-After in seconds; 1 where it gives none (or a date)."""
    try:
        return max(0.0, float(reply.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


def count_stored(db_url: str, ids: list[str]) -> dict:
    """How many times each acknowledged id is in the store."""
    from sqlalchemy import func, select

    from ..store.database import create_db_engine
    from ..store.schema import DecisionGroup

    engine = create_db_engine(db_url)
    seen: Counter[str] = Counter()
    with engine.connect() as connection:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = connection.execute(
                select(DecisionGroup.id, func.count()).where(DecisionGroup.id.in_(chunk)).group_by(DecisionGroup.id)
            )
            seen.update({row[0]: row[1] for row in rows})
    engine.dispose()
    acknowledged = Counter(ids)
    return {
        "acknowledged": len(acknowledged),
        "stored_once": sum(1 for i in acknowledged if seen[i] == 1),
        "missing": sum(1 for i in acknowledged if seen[i] == 0),
        "acknowledged_twice": sum(1 for i, n in acknowledged.items() if n > 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--levels", help="comma-separated concurrency levels run one after another (overrides --concurrency)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per level")
    parser.add_argument("--key", help="API key with decide scope (omit with serve --no-auth)")
    parser.add_argument("--requests", default=str(SAMPLES), help="samples-format JSON Lines to post, in turn")
    parser.add_argument("--db", help="the server's database URL, to check every 2xx is stored exactly once")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")] if args.levels else [args.concurrency]
    bodies = load_bodies(Path(args.requests))
    results = [asyncio.run(run_level(args.url, bodies, n, args.duration, args.key)) for n in levels]
    report: dict = {"levels": []}
    all_ids: list[str] = []
    for result in results:
        all_ids.extend(result.pop("ids"))
        report["levels"].append(result)
    if len(results) > 1 and results[0]["decisions_per_s"]:
        for level in report["levels"][1:]:
            level["throughput_over_first"] = round(level["decisions_per_s"] / results[0]["decisions_per_s"], 2)
        report["throughput_ratio_last_over_first"] = round(results[-1]["decisions_per_s"] / results[0]["decisions_per_s"], 2)
    if args.db:
        report["store"] = count_stored(args.db, all_ids)
    print(json.dumps(report, indent=2))
    failed = any(r["server_errors"] for r in results) or (args.db and report["store"]["stored_once"] != len(set(all_ids)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
