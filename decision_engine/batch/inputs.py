"""The items of a batch job: the lines of a JSON Lines file, or the documents of a folder under one checklist.

Items are read lazily, one at a time, so a large input is never held in memory whole. An item
that cannot be read carries its reason instead of a request; the job writes it to the errors file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ..errors import RequestError
from ..json_input import decode_json
from ..requests_file import request_item
from ..storable import MAX_TAG_CHARS, text_problem
from ..types import DecisionRequest, Value
from ..validation import Limits, request_from_object

DOCUMENT_SUFFIXES = (".txt", ".md", ".json")  # .json files hold {"text": ..., "title": ...}
MAX_ID_CHARS = MAX_TAG_CHARS  # the store's external_id column


class InputError(Exception):
    """The input as a whole cannot be read (a missing file or folder, a bad checklist): nothing can be decided."""


@dataclass
class BatchItem:
    """One request of the job, or the reason it cannot be decided."""

    id: str | None  # the input's id, else the line number or relative path; None when not known
    request: DecisionRequest | None
    labels: dict[str, Value] | None = None
    error: str | None = None
    line: int | None = None  # 1-based line of a JSON Lines input
    path: str | None = None  # path of a document, relative to the folder, with / separators

    @property
    def where(self) -> dict[str, Any]:
        """Where the item came from, as the errors file names it."""
        return {"line": self.line} if self.line is not None else {"path": self.path}


def count_lines(path: Path) -> int:
    """Non-blank lines of a file: the number of items a JSON Lines input holds."""
    with open(path, "rb") as stream:
        return sum(1 for raw in stream if raw.strip())


def read_lines(path: Path, limits: Limits = Limits()) -> Iterator[BatchItem]:
    """Every non-blank line of a JSON Lines file (samples format: optional `id` and `labels`), in order."""
    try:
        stream = open(path, "rb")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    with stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            yield _line_item(raw, number, limits)


def _line_item(raw: bytes, number: int, limits: Limits) -> BatchItem:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return BatchItem(None, None, error=f"request: not valid UTF-8 (byte {error.start})", line=number)
    try:
        obj = decode_json(raw)
    except RequestError as error:
        return BatchItem(None, None, error=str(error), line=number)
    except msgspec.DecodeError as error:
        return BatchItem(None, None, error=f"request: not valid JSON: {error}", line=number)
    raw_id = obj.get("id") if isinstance(obj, dict) else None
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
        return BatchItem(None, None, error="id: must be a string or an integer", line=number)
    read = request_item(obj, number, limits)
    item_id = str(raw_id) if raw_id is not None else read.id
    return BatchItem(item_id, read.request, read.labels, None if read.error is None else str(read.error), line=number)


def load_checklist(path: Path, limits: Limits = Limits()) -> dict[str, Any]:
    """The checklist: a request without its document (`questions`, optional `rules`, `mode`, `options`).

    Raises InputError naming the field when the questions or rules themselves are invalid.
    """
    try:
        obj = decode_json(Path(path).read_bytes())
    except OSError as error:
        raise InputError(f"cannot read the checklist {path}: {error.strerror or error}") from None
    except RequestError as error:
        raise InputError(f"checklist {path}: {error.problem}") from None
    except msgspec.DecodeError as error:
        raise InputError(f"checklist {path}: not valid JSON: {error}") from None
    if not isinstance(obj, dict):
        raise InputError(f"checklist {path}: expected a JSON object with questions")
    if "document" in obj:
        raise InputError(f"checklist {path}: document: a checklist has none; it applies to every document")
    try:
        request_from_object({**obj, "document": {"text": "checklist"}}, limits)
    except RequestError as error:
        raise InputError(f"checklist {path}: {error}") from None
    return obj


def document_paths(folder: Path) -> list[Path]:
    """The .txt, .md and .json files under `folder`, recursively, sorted by relative path; hidden
    files and folders (names starting with a dot) are left out."""
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith(".") and name.lower().endswith(DOCUMENT_SUFFIXES):
                found.append(Path(root, name))
    return sorted(found, key=lambda path: path.relative_to(folder).as_posix())


def read_documents(
    folder: Path, paths: Iterable[Path], checklist: dict[str, Any], limits: Limits = Limits()
) -> Iterator[BatchItem]:
    """One item per document: the checklist's questions and rules asked about it; its id is its relative path."""
    for path in paths:
        relative = path.relative_to(folder).as_posix()
        try:
            text, title = read_document(path)
            document = {"text": text, "id": relative, **({"title": title} if title else {})}
            request = request_from_object({**checklist, "document": document}, limits)
        except RequestError as error:
            yield BatchItem(relative, None, error=str(error), path=relative)
            continue
        yield BatchItem(relative, request, path=relative)


def read_document(path: Path) -> tuple[str, str | None]:
    """(text, title) of a UTF-8 .txt or .md file, or of a .json file holding {"text": ..., "title": ...}."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise RequestError("document", f"cannot read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise RequestError("document", f"not valid UTF-8 (byte {error.start})") from None
    if path.suffix.lower() != ".json":
        return text, None
    try:
        obj = decode_json(text, field="document")
    except msgspec.DecodeError as error:
        raise RequestError("document", f"not valid JSON: {error}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        raise RequestError("document.text", 'a .json document is an object {"text": "...", "title": "..."}')
    title = obj.get("title")
    return obj["text"], title if isinstance(title, str) else None


def check_ids(items: Iterable[BatchItem]) -> Iterator[BatchItem]:
    """Mark the second and later items with an id already seen, and ids too long for the store, as errors."""
    first: dict[str, dict[str, Any]] = {}
    for item in items:
        if item.id is not None:
            if item.error is None and item.id in first:
                seen = ", ".join(f"{k} {v}" for k, v in first[item.id].items())
                item.error = f"id: duplicate id {item.id!r} (first at {seen})"
            elif item.error is None and len(item.id) > MAX_ID_CHARS:
                item.error = f"id: longer than {MAX_ID_CHARS} characters"
            elif item.error is None and text_problem(item.id):
                item.error = f"id: {text_problem(item.id)}"
            first.setdefault(item.id, item.where)
        yield item
