"""Parameters no store can hold are refused before any handler runs, the same on SQLite and PostgreSQL."""

from __future__ import annotations

from litestar import Request
from litestar.exceptions import NotFoundException

from ..errors import RequestError
from ..storable import text_problem


async def refuse_unstorable_parameters(request: Request) -> None:
    """A `before_request` hook: a query parameter holding a NUL or a lone surrogate is a 400 naming it; such
    a path parameter names nothing stored, so it is a 404."""
    for name, value in request.query_params.multi_items():
        if text_problem(name):
            raise RequestError("query", f"a parameter name {text_problem(name)}")
        if text_problem(value):
            raise RequestError(name, text_problem(value))
    for name, value in request.path_params.items():
        if isinstance(value, str) and text_problem(value):
            raise NotFoundException(detail=f"{name}: {text_problem(value)}")
