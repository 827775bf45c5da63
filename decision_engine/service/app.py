"""The app factory: `create_app(settings)` gives a Litestar app with the engine, the store and the batcher."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from litestar import Litestar
from litestar.datastructures import State
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig

from .. import __version__
from ..dashboard.routes import DASHBOARD_ROUTES, template_config
from ..engine import DecisionEngine
from ..store.database import default_database_url
from .admission import InFlightLimit
from .batcher import DecisionBatcher
from .errors import EXCEPTION_HANDLERS
from .routes import ROUTES
from .settings import ServiceSettings
from .store_gateway import StoreGateway


def _build_engine(settings: ServiceSettings) -> DecisionEngine:
    from ..factory import build_engine

    return build_engine(settings.model_path, settings.device, settings.limits, settings.retrieval)


def create_app(settings: ServiceSettings = ServiceSettings(), engine: DecisionEngine | None = None) -> Litestar:
    """The service. With no `engine`, the model named by the settings (default: bundled) loads on start."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        state = app.state
        url = settings.database_url or default_database_url()
        if settings.migrate:
            from ..store.database import create_db_engine
            from ..store.migrate import upgrade

            db = create_db_engine(url)
            try:
                upgrade(db)
            finally:
                db.dispose()
        state.store = StoreGateway(url, settings.store_document_text, settings.key_cache_s)
        state.batcher = DecisionBatcher(engine or partial(_build_engine, settings), settings.batch_max, settings.batch_wait_ms)
        await state.batcher.start()  # with no engine given, the model loads in the batcher's model thread
        state.model_version = getattr(state.batcher.engine.model, "version", "") or ""
        try:
            yield
        finally:
            await state.batcher.stop()
            state.store.close()

    return Litestar(
        route_handlers=[*ROUTES, *DASHBOARD_ROUTES],
        template_config=template_config(),
        lifespan=[lifespan],
        state=State({"settings": settings}),
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[DefineMiddleware(InFlightLimit, limit=settings.max_in_flight)],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="decision-engine",
            version=__version__,
            description="Joint multi-question decisions over one document, stored with their labels.",
            path="/schema",
        ),
    )
