"""The dashboard's routes under /dashboard: sign-in, then pages that render their context dicts."""

from __future__ import annotations

import re
from pathlib import Path

from litestar import Request, Router, get, post
from litestar.connection import ASGIConnection
from litestar.datastructures import ResponseHeader
from litestar.handlers.base import BaseRouteHandler
from litestar.params import FromPath, FromQuery
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.template.config import TemplateConfig

from ..service.resources import SessionsDep, SettingsDep, StoreDep, resources_of
from ..service.store_gateway import StoreGateway
from ..store.keys import allows, scope_of
from ..store.recording import DecisionNotFound
from . import context
from .formatting import FILTERS
from .session import COOKIE, DashboardSessions, cleared_cookie, session_cookie

TEMPLATES = Path(__file__).parent / "templates"
HOME = "/dashboard"
SIGN_IN = "/dashboard/login"
# No script, font or network source is needed: the pages are HTML, inline CSS and inline SVG.
HEADERS = [
    ResponseHeader(name="Cache-Control", value="no-store"),
    ResponseHeader(
        name="Content-Security-Policy",
        value="default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'",
    ),
    ResponseHeader(name="X-Content-Type-Options", value="nosniff"),
    ResponseHeader(name="Referrer-Policy", value="same-origin"),
]
_LOCAL_PAGE = re.compile(r"/dashboard(/[\x21-\x7e]*)?(\?[\x21-\x7e]*)?")
_RUN_ID = re.compile(r"[0-9]{1,10}")  # ASCII digits only: int() also reads "²" and "١"
_DECISION_ID = re.compile(r"[0-9a-f]{32}")
MAX_ROW_ID = 2**31 - 1  # the store's integer ids are 32-bit on PostgreSQL: a larger one names nothing


def template_config() -> TemplateConfig:
    """Jinja2 over the dashboard's templates, autoescaping everything, with the number filters."""
    return TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine, engine_callback=_add_filters)


def _add_filters(engine: JinjaTemplateEngine) -> None:
    engine.engine.filters.update(FILTERS)


class SignInRequired(Exception):
    """A page was asked for without a live dashboard session."""

    def __init__(self, page: str):
        super().__init__(page)
        self.page = page


def _local(page: object) -> str:
    """`page` when it is a dashboard address on this server, else the overview: no open redirects."""
    return page if isinstance(page, str) and _LOCAL_PAGE.fullmatch(page) and "\\" not in page else HOME


def _https(connection: ASGIConnection) -> bool:
    return connection.url.scheme == "https"


async def _signed_in_key(connection: ASGIConnection, store: StoreGateway, sessions: DashboardSessions) -> int | None:
    """The key id of the request's live session whose key is still unrevoked and may read."""
    session_id = connection.cookies.get(COOKIE)
    key_id = sessions.key_id(session_id)
    if key_id is None:
        return None
    scope = await store.query(scope_of, key_id)
    if scope is None or not allows(scope, "read"):
        sessions.close(session_id)
        return None
    return key_id


async def signed_in(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard: with auth on, only a signed-in session with a read (or admin) key sees the pages."""
    connection.state.dashboard_key_id = None
    resources = resources_of(connection.app)  # guards are not given dependencies
    if not resources.settings.auth:
        return
    key_id = await _signed_in_key(connection, resources.provide_store(), resources.dashboard_sessions)
    if key_id is None:
        query = connection.url.query
        raise SignInRequired(connection.url.path + (f"?{query}" if query else ""))
    connection.state.dashboard_key_id = key_id


def _render(request: Request, auth: bool, template: str, page: dict, status_code: int = 200) -> Template:
    """The page's context plus what the frame needs: whether auth is on and who is signed in."""
    frame = {"auth": auth, "key_id": getattr(request.state, "dashboard_key_id", None)}
    return Template(template_name=template, context={**page, **frame}, status_code=status_code)


@get("/", name="dashboard")
async def overview_page(request: Request, settings: SettingsDep, store: StoreDep) -> Template:
    return _render(request, settings.auth, "overview.html.j2", await store.query(context.overview))


def _stored_run(run_id: int) -> int:
    """`run_id` if a store could hold it; PageNotFound otherwise (a 23-digit id overflows SQLite's integers)."""
    if not 1 <= run_id <= MAX_ROW_ID:
        raise context.PageNotFound(f"no run with id {run_id}")
    return run_id


@get("/runs/{run_id:int}")
async def run_page(run_id: FromPath[int], request: Request, settings: SettingsDep, store: StoreDep) -> Template:
    return _render(request, settings.auth, "run.html.j2", await store.query(context.run_page, _stored_run(run_id)))


@get("/runs/{run_id:int}/questions/{question_id:str}")
async def question_page(
    run_id: FromPath[int], question_id: FromPath[str], request: Request, settings: SettingsDep, store: StoreDep
) -> Template:
    page = await store.query(context.question_page, _stored_run(run_id), question_id)
    return _render(request, settings.auth, "question.html.j2", page)


@get("/runs/{run_id:int}/calibration")
async def calibration_page(run_id: FromPath[int], request: Request, settings: SettingsDep, store: StoreDep) -> Template:
    page = await store.query(context.calibration_page, _stored_run(run_id))
    return _render(request, settings.auth, "calibration.html.j2", page)


def _run_id(value: str | None) -> int | None:
    """A run chosen by id in a query, None for anything that cannot be a stored run's id."""
    if not value or not _RUN_ID.fullmatch(value) or not 1 <= int(value) <= MAX_ROW_ID:
        return None
    return int(value)


@get("/compare")
async def compare_page(
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    a: FromQuery[str | None] = None,
    b: FromQuery[str | None] = None,
) -> Template:
    page = await store.query(context.compare_page, _run_id(a), _run_id(b))
    return _render(request, settings.auth, "compare.html.j2", page)


@get("/decisions/{decision_id:str}")
async def decision_page(
    decision_id: FromPath[str], request: Request, settings: SettingsDep, store: StoreDep
) -> Template:
    if not _DECISION_ID.fullmatch(decision_id):
        raise DecisionNotFound(decision_id)
    return _render(request, settings.auth, "decision.html.j2", await store.query(context.decision_page, decision_id))


def _to_sign_in(_: Request, error: SignInRequired) -> Redirect:
    return Redirect(SIGN_IN, query_params={"next": error.page}, status_code=303)


def _not_found(request: Request, error: Exception) -> Template:
    problem = f"no decision with id {error}" if isinstance(error, DecisionNotFound) else str(error)
    auth = resources_of(request.app).settings.auth  # exception handlers are not given dependencies
    return _render(request, auth, "problem.html.j2", {"title": "Not found", "problem": problem}, status_code=404)


@get("/login")
async def sign_in_page(
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    dashboard_sessions: SessionsDep,
    next: FromQuery[str | None] = None,
) -> Template | Redirect:
    page = _local(next)
    if not settings.auth or await _signed_in_key(request, store, dashboard_sessions) is not None:
        return Redirect(page, status_code=303)
    return _render(request, settings.auth, "login.html.j2", {"title": "Sign in", "next": page, "problem": None})


@post("/login", status_code=303)
async def sign_in(
    request: Request, settings: SettingsDep, store: StoreDep, dashboard_sessions: SessionsDep
) -> Template | Redirect:
    """The only POST: checks the key, opens a session and sets its cookie (the key itself is not kept)."""
    form = await request.form()
    page = _local(form.get("next"))
    if not settings.auth:
        return Redirect(page, status_code=303)
    key = str(form.get("key") or "").strip()
    identity = await store.authenticate(key) if key else None
    if identity is None or not allows(identity.scope, "read"):
        problem = (
            "unknown or revoked key"
            if identity is None
            else f"this key has scope {identity.scope!r}; the dashboard needs a read or admin key"
        )
        status = 401 if identity is None else 403
        login = {"title": "Sign in", "next": page, "problem": problem}
        return _render(request, settings.auth, "login.html.j2", login, status)
    session_id = dashboard_sessions.open(identity.id)
    return Redirect(page, status_code=303, cookies=[session_cookie(session_id, _https(request))])


@get("/logout")
async def sign_out(request: Request, dashboard_sessions: SessionsDep) -> Redirect:
    dashboard_sessions.close(request.cookies.get(COOKIE))
    return Redirect(SIGN_IN, status_code=303, cookies=[cleared_cookie(_https(request))])


PAGES = Router(
    path=HOME,
    route_handlers=[overview_page, run_page, question_page, calibration_page, compare_page, decision_page],
    guards=[signed_in],
    exception_handlers={
        SignInRequired: _to_sign_in,
        context.PageNotFound: _not_found,
        DecisionNotFound: _not_found,
    },
    response_headers=HEADERS,
    include_in_schema=False,
)
SIGN_IN_PAGES = Router(
    path=HOME, route_handlers=[sign_in_page, sign_in, sign_out], response_headers=HEADERS, include_in_schema=False
)
DASHBOARD_ROUTES = [PAGES, SIGN_IN_PAGES]
