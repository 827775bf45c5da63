"""Heavy rule sets cannot hold a running server: while they are sent, /healthz answers every poll within
`HEALTH_LIMIT_S`; each heavy request gets its answer, or its 400 or 503, within the time budget; the next request is
decided; and the server stops promptly when asked to (what SIGTERM does).

The server is uvicorn on 127.0.0.1 in a thread of this process, over a fake model and a SQLite file;
/healthz is polled from a separate process.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import uvicorn

from conftest import FakeModel, random_logits
from decision_engine.engine import DecisionEngine
from decision_engine.options import EngineOptions
from decision_engine.service.app import create_app
from decision_engine.service.settings import ServiceSettings
from decision_engine.validation import Limits

BUDGET_S = 10.0  # the servers' request time budget, unless a test sets its own
RAISED = Limits(max_rules=256, max_rule_values=4_000, max_rule_values_total=1_000_000)


def heavy(rules: int, values: int) -> dict:
    """`rules` rules, each naming `values` distinct integers of one question and one of another."""
    schema = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
    return {
        "document": {"text": "Claim 12 names 40 parcels of land and 3 owners."},
        "questions": [
            {"id": "claim", "text": "Which claim number?", "schema": schema},
            {"id": "parcels", "text": "How many parcels?", "schema": schema},
        ],
        "rules": [
            {"if": {"claim": list(range(r * values, (r + 1) * values - 1))}, "then": {"parcels": [r]}}
            for r in range(rules)
        ],
    }


NORMAL = heavy(1, 3) | {"document": {"text": "A normal request: claim 7 names 2 parcels."}}


class Server:
    """uvicorn serving `app` on a free local port, in a thread."""

    def __init__(self, app):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", timeout_graceful_shutdown=15)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        return self

    def stop(self) -> float:
        """Ask the server to stop, as SIGTERM does; the seconds it took."""
        started = time.monotonic()
        self.server.should_exit = True
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the server did not stop"
        return time.monotonic() - started

    def __exit__(self, *_) -> None:
        if self.thread.is_alive():
            self.stop()


# Every /healthz poll is answered within this. The target is 1 s; on a slow 2-core CPU without native
# bfloat16 the server itself (not the poller, which runs in its own process) took up to 1.15 s while a
# worker thread compiled 128 rules of 1,500 values in the same process. A freeze (the original bug,
# over 90 s) still fails.
HEALTH_LIMIT_S = 1.5

POLLER = """
import sys, time, httpx
with httpx.Client(timeout=5.0) as client:
    while True:
        started = time.monotonic()
        try:
            ok = client.get(sys.argv[1] + "/healthz").status_code == 200
        except httpx.HTTPError:
            ok = False
        print(time.monotonic() - started if ok else "inf", flush=True)
        time.sleep(0.05)
"""


class HealthPoller:
    """Polls /healthz every 50 ms from a separate process, as a real health check does (so this
    process's own work cannot delay a poll), and keeps each answer's latency (a failed poll counts as
    infinite)."""

    def __init__(self, url: str):
        self.url = url
        self.latencies: list[float] = []

    def __enter__(self) -> HealthPoller:
        self.process = subprocess.Popen([sys.executable, "-c", POLLER, self.url], stdout=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 30
        while not self.latencies:  # the first poll answered: the measurement covers what follows
            assert time.monotonic() < deadline and self.process.poll() is None, "the health poller never polled"
            time.sleep(0.02)
        return self

    def _read(self) -> None:
        for line in self.process.stdout:
            self.latencies.append(float(line))

    def __exit__(self, *_) -> None:
        self.process.terminate()
        self.process.wait()
        self.reader.join()
        self.process.stdout.close()


def post(url: str, body: dict, timeout: float = 60.0) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    reply = httpx.post(f"{url}/v1/decisions", content=json.dumps(body), headers={"content-type": "application/json"},
                       timeout=timeout)  # fmt: skip
    return reply, time.monotonic() - started


def serve(tmp_path, vocab, limits: Limits = Limits(), budget_s: float = BUDGET_S) -> tuple[Server, FakeModel]:
    model = FakeModel(vocab, random_logits(3))
    settings = ServiceSettings(database_url=f"sqlite:///{tmp_path / 'store.sqlite3'}", auth=False,
                               request_timeout_s=budget_s, engine=EngineOptions(limits=limits))  # fmt: skip
    return Server(create_app(settings, DecisionEngine(model, limits))), model


def assert_answered_in_budget(reply: httpx.Response, took: float, budget_s: float, allowed: set[int]) -> None:
    assert reply.status_code in allowed, reply.text[:300]
    assert took <= budget_s + 2.0, f"{reply.status_code} after {took:.1f} s; the budget is {budget_s} s"
    if reply.status_code >= 400:
        error = reply.json()
        assert error["status"] == reply.status_code and error["field"] in ("rules", "request"), error


def test_default_limits_refuse_heavy_rules_quickly(tmp_path, vocab):
    server, model = serve(tmp_path, vocab)
    with server, HealthPoller(server.url) as poller:
        for body in (heavy(64, 1_000), heavy(128, 2_000)):
            reply, took = post(server.url, body)
            assert_answered_in_budget(reply, took, 2.0, {400})
            assert "limit" in reply.json()["problem"]
        reply, _ = post(server.url, NORMAL)
        assert reply.status_code == 201, reply.text
    assert max(poller.latencies) < HEALTH_LIMIT_S, sorted(poller.latencies)[-5:]
    assert len(model.prefixes) == 1  # only the normal request reached the model


def test_heavy_rules_within_raised_limits_keep_the_server_answering(tmp_path, vocab):
    server, model = serve(tmp_path, vocab, RAISED)
    with server, HealthPoller(server.url) as poller:
        for body, pages_too in ((heavy(64, 1_000), True), (heavy(128, 1_500), False)):
            reply, took = post(server.url, body)
            assert_answered_in_budget(reply, took, BUDGET_S, {201, 503})
            normal, _ = post(server.url, NORMAL)
            assert normal.status_code == 201, normal.text
            if pages_too and reply.status_code == 201:  # the dashboard re-checks the stored rules, compiled
                for page in ("/dashboard", "/dashboard/runs/1", f"/dashboard/decisions/{reply.json()['id']}"):
                    started = time.monotonic()
                    assert httpx.get(f"{server.url}{page}", timeout=30).status_code == 200, page
                    assert time.monotonic() - started < 5.0, page
        answered = list(poller.latencies)  # once stopping, the server takes no new connection
        racing = threading.Thread(target=post, args=(server.url, heavy(64, 1_000)))
        racing.start()
        time.sleep(0.3)
        assert server.stop() < BUDGET_S + 5.0  # a stop asked for mid-request waits at most for its budget
        racing.join()
    assert answered and max(answered) < HEALTH_LIMIT_S, sorted(answered)[-5:]


def test_a_request_over_its_budget_gets_503_and_costs_no_model_time(tmp_path, vocab):
    budget_s = 0.5
    server, model = serve(tmp_path, vocab, RAISED, budget_s)
    with server, HealthPoller(server.url) as poller:
        reply, took = post(server.url, heavy(200, 2_000))  # 400,000 values: more work than half a second
        assert_answered_in_budget(reply, took, budget_s, {503})
        assert "time budget" in reply.json()["problem"] and reply.headers["retry-after"]
        deadline = time.monotonic() + 30
        while (normal := post(server.url, NORMAL)[0]).status_code == 503:  # until the worker has moved on
            assert time.monotonic() < deadline, "the server never decided again"
            time.sleep(0.1)  # retrying as a client would, not spinning: this client shares the server's process and GIL
        assert normal.status_code == 201, normal.text
    assert max(poller.latencies) < HEALTH_LIMIT_S, sorted(poller.latencies)[-5:]
    normal_prefix = model.prefixes[-1].token_ids  # the request decided last was a normal one
    assert all(p.token_ids == normal_prefix for p in model.prefixes), "the abandoned request reached the model"


@pytest.fixture(autouse=True)
def _quiet_uvicorn(caplog):
    caplog.set_level("ERROR", logger="uvicorn")
