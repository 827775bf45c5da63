"""The dashboard in a real headless Chromium: sign in with a read key, load every page, compare the numbers with
the SQL report, check that planted markup stays text, and save a screenshot of each page.

Screenshots go to tests/screenshots/ (or $DASHBOARD_SCREENSHOTS). Without Chromium the tests are skipped,
except under CI (the `CI` variable), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import uvicorn

from decision_engine.dashboard.formatting import score, signed
from decision_engine.engine import DecisionEngine
from decision_engine.retrieval.builder import RetrievalContext
from decision_engine.service.app import create_app
from decision_engine.service.settings import ServiceSettings
from decision_engine.store import schema as db
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.records import ReportFilters
from decision_engine.store.reports import accuracy_report
from service_helpers import bearer, migrated_keys, sample_request

SCREENSHOTS = Path(os.environ.get("DASHBOARD_SCREENSHOTS") or Path(__file__).parent / "screenshots")
PLANTED = "<script>window.__pwned = 1</script>"  # in a question text and the document of one decision


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "Chromium is not installed (Debian: apt-get install chromium); the browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def service(tmp_path_factory, tiny_backend):
    """The real service over the tiny model (lexical retrieval, as `serve` runs, so answers carry evidence)
    on a free port, with decisions in two runs, labelled.

    Yields (base URL, keys by scope, store URL, the decision id holding the planted markup).
    """
    folder = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{folder / 'decisions.sqlite3'}"
    keys = migrated_keys(url)
    port = _free_port()
    engine = DecisionEngine(tiny_backend, context=RetrievalContext.create(tiny_backend.vocab, dense=False))
    app = create_app(ServiceSettings(database_url=url), engine)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the service did not start"
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    planted_id = None
    try:
        with httpx.Client(base_url=base, timeout=120) as client:
            for mode in ("joint", "independent"):
                for index in (0, 1):
                    body, labels = sample_request(index)
                    _decide_and_label(client, keys, body | {"mode": mode, "run": f"leases-{mode}"}, labels)
            body, labels = sample_request(0)
            body["questions"][0]["text"] = f"{PLANTED} {body['questions'][0]['text']}"
            body["document"]["text"] = f"{PLANTED}\n{body['document']['text']}"
            planted_id = _decide_and_label(client, keys, body | {"run": "leases-joint"}, labels)
        yield base, keys, url, planted_id
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _decide_and_label(client: httpx.Client, keys: dict, body: dict, labels: dict) -> str:
    json_type = {"content-type": "application/json"}
    created = client.post("/v1/decisions", content=json.dumps(body), headers={**json_type, **bearer(keys["decide"])})
    assert created.status_code == 201, created.text
    decision_id = created.json()["id"]
    labelled = client.put(
        f"/v1/decisions/{decision_id}/labels",
        content=json.dumps({"labels": labels}),
        headers={**json_type, **bearer(keys["label"])},
    )
    assert labelled.status_code == 200, labelled.text
    return decision_id


@pytest.fixture(scope="module")
def browser():
    from chromium_cdp import Chromium

    chromium = Chromium(_chromium())
    yield chromium
    chromium.close()


def _reports(store_url: str) -> dict[str, tuple[int, object]]:
    """{run name: (run id, the SQL accuracy report of that run)}."""
    engine = create_db_engine(store_url)
    try:
        with session_factory(engine)() as session:
            runs = {run.name: run.id for run in session.query(db.Run)}
            return {name: (i, accuracy_report(session, ReportFilters(run_id=i))) for name, i in runs.items()}
    finally:
        engine.dispose()


def _text(browser, selector: str) -> str:
    return browser.evaluate(f"document.querySelector({json.dumps(selector)}).textContent.trim()")


def _visit(browser, url: str, name: str) -> None:
    before = len(browser.problems)
    browser.goto(url)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(SCREENSHOTS / f"{name}.png")
    assert browser.problems[before:] == [], f"{name}: {browser.problems[before:]}"


def _check_evidence(browser, base: str, keys: dict, decision_id: str) -> None:
    """The page's marks against the stored decision: each mark is the document's text at its offsets, names
    exactly the questions whose evidence covers it and, for one question, wears that question's legend colour;
    every question with evidence is marked, and the legend lists every question in order."""
    stored = httpx.get(f"{base}/v1/decisions/{decision_id}", headers=bearer(keys["read"])).json()
    text = stored["document"]["text"]
    spans = {a["id"]: [(e["start"], e["end"]) for e in a.get("evidence") or []] for a in stored["answers"]}
    legend = browser.evaluate(
        "[...document.querySelectorAll('#legend li[data-question]')].map(li => [li.dataset.question,"
        " getComputedStyle(li.querySelector('.swatch')).backgroundColor])"
    )
    assert [qid for qid, _ in legend] == [q["id"] for q in stored["questions"]]
    colour = dict(legend)
    assert len(set(colour.values())) == len(colour)  # one colour per question
    marks = browser.evaluate(
        "[...document.querySelectorAll('#document mark')].map(m => ({questions: m.dataset.questions.split(' '),"
        " start: +m.dataset.start, end: +m.dataset.end, text: m.textContent, overlap: m.classList.contains('overlap'),"
        " background: getComputedStyle(m).backgroundColor, image: getComputedStyle(m).backgroundImage}))"
    )
    assert browser.evaluate("document.querySelector('#document').textContent") == text
    assert marks, "no evidence is marked"
    for mark in marks:
        covering = {q for q, edges in spans.items() if any(s <= mark["start"] and mark["end"] <= e for s, e in edges)}
        assert set(mark["questions"]) == covering, mark
        assert mark["text"] == text[mark["start"] : mark["end"]]
        assert mark["overlap"] == (len(covering) > 1)
        if len(covering) == 1:
            assert mark["background"] == colour[mark["questions"][0]]
        else:
            assert mark["image"].startswith("repeating-linear-gradient(")
    marked = {q for mark in marks for q in mark["questions"]}
    assert marked == {q for q, edges in spans.items() if any(s < e for s, e in edges)}
    overlapping = any(mark["overlap"] for mark in marks)
    assert browser.evaluate("document.querySelector('#legend-overlap') !== null") == overlapping


def test_every_page_in_a_browser(service, browser):
    base, keys, store_url, planted_id = service
    reports = _reports(store_url)
    joint_id, joint = reports["leases-joint"]
    independent_id, independent = reports["leases-independent"]

    browser.goto(f"{base}/dashboard/runs/{joint_id}")
    assert browser.evaluate("location.pathname") == "/dashboard/login"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(SCREENSHOTS / "login.png")
    browser.evaluate(f"document.querySelector('input[name=key]').value = {json.dumps(keys['read'])}")
    browser.submit("button[type=submit]")
    assert browser.evaluate("location.pathname") == f"/dashboard/runs/{joint_id}"  # back where it was asked for
    cookies = browser.send("Network.getCookies", {"urls": [f"{base}/dashboard"]})["cookies"]
    assert [(c["name"], c["httpOnly"], c["sameSite"], c["path"]) for c in cookies] == [
        ("de_dashboard", True, "Strict", "/dashboard")
    ]
    assert keys["read"] not in cookies[0]["value"]

    _visit(browser, f"{base}/dashboard", "overview")
    for run_id, report in ((joint_id, joint), (independent_id, independent)):
        row = f'tr[data-run="{run_id}"]'
        assert _text(browser, f"{row} td[data-metric=groups]") == str(report.groups)
        assert _text(browser, f"{row} td[data-metric=per_question_accuracy]") == score(report.per_question_accuracy)
        assert _text(browser, f"{row} td[data-metric=group_accuracy]") == score(report.group_accuracy)
        assert _text(browser, f"{row} td[data-metric=invalid]") == "0"
        assert _text(browser, f"{row} td[data-metric=rule_violations]") == "0"
    assert browser.evaluate("document.querySelectorAll('svg.chart rect').length") > 0

    _visit(browser, f"{base}/dashboard/runs/{joint_id}", "run")
    for question_id, question in joint.questions.items():
        shown = _text(browser, f'tr[data-question="{question_id}"] td[data-metric=accuracy]')
        assert shown == score(question.accuracy)

    enum_or_boolean = next(q for q, stats in joint.questions.items() if stats.confusion)
    _visit(browser, f"{base}/dashboard/runs/{joint_id}/questions/{quote(enum_or_boolean)}", "question")
    counts = browser.evaluate("[...document.querySelectorAll('#confusion td.cell')].map(c => +c.dataset.count)")
    assert sum(counts) == joint.questions[enum_or_boolean].labelled

    _visit(browser, f"{base}/dashboard/runs/{joint_id}/calibration", "calibration")
    binned = browser.evaluate("[...document.querySelectorAll('#bins td[data-metric=count]')].map(c => +c.textContent)")
    chosen = joint.fixed_by["model"].labelled  # the view leaves rule- and schema-fixed answers out
    assert len(binned) == 10 and sum(binned) == chosen < joint.questions_labelled

    _visit(browser, f"{base}/dashboard/compare?a={joint_id}&b={independent_id}", "compare")
    for question_id in joint.questions:
        a, b = joint.questions[question_id].accuracy, independent.questions[question_id].accuracy
        row = f'#comparison tr[data-question="{question_id}"]'
        assert _text(browser, f"{row} td[data-metric=a]") == score(a)
        assert _text(browser, f"{row} td[data-metric=difference]") == signed(b - a)
    whole = '#comparison tr[data-question="group_accuracy"]'
    assert _text(browser, f"{whole} th[data-metric=a]") == score(joint.group_accuracy)
    assert _text(browser, f"{whole} th[data-metric=b]") == score(independent.group_accuracy)

    _visit(browser, f"{base}/dashboard/decisions/{planted_id}", "decision")
    assert browser.evaluate("window.__pwned") is None
    assert browser.evaluate("document.scripts.length") == 0
    assert browser.evaluate(f"document.querySelector('#answers').innerText.includes({json.dumps(PLANTED)})")
    assert browser.evaluate(f"document.querySelector('#document').textContent.startsWith({json.dumps(PLANTED)})")
    assert browser.evaluate("document.querySelectorAll('#document mark').length") > 0
    _check_evidence(browser, base, keys, planted_id)

    listed = httpx.get(f"{base}/v1/decisions", params={"run": "leases-joint"}, headers=bearer(keys["read"]))
    plain_id = next(item["id"] for item in listed.json()["items"] if item["id"] != planted_id)
    _visit(browser, f"{base}/dashboard/decisions/{plain_id}", "decision-plain")
    _check_evidence(browser, base, keys, plain_id)
    browser.screenshot(SCREENSHOTS / "decision-evidence.png", "#evidence", max_height=600)  # docs/ has a copy

    browser.goto(f"{base}/dashboard/logout")
    assert browser.evaluate("location.pathname") == "/dashboard/login"
    browser.goto(f"{base}/dashboard")
    assert browser.evaluate("location.pathname") == "/dashboard/login"
    assert browser.problems == []
