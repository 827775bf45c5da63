"""OpenAPI the handlers cannot declare by their signatures: bodies they decode themselves (to give the
core's field-level errors), headers read and sent by hand, the error responses each operation can give."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import (
    Components, OpenAPIHeader, OpenAPIMediaType, OpenAPIType, Operation, Parameter, RequestBody, Schema, SecurityScheme,
)

from .wire import ErrorBody

BEARER = "bearer"  # the security scheme's name; each operation lists the one scope it needs under it
ERRORS = {
    400: "A bad request, naming the field",
    401: "No API key, or one that is unknown, revoked or expired; see WWW-Authenticate",
    403: "The key's scope does not allow this operation",
    404: "No decision with this id",
    409: "The Idempotency-Key was used for a request that differs in some field",
    413: "The body is larger than the service accepts",
    415: "The body is not sent as application/json",
    429: "Too many requests in flight; retry after Retry-After seconds",
    503: "The store cannot be reached, or the request ran past its time budget; see Retry-After",
}
IDEMPOTENCY_KEY = Parameter(
    name="Idempotency-Key",
    param_in="header",
    required=False,
    schema=Schema(type=OpenAPIType.STRING, pattern="^[!-~]{1,200}$"),
    description="1 to 200 visible ASCII characters; a retry with the same key and the same body returns the "
    "first result (200, Idempotent-Replayed: true), with any other body 409.",
)
LOCATION = OpenAPIHeader(schema=Schema(type=OpenAPIType.STRING), required=True, description="The stored decision")
REPLAYED = OpenAPIHeader(
    schema=Schema(type=OpenAPIType.STRING, enum=["true"]), required=True, description="This is an idempotent replay"
)


def retry_after(required: bool) -> OpenAPIHeader:
    """The Retry-After header: sent with every 429, with most 503s."""
    return OpenAPIHeader(
        schema=Schema(type=OpenAPIType.STRING, pattern="^[0-9]+$"), required=required, description="Seconds to wait"
    )


def security_components() -> Components:
    """The bearer scheme of the service's API keys."""
    return Components(
        security_schemes={
            BEARER: SecurityScheme(
                type="http",
                scheme="bearer",
                description="An API key from `decision-engine keys create --scope SCOPE`, sent as "
                "`Authorization: Bearer dek_...`. Each operation names the scope it needs; admin may do anything.",
            )
        }
    )


def errors(*statuses: int) -> dict[int, ResponseSpec]:
    """Responses for these error statuses, each with the ErrorBody every error is sent as."""
    return {status: ResponseSpec(ErrorBody, description=ERRORS[status], generate_examples=False) for status in statuses}


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


def documented(
    body: type | None = None,
    headers: Sequence[Parameter] = (),
    response_headers: Mapping[int, Mapping[str, OpenAPIHeader]] | None = None,
) -> type[Operation]:
    """An Operation class adding what the handler reads or sends by hand: a JSON `body` of that type, request
    `headers`, and headers of given responses ({status: {name: header}}). Every error response in the
    operation's responses may carry Retry-After where it can (429, 503)."""
    schema = None if body is None else inline_schema(body)
    extra = {429: {"Retry-After": retry_after(True)}, 503: {"Retry-After": retry_after(False)}}
    extra |= dict(response_headers or {})

    @dataclass
    class Documented(Operation):
        def __post_init__(self) -> None:
            if schema is not None:
                self.request_body = RequestBody(
                    content={"application/json": OpenAPIMediaType(schema=schema)},
                    required=True,
                    description=(body.__doc__ or "").strip().splitlines()[0],
                )
            if headers:
                self.parameters = [*(self.parameters or []), *headers]
            for status, named in extra.items():
                response = (self.responses or {}).get(str(status))
                if response is not None and not isinstance(response, dict):
                    response.headers = {**(response.headers or {}), **named}

    Documented.__name__ = f"{body.__name__ if body else 'Plain'}Operation"
    return Documented
