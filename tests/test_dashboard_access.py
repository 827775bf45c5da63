"""Dashboard sign-in over the real app: redirects, the session cookie, scopes, revocation, logout, --no-auth."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from litestar.testing import TestClient

from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.keys import authenticate, revoke_key
from decision_engine.store.recording import record_decision
from service_helpers import build_app, migrated_keys
from store_fixtures import VALUES, make_request, make_response


@pytest.fixture
def store(tmp_path):
    """A migrated SQLite store with one key per scope and one stored decision: (url, keys, decision id)."""
    url = f"sqlite:///{tmp_path / 'decisions.sqlite3'}"
    keys = migrated_keys(url)
    engine = create_db_engine(url)
    with session_factory(engine)() as session:
        decision_id, _ = record_decision(session, make_request(), make_response(VALUES), run="nightly")
    engine.dispose()
    return url, keys, decision_id


def _pages(decision_id: str) -> list[str]:
    return [
        "/dashboard",
        "/dashboard/runs/1",
        "/dashboard/runs/1/questions/q1",
        "/dashboard/runs/1/calibration",
        "/dashboard/compare?a=1&b=1",
        f"/dashboard/decisions/{decision_id}",
    ]


def _sign_in(client, key: str, page: str = "/dashboard"):
    return client.post("/dashboard/login", data={"key": key, "next": page}, follow_redirects=False)


def test_pages_need_a_session(store, tiny_backend):
    url, keys, decision_id = store
    with TestClient(build_app(url, tiny_backend)) as client:
        for page in _pages(decision_id):
            response = client.get(page, follow_redirects=False)
            assert response.status_code == 303, page
            target = urlsplit(response.headers["location"])
            assert target.path == "/dashboard/login"
            assert parse_qs(target.query)["next"] == [page]
        # an API key header is not a dashboard session
        response = client.get("/dashboard", headers={"Authorization": f"Bearer {keys['read']}"}, follow_redirects=False)
        assert response.status_code == 303
        form = client.get("/dashboard/login")
        assert form.status_code == 200 and 'name="key"' in form.text and 'method="post"' in form.text


def test_sign_in_sets_a_session_cookie_not_the_key(store, tiny_backend):
    url, keys, decision_id = store
    with TestClient(build_app(url, tiny_backend)) as client:
        response = _sign_in(client, keys["read"], "/dashboard/compare")
        assert response.status_code == 303 and response.headers["location"] == "/dashboard/compare"
        cookie = response.headers["set-cookie"]
        attributes = {part.strip().split("=")[0].lower(): part for part in cookie.split(";")}
        assert "httponly" in attributes and attributes["samesite"].strip().lower() == "samesite=strict"
        assert attributes["path"].strip().lower() == "path=/dashboard"
        assert keys["read"] not in cookie
        for page in _pages(decision_id):
            shown = client.get(page, follow_redirects=False)
            assert shown.status_code == 200, page
            assert shown.headers["cache-control"] == "no-store"
            assert "default-src 'none'" in shown.headers["content-security-policy"]
        assert "Sign out" in client.get("/dashboard").text
        assert client.get("/dashboard/logout", follow_redirects=False).status_code == 303
        assert client.get("/dashboard", follow_redirects=False).status_code == 303


@pytest.mark.parametrize("scope", ["admin", "read"])
def test_read_and_admin_keys_may_sign_in(store, tiny_backend, scope):
    url, keys, _ = store
    with TestClient(build_app(url, tiny_backend)) as client:
        assert _sign_in(client, keys[scope]).status_code == 303
        assert client.get("/dashboard", follow_redirects=False).status_code == 200


def test_wrong_keys_and_foreign_redirects_are_refused(store, tiny_backend):
    url, keys, _ = store
    with TestClient(build_app(url, tiny_backend)) as client:
        wrong = _sign_in(client, "dek_not-a-key")
        assert wrong.status_code == 401 and "unknown or revoked key" in wrong.text and "set-cookie" not in wrong.headers
        label = _sign_in(client, keys["label"])
        assert label.status_code == 403 and "needs a read or admin key" in label.text
        for foreign in ("https://elsewhere.example/", "//elsewhere.example/dashboard", "/v1/decisions"):
            assert _sign_in(client, keys["read"], foreign).headers["location"] == "/dashboard"


def test_revoking_the_key_ends_its_session(store, tiny_backend):
    url, keys, _ = store
    with TestClient(build_app(url, tiny_backend)) as client:
        _sign_in(client, keys["read"])
        assert client.get("/dashboard", follow_redirects=False).status_code == 200
        engine = create_db_engine(url)
        with session_factory(engine)() as session:
            revoke_key(session, authenticate(session, keys["read"]).id)
        engine.dispose()
        assert client.get("/dashboard", follow_redirects=False).status_code == 303


def test_unknown_pages_are_html_404s(store, tiny_backend):
    url, keys, _ = store
    with TestClient(build_app(url, tiny_backend)) as client:
        _sign_in(client, keys["read"])
        for page in ("/dashboard/runs/99", "/dashboard/runs/1/questions/q9", "/dashboard/decisions/" + "0" * 32):
            response = client.get(page)
            assert response.status_code == 404 and response.headers["content-type"].startswith("text/html"), page


def test_no_auth_opens_the_pages(store, tiny_backend):
    url, _, decision_id = store
    with TestClient(build_app(url, tiny_backend, auth=False)) as client:
        for page in _pages(decision_id):
            assert client.get(page, follow_redirects=False).status_code == 200, page
        assert client.get("/dashboard/login", follow_redirects=False).headers["location"] == "/dashboard"
        assert "Sign out" not in client.get("/dashboard").text
