"""Headless Chromium driven over the DevTools protocol (one tab), recording every console error and failed request."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import websocket

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]


class Chromium:
    """One page of a headless Chromium. `problems` lists console errors, exceptions and failed loads."""

    def __init__(self, executable: str, width: int = 1366, height: int = 768, timeout_s: float = 20.0):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.problems: list[str] = []
        self._events: list[dict] = []
        self._next_id = 0
        try:
            self.socket = websocket.create_connection(self._browser_url(), timeout=timeout_s, suppress_origin=True)
            target = self.send("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
            self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, page=False)[
                "sessionId"
            ]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.send(f"{domain}.enable")
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        except BaseException:
            self.close()
            raise

    def _browser_url(self) -> str:
        """The browser's DevTools websocket, from the port file Chromium writes into its profile."""
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.process.returncode}")
            lines = port_file.read_text().split() if port_file.exists() else []
            if len(lines) == 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def close(self) -> None:
        socket = getattr(self, "socket", None)
        if socket is not None:
            socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _receive(self, deadline: float) -> dict:
        self.socket.settimeout(max(0.01, deadline - time.monotonic()))
        message = json.loads(self.socket.recv())
        if "method" in message:
            self._events.append(message)
            self._note(message)
        return message

    def _note(self, event: dict) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.problems.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.problems.append(f"console.error: {[a.get('value') for a in params.get('args', [])]}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.problems.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            self.problems.append(f"request failed: {params.get('errorText')}")
        elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
            self.problems.append(f"HTTP {params['response']['status']}: {params['response']['url']}")

    def send(self, method: str, params: dict | None = None, page: bool = True) -> dict:
        """Send a command (to the page unless `page` is False) and wait for its result."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        self.socket.send(json.dumps(message))
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def _wait_for_load(self, deadline: float) -> None:
        while True:
            if any(e["method"] == "Page.loadEventFired" for e in self._events):
                return
            self._receive(deadline)

    def goto(self, url: str) -> None:
        """Load `url` (following redirects) and wait for the load event."""
        self._events.clear()
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise RuntimeError(f"navigating to {url}: {result['errorText']}")
        self._wait_for_load(time.monotonic() + self.timeout_s)

    def submit(self, selector: str) -> None:
        """Click the submit button `selector` and wait for the page it leads to."""
        self._events.clear()
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
        self._wait_for_load(time.monotonic() + self.timeout_s)

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, path: Path, selector: str | None = None, max_height: int = 6000) -> None:
        """A PNG of the whole page at the window's width, or of the element `selector` only; its top
        `max_height` pixels at most."""
        if selector is None:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
        else:
            box = self.evaluate(
                f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()"
            )
            clip = {**box, "height": min(box["height"], max_height), "scale": 1}
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})
        path.write_bytes(base64.b64decode(shot["data"]))
