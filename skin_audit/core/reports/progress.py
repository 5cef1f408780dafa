# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress of a long audit on stderr: files done, the current file, time left.

Shown only when the stream is a terminal (one line rewritten in place), so
CI logs and pipes stay clean; the last line is a summary.  Time left is
estimated from the bytes audited so far when file sizes are known (a 200 MB
character takes longer than a 2 MB prop), else from the file count.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from .text import terminal_line


def _duration(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def file_sizes(paths: Sequence[str]) -> list[int]:
    """Sizes in bytes (0 for what cannot be read): the weights of the time estimate."""
    out = []
    for p in paths:
        try:
            out.append(os.path.getsize(p))
        except OSError:
            out.append(0)
    return out


class Progress:
    """``start(path)`` before each file, ``done(ok)`` after it, ``finish()`` at the end.

    Parameters
    ----------
    total : number of files.
    stream : where to write (default ``sys.stderr``).
    enabled : force on or off; default: on when ``stream`` is a terminal.
    weights : (total,) relative cost of each file (e.g. ``file_sizes``); default equal.
    clock : seconds, monotonic (tests pass a fake one).
    """

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None,
                 weights: Sequence[float] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        w = [float(x) for x in weights] if weights is not None else [1.0] * total
        if len(w) != total:
            raise ValueError(f"weights: expected {total} values, got {len(w)}")
        # A file of unknown size still costs something.
        floor = max(sum(w) / max(total, 1) * 0.01, 1e-9)
        self._weights = [max(x, floor) for x in w]
        self._clock = clock
        self._t0 = clock()
        self.files_done = 0
        self.failed = 0
        self._width = 0
        self._current = ""
        # ``note`` may come from another thread (Blender's log, read as it is written).
        self._lock = threading.RLock()

    def _write(self, text: str, end: str = "") -> None:
        if not self.enabled:
            return
        text = terminal_line(text)  # a file name cannot break the line or repaint the terminal
        with self._lock:
            pad = max(self._width - len(text), 0)
            self.stream.write("\r" + text + " " * pad + end)
            self.stream.flush()
            self._width = 0 if end else len(text)

    def time_left(self) -> float | None:
        """Seconds left by the work done so far, or None before the first file ends."""
        if self.files_done == 0:
            return None
        done_w = sum(self._weights[: self.files_done])
        left_w = sum(self._weights[self.files_done:])
        return (self._clock() - self._t0) * left_w / done_w

    def line(self, current: str) -> str:
        """The progress text for ``current`` (also what the terminal shows)."""
        left = self.time_left()
        eta = f", about {_duration(left)} left" if left is not None else ""
        return f"skin_audit: {self.files_done}/{self.total} files{eta}: {current}"

    def start(self, path: str) -> None:
        width = 100
        name = path if len(path) <= width // 2 else "..." + path[-(width // 2 - 3):]
        self._current = name
        self._write(self.line(name))

    def note(self, lines: Sequence[str]) -> None:
        """Lines of their own (terminal or not): on a terminal the progress line is cleared
        first and drawn again after them, so nothing is ever written into it."""
        if not lines:
            return
        with self._lock:
            if self.enabled and self._width:
                self.stream.write("\r\x1b[K")
            self.stream.write("".join(terminal_line(line) + "\n" for line in lines))
            self._width = 0
            if self.enabled and self._current and self.files_done < self.total:
                self._write(self.line(self._current))
            self.stream.flush()

    def done(self, ok: bool = True) -> None:
        self.files_done = min(self.files_done + 1, self.total)
        self.failed += not ok

    def summary(self) -> str:
        failed = f", {self.failed} could not be audited" if self.failed else ""
        return (f"skin_audit: {self.files_done} file(s) audited in "
                f"{_duration(self._clock() - self._t0)}{failed}")

    def finish(self) -> None:
        self._write(self.summary(), end="\n")
