"""The app factory: `create_app(settings)` gives a Litestar app with the engine, the store and the batcher."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from litestar import Litestar
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig

from .. import __version__
from ..dashboard.routes import DASHBOARD_ROUTES, template_config
from ..engine import DecisionEngine
from ..store.database import default_database_url
from ..store.opening import open_store
from .admission import InFlightLimit
from .batcher import DecisionBatcher
from .docs_page import docs_assets_router, docs_plugins
from .errors import EXCEPTION_HANDLERS
from .openapi import security_components
from .parameters import refuse_unstorable_parameters
from .resources import ServiceResources
from .routes import ROUTES
from .settings import ServiceSettings
from .store_gateway import StoreGateway


def _build_engine(settings: ServiceSettings) -> DecisionEngine:
    from ..factory import build_engine

    return build_engine(settings.engine)


def create_app(settings: ServiceSettings = ServiceSettings(), engine: DecisionEngine | None = None) -> Litestar:
    """The service. With no `engine`, the model named by the settings (default: bundled) loads on start."""
    resources = ServiceResources(settings)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        url = settings.database_url or default_database_url()
        if settings.migrate:
            open_store(url, migrate=True).dispose()
        store = StoreGateway(url, settings.store_document_text, settings.key_cache_s)
        batcher = DecisionBatcher(
            engine or partial(_build_engine, settings), settings.batch_max, settings.batch_wait_ms,
            settings.max_queued_decisions,
        )
        try:
            await batcher.start()  # with no engine given, the model loads in the batcher's model thread
            resources.store, resources.batcher = store, batcher
            resources.model_version = batcher.engine.model.version
            yield
        finally:
            await batcher.stop()
            store.close()

    return Litestar(
        route_handlers=[*ROUTES, *DASHBOARD_ROUTES, *docs_assets_router()],
        dependencies={
            "settings": Provide(resources.provide_settings, sync_to_thread=False),
            "store": Provide(resources.provide_store, sync_to_thread=False),
            "batcher": Provide(resources.provide_batcher, sync_to_thread=False),
            "model_version": Provide(resources.provide_model_version, sync_to_thread=False),
            "dashboard_sessions": Provide(resources.provide_dashboard_sessions, sync_to_thread=False),
        },
        template_config=template_config(),
        lifespan=[lifespan],
        state=resources.state(),
        exception_handlers=EXCEPTION_HANDLERS,
        before_request=refuse_unstorable_parameters,
        middleware=[DefineMiddleware(InFlightLimit, limit=settings.max_in_flight)],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="decision-engine",
            version=__version__,
            description="Joint multi-question decisions over one document, stored with their labels.",
            path="/schema",
            components=security_components(),
            render_plugins=docs_plugins(),
        ),
    )
