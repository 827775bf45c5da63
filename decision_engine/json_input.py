"""Decoding JSON input with a cap on nesting: deep input is refused by name, never a RecursionError."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from .errors import RequestError

MAX_DEPTH = 64  # arrays and objects inside each other; a request needs about 5

_ESCAPE = re.compile(rb"\\.", re.S)  # a backslash and the character it escapes (only inside strings)
_STRING = re.compile(rb'"[^"]*"')  # a string, once its escapes are gone
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_STEP = np.full(256, -1, dtype=np.int32)  # each closing bracket steps out, each opening one in
_STEP[list(b"[{")] = 1


def _raw(data: bytes | str) -> bytes:
    return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)


def nesting_depth(data: bytes | str) -> int:
    """How deeply arrays and objects nest in the JSON text `data` (0 for a scalar); linear, without recursion."""
    raw = _raw(data)
    structure = _STRING.sub(b"", _ESCAPE.sub(b"", raw).translate(None, _NOT_STRUCTURE)).replace(b'"', b"")
    if not structure:
        return 0
    return int(np.cumsum(_STEP[np.frombuffer(structure, dtype=np.uint8)]).max())


def check_depth(data: bytes | str, field: str = "request") -> None:
    """Raise RequestError naming `field` when `data` nests deeper than MAX_DEPTH."""
    raw = _raw(data)
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:  # too few brackets to nest too deeply
        return
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        raise RequestError(field, f"JSON nested {depth} levels deep; the limit is {MAX_DEPTH}")


def decode_json(data: bytes | str, kind: Any = Any, field: str = "request") -> Any:
    """`data` decoded as `kind` after the depth check; msgspec's DecodeError (and ValidationError) pass
    through, for the caller to name the field."""
    check_depth(data, field)
    try:
        return msgspec.json.decode(data) if kind is Any else msgspec.json.decode(data, type=kind)
    except RecursionError:  # cannot happen below MAX_DEPTH; kept so that no input reaches a traceback
        raise RequestError(field, f"JSON nested too deeply; the limit is {MAX_DEPTH}") from None
