"""The job's output files: OUT (one decision per line) and OUT.errors.jsonl, and what a rerun finds in them.

Both files are only ever appended to, a whole chunk of lines per write, flushed and fsynced, so a crash
leaves at most a truncated last line, which the next run drops. A rerun of the same command reads
both files to know what is already done.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec


class OutputError(Exception):
    """OUT or its errors file cannot be written, or holds something a resumed job cannot trust."""


def errors_path(out: Path) -> Path:
    """OUT with `.jsonl` replaced by `.errors.jsonl` (appended when OUT has no .jsonl suffix)."""
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(stem + ".errors.jsonl")


def error_key(entry: dict[str, Any]) -> str:
    """The input place an errors-file entry (or a BatchItem's `where`) is about: `line:N` or `path:P`."""
    return f"line:{entry['line']}" if entry.get("line") is not None else f"path:{entry.get('path')}"


@dataclass
class ResumeState:
    """What earlier runs of the same command left done."""

    resumed: bool  # OUT existed: this run continues an earlier one
    done_ids: set[str] = field(default_factory=set)  # ids with a line in OUT
    error_keys: set[str] = field(default_factory=set)  # input places with a line in the errors file


class _Keys(msgspec.Struct):
    """The only fields a rerun needs from OUT and errors-file lines (the rest is not decoded)."""

    id: str | int | None = None
    line: int | None = None
    path: str | None = None


def _complete_lines(path: Path) -> list[_Keys]:
    """The keys of a file's complete lines; a truncated last line (a crash mid-write) is cut off."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise OutputError(f"cannot read {path}: {error.strerror or error}") from None
    end = data.rfind(b"\n") + 1
    if end < len(data):
        try:
            os.truncate(path, end)
        except OSError as error:
            raise OutputError(f"cannot drop the truncated last line of {path}: {error.strerror or error}") from None
    keys = []
    for number, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):
        if not raw.strip():
            continue
        try:
            keys.append(msgspec.json.decode(raw, type=_Keys))
        except msgspec.DecodeError:  # ValidationError included
            raise OutputError(f"{path}:{number} is not a line this job wrote; fix or remove it, then rerun") from None
    return keys


class JobFiles:
    """OUT and its errors file, open for appending. A fresh job (no OUT yet) starts a new errors file."""

    def __init__(self, out: Path):
        self.out = out
        self.errors = errors_path(out)
        self.state = ResumeState(resumed=out.exists())
        if self.state.resumed:
            self.state.done_ids = {str(keys.id) for keys in _complete_lines(out)}
            self.state.error_keys = {
                error_key({"line": keys.line, "path": keys.path}) for keys in _complete_lines(self.errors)
            }
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self._out: IO[bytes] = open(out, "ab")
            self._errors: IO[bytes] = open(self.errors, "ab" if self.state.resumed else "wb")
        except OSError as error:
            raise OutputError(f"cannot write {error.filename or out}: {error.strerror or error}") from None

    def write_results(self, lines: list[dict[str, Any]]) -> None:
        """Append decisions to OUT, durably."""
        _append(self._out, lines)
        self.state.done_ids.update(str(line["id"]) for line in lines)

    def write_errors(self, entries: list[dict[str, Any]]) -> None:
        """Append errors to the errors file, durably, skipping places already listed there."""
        fresh = [entry for entry in entries if error_key(entry) not in self.state.error_keys]
        _append(self._errors, fresh)
        self.state.error_keys.update(error_key(entry) for entry in fresh)

    def close(self) -> None:
        self._out.close()
        self._errors.close()


def _append(stream: IO[bytes], objects: list[dict[str, Any]]) -> None:
    if not objects:
        return
    stream.write(b"".join(msgspec.json.encode(obj) + b"\n" for obj in objects))
    stream.flush()
    os.fsync(stream.fileno())
