"""Reading request files: one JSON request, or JSON Lines with one request per line.

Each line may carry an `"id"` and gold `"labels"`; other top-level keys are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .errors import RequestError
from .field_errors import field_error
from .json_input import decode_json
from .types import DecisionRequest, Value
from .validation import Limits, request_from_object


class _Extras(msgspec.Struct):
    id: str | int | None = None
    labels: dict[str, Value] | None = None


@dataclass
class RequestItem:
    """One request read from a file, or the reason it could not be read."""

    line: int  # 1-based line number (1 for a single-request file)
    id: str
    request: DecisionRequest | None
    labels: dict[str, Value] | None
    error: RequestError | None = None


def request_item(obj: Any, line: int, limits: Limits = Limits()) -> RequestItem:
    """One decoded JSON value as a RequestItem: its request, `id` (default: the line number) and labels."""
    try:
        extras = msgspec.convert(obj, type=_Extras) if isinstance(obj, dict) else _Extras()
    except msgspec.ValidationError as error:
        return RequestItem(line, str(line), None, None, field_error(error))
    item_id = str(extras.id) if extras.id is not None else str(line)
    try:
        return RequestItem(line, item_id, request_from_object(obj, limits), extras.labels)
    except RequestError as error:
        return RequestItem(line, item_id, None, extras.labels, error)


def read_requests(path: Path, limits: Limits = Limits()) -> Iterator[RequestItem]:
    """Yield every request in a `.json` (one) or JSON Lines file, in order; bad ones carry their error."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        yield RequestItem(1, "1", None, None, RequestError("request", f"file is not valid UTF-8 (byte {error.start})"))
        return
    try:
        whole = decode_json(text)
    except (RequestError, msgspec.DecodeError):  # JSON Lines, or too deep: each line is read on its own
        whole = None
    if isinstance(whole, dict):
        yield request_item(whole, 1, limits)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = decode_json(line)
        except RequestError as error:
            yield RequestItem(number, str(number), None, None, error)
            continue
        except msgspec.DecodeError as error:
            yield RequestItem(number, str(number), None, None, RequestError("request", f"not valid JSON: {error}"))
            continue
        yield request_item(obj, number, limits)
