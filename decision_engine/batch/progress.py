"""Progress of a batch job on stderr: a live bar on a terminal, plain periodic lines in a log."""

from __future__ import annotations

import sys
import time
from typing import TextIO

LOG_EVERY_S = 5.0  # seconds between progress lines when stderr is not a terminal


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Counts items as they finish and shows done/total, items/s and an ETA.

    The rate counts only the items this run worked on (decided or failed), not those skipped
    as already done, so a resumed job's ETA is not flattered by its quick start.
    """

    def __init__(self, total: int, stream: TextIO | None = None, every_s: float = LOG_EVERY_S, live: bool | None = None):
        self.total = total
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.decided = self.skipped = self.errors = 0
        self.started = time.monotonic()
        self._last_line = self.started
        self._shown_done: int | None = None  # `done` at the last plain line
        self._bar = None
        isatty = getattr(self.stream, "isatty", lambda: False)
        if live if live is not None else isatty():
            self._bar = _live_bar(self.stream, total)

    @property
    def done(self) -> int:
        return self.decided + self.skipped + self.errors

    def rate(self) -> float:
        """Items per second over the items this run worked on."""
        elapsed = time.monotonic() - self.started
        return (self.decided + self.errors) / elapsed if elapsed > 0 else 0.0

    def eta_s(self) -> float | None:
        rate = self.rate()
        return (self.total - self.done) / rate if rate > 0 else None

    def status(self) -> str:
        eta = self.eta_s()
        return (
            f"{self.done}/{self.total} items, {self.rate():.2f} items/s, "
            f"ETA {_duration(eta) if eta is not None else '?'}"
        )

    def advance(self, decided: int = 0, skipped: int = 0, errors: int = 0) -> None:
        self.decided += decided
        self.skipped += skipped
        self.errors += errors
        if self._bar is not None:
            self._bar.show(self)
            return
        now = time.monotonic()
        if now - self._last_line >= self.every_s:
            self._last_line = now
            self._line()

    def _line(self) -> None:
        self._shown_done = self.done
        print(f"progress: {self.status()}", file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the live bar, or print the last progress line (unless the latest one already says it all)."""
        if self._bar is not None:
            self._bar.stop(self)
            self._bar = None
        elif self._shown_done != self.done:
            self._line()

    def summary(self, since: float | None = None) -> str:
        """The final line: counts and seconds since `since` (a time.monotonic() value; default: the start)."""
        seconds = time.monotonic() - (self.started if since is None else since)
        return (
            f"decided {self.decided}, skipped {self.skipped} (already done), "
            f"errors {self.errors}, {seconds:.1f} s"
        )


def _live_bar(stream: TextIO, total: int):
    try:
        return _RichBar(stream, total)
    except ModuleNotFoundError:
        return _PlainBar(stream)


class _RichBar:
    """A `rich` progress bar (rich comes with litestar, but is not required)."""

    def __init__(self, stream: TextIO, total: int):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("ETA {task.fields[eta]}"),
            console=Console(file=stream),
            transient=False,
        )
        self._task = self._progress.add_task("batch", total=total, rate="0.00 items/s", eta="?")
        self._progress.start()

    def show(self, progress: Progress) -> None:
        eta = progress.eta_s()
        self._progress.update(
            self._task,
            completed=progress.done,
            rate=f"{progress.rate():.2f} items/s",
            eta=_duration(eta) if eta is not None else "?",
        )

    def stop(self, progress: Progress) -> None:
        self.show(progress)
        self._progress.stop()


class _PlainBar:
    """One status line redrawn in place, at most a few times a second."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._drawn = 0.0

    def show(self, progress: Progress) -> None:
        now = time.monotonic()
        if now - self._drawn >= 0.2:
            self._drawn = now
            self.stream.write(f"\r{progress.status()}\x1b[K")
            self.stream.flush()

    def stop(self, progress: Progress) -> None:
        self.stream.write(f"\r{progress.status()}\x1b[K\n")
        self.stream.flush()
