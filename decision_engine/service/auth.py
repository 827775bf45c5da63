"""API-key guards: `Authorization: Bearer <key>`, one scope per route, admin covers all."""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from ..store.keys import allows
from .openapi import BEARER
from .resources import resources_of


def require(scope: str):
    """A guard letting through keys whose scope covers `scope` (every request when auth is off)."""

    async def guard(connection: ASGIConnection, _: BaseRouteHandler) -> None:
        resources = resources_of(connection.app)
        if not resources.settings.auth:
            connection.state.api_key_id = None
            return
        header = connection.headers.get("authorization", "")
        kind, _, key = header.partition(" ")
        if kind.lower() != "bearer" or not key.strip():
            raise NotAuthorizedException(
                detail="missing API key: send 'Authorization: Bearer <key>'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        identity = await resources.provide_store().authenticate(key.strip())
        if identity is None:
            raise NotAuthorizedException(
                detail="unknown, revoked or expired API key", headers={"WWW-Authenticate": "Bearer"}
            )
        if not allows(identity.scope, scope):
            raise PermissionDeniedException(detail=f"this key has scope {identity.scope!r}; this call needs {scope!r}")
        connection.state.api_key_id = identity.id

    guard.__name__ = f"require_{scope}"
    return guard


def protected(scope: str) -> dict:
    """Route decorator arguments for an operation that needs `scope`: its guard, and that scope declared
    in the OpenAPI under the bearer scheme, so the two cannot drift apart."""
    return {"guards": [require(scope)], "security": [{BEARER: [scope]}]}
