"""The `/schema` page: Swagger UI from the files the `swagger-ui-py` package ships, so it works offline.

Without that optional package (`pip install 'decision-engine[docs]'`) the page says how to get it and
links the OpenAPI document itself; nothing is ever loaded from a CDN.
"""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path
from typing import Any

from litestar import Request, Router
from litestar.openapi.plugins import OpenAPIRenderPlugin, SwaggerRenderPlugin
from litestar.static_files import create_static_files_router

ASSETS = "/schema/assets"  # where the page's script, styles and icon are served from


def swagger_assets() -> Path | None:
    """The folder of Swagger UI files inside the installed `swagger-ui-py`, or None when it is absent.
    Found without importing the package (its import pulls in its own web-framework glue)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


class _NoAssetsPage(OpenAPIRenderPlugin):
    """A plain page for when the Swagger UI files are not installed."""

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        title = html.escape(openapi_schema["info"]["title"])
        return (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<h1>{title}</h1><p>The interactive page needs the optional package swagger-ui-py: "
            "<code>pip install 'decision-engine[docs]'</code>.</p>"
            "<p>The API itself: <a href='/schema/openapi.json'>/schema/openapi.json</a>.</p></body></html>"
        ).encode()


def docs_plugins() -> list[OpenAPIRenderPlugin]:
    """The render plugin of the `/schema` page (also at `/schema/swagger`)."""
    if swagger_assets() is None:
        return [_NoAssetsPage(path=["/", "/swagger"], favicon="")]
    return [
        SwaggerRenderPlugin(
            js_url=f"{ASSETS}/swagger-ui-bundle.js",
            css_url=f"{ASSETS}/swagger-ui.css",
            standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
            favicon=f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>",
            path=["/", "/swagger"],
        )
    ]


def docs_assets_router() -> list[Router]:
    """The route serving the Swagger UI files, when they are installed."""
    folder = swagger_assets()
    if folder is None:
        return []
    return [create_static_files_router(path=ASSETS, directories=[folder], include_in_schema=False, name="docs-assets")]
