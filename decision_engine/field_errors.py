"""msgspec's validation errors as RequestErrors naming the field they point at."""

from __future__ import annotations

import re

import msgspec

from .errors import RequestError

_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)


def field_error(error: msgspec.ValidationError, default: str = "request") -> RequestError:
    """The error as a RequestError: a message ending "- at `$.labels.a`" names the field `labels.a`, and the
    problem is the message without that ending. With no path (the top level is at fault) the field is `default`.
    """
    match = _AT.match(str(error))
    path = (match["path"] or "").lstrip(".")
    return RequestError(path or default, match["problem"])
