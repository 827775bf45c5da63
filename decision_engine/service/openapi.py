"""OpenAPI for bodies the handlers decode themselves (to give the core's field-level errors)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody


def inline_schema(kind: type) -> dict[str, Any]:
    """The JSON Schema of `kind` with every `$ref` replaced by its definition (our types are not recursive)."""
    schema = msgspec.json.schema(kind)
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)


def json_body(kind: type) -> type[Operation]:
    """An Operation class whose request body is `kind` as JSON."""
    schema = inline_schema(kind)

    @dataclass
    class WithJsonBody(Operation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(
                content={"application/json": OpenAPIMediaType(schema=schema)},
                required=True,
                description=(kind.__doc__ or "").strip().splitlines()[0],
            )

    WithJsonBody.__name__ = f"{kind.__name__}Operation"
    return WithJsonBody
