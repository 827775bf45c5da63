"""Text every store can hold: SQLite and PostgreSQL alike refuse NUL characters or lone surrogates,
so such text is refused by name before any work is done on it."""

from __future__ import annotations

from .errors import RequestError

MAX_TAG_CHARS = 200  # the store's run, dataset and external id columns


def text_problem(text: str) -> str | None:
    """Why a store cannot hold `text`, or None when it can."""
    nul = text.find("\x00")
    if nul >= 0:
        return f"holds a NUL character (U+0000) at index {nul}, which a store cannot keep"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            return f"holds U+{ord(text[error.start]):04X} at index {error.start}, a lone surrogate, not valid Unicode"
    return None


def tag_problem(tag: str) -> str | None:
    """Why `tag` cannot name a run, dataset or item in the store, or None when it can."""
    if not 1 <= len(tag) <= MAX_TAG_CHARS:
        return f"must be 1 to {MAX_TAG_CHARS} characters, not {len(tag)}"
    return text_problem(tag)


def check_text(field: str, text: str | None) -> None:
    """Raise RequestError naming `field` when a store cannot hold `text` (None passes)."""
    problem = None if text is None else text_problem(text)
    if problem:
        raise RequestError(field, problem)


def check_tag(field: str, tag: str | None) -> None:
    """Raise RequestError naming `field` when `tag` cannot be stored as a tag (None passes)."""
    problem = None if tag is None else tag_problem(tag)
    if problem:
        raise RequestError(field, problem)
