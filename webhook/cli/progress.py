"""Progress of long runs on a terminal: one line on stderr, redrawn in place, only on a TTY
(so logs, pipes and CI output stay clean)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class Progress:
    """``label: 12/340 path`` on stderr while a run goes on; erased at the end."""

    def __init__(self, label: str, stream: TextIO, enabled: bool, interval: float = 0.1) -> None:
        self.label = label
        self.stream = stream
        self.enabled = enabled
        self.interval = interval
        self._last = 0.0
        self._drawn = False

    @classmethod
    def on_tty(cls, label: str, stream: TextIO | None = None) -> Progress:
        """Enabled only when ``stream`` (stderr by default) is a terminal."""
        out = stream or sys.stderr
        return cls(label, out, out.isatty())

    def step(self, done: int, total: int, what: str = "") -> None:
        """Item ``done`` (0-based) of ``total`` is starting; redraws at most every ``interval`` s."""
        now = time.monotonic()
        if not self.enabled or (now - self._last < self.interval and done + 1 < total):
            return
        self._last = now
        self.stream.write(f"\r{self.label}: {done + 1}/{total} {what[-60:]}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def terminal_progress(label: str, output: str) -> Progress:
    """A command's progress line: on a terminal only, and only for text output (``-o json``
    and ``-o yaml`` are for tools: not a byte on stderr for them)."""
    got = Progress.on_tty(label)
    got.enabled = got.enabled and output == "text"
    return got
