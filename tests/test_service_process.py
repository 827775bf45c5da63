"""The real server process: `decision-engine serve` on a fresh SQLite file, loaded, then killed with SIGKILL.

Every decision acknowledged with a 2xx must be in the store exactly once, and the server must answer no 5xx.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from decision_engine.service.load_test import SAMPLES, count_stored, load_bodies, run_level


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db_url: str, port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "decision_engine.cli", "serve", "--no-auth", "--db", db_url, "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ | {"HF_HUB_OFFLINE": "1"})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"server exited: {server.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply:
                if reply.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise AssertionError("server did not become ready in 120 s")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_server_loses_no_acknowledged_decision(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'decisions.sqlite3'}"
    port = free_port()
    server = start_server(db_url, port)
    try:
        url = f"http://127.0.0.1:{port}"
        bodies = load_bodies(SAMPLES)
        warm = asyncio.run(run_level(url, bodies, concurrency=8, duration=2.0, key=None))
        assert warm["server_errors"] == 0 and warm["ids"], warm
        killer = threading.Timer(1.5, lambda: os.kill(server.pid, signal.SIGKILL))
        killer.start()
        loaded = asyncio.run(run_level(url, bodies, concurrency=8, duration=3.0, key=None))
        killer.join()
    finally:
        server.kill()
        server.wait()
    assert loaded["server_errors"] == 0, loaded["statuses"]
    acknowledged = warm["ids"] + loaded["ids"]
    stored = count_stored(db_url, acknowledged)
    assert stored["missing"] == 0 and stored["stored_once"] == len(set(acknowledged)), stored
    assert stored["acknowledged_twice"] == 0

    restarted = start_server(db_url, port)  # the store is still usable, and migrations run again harmlessly
    try:
        with urllib.request.urlopen(f"{'http://127.0.0.1'}:{port}/v1/decisions/{acknowledged[0]}") as reply:
            assert reply.status == 200
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=30)
