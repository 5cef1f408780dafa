# SPDX-License-Identifier: GPL-3.0-or-later
"""The terminal of an in-process run: Blender's own output kept apart from ours.

Blender writes its log from C (``Read blend: ...``, ``blend.doversion`` warnings) and
importers print from Python, on file descriptors 1 and 2, whatever ``sys.stdout``
is.  On a terminal those lines landed in the middle of the progress line, and they
could reach stdout between the summary's lines.  ``OutputAside`` points both
descriptors at a pipe while the files are audited and gives the run a stream on the
real stderr (``stderr``) for its own progress.  A reader thread hands every complete
line Blender writes to ``forward`` (the progress line's ``note``: the line is cleared,
Blender's lines written, the line drawn again), as it comes, so a long import still
shows what it says; ``take()`` returns the lines since the last call, so a run that
forwards nothing (``--quiet``) can still pass on a failed file's last lines.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TextIO

#: Seconds ``take`` waits for the reader to reach what was written before it was called.
DRAIN_SECONDS = 2.0
#: Seconds the reader gets to finish once the descriptors are restored (a child process
#: that inherited them may keep the pipe open; the reader is a daemon thread).
JOIN_SECONDS = 2.0


def _flush_c_streams() -> None:
    """Flush C's stdio buffers (Blender's printf), so what it wrote lands before the descriptors move."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library by that name (Windows): nothing buffered to lose
        pass


def _flush_python_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


class OutputAside:
    """``with OutputAside() as aside:`` descriptors 1 and 2 go to a pipe read by a thread.

    ``aside.stderr`` writes to the stderr the process had before (a terminal stays a
    terminal: ``isatty()`` answers as before); set ``aside.forward`` to receive each
    batch of complete lines as Blender writes them (called from the reader thread);
    ``aside.take()`` returns the lines since the last call.  Leaving restores both
    descriptors, even on an exception.
    """

    def __init__(self) -> None:
        self._saved: dict[int, int] = {}
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._marker = f"\x00skin_audit-drain-{os.getpid()}-{id(self)}"
        self._drained = threading.Event()
        self._reader: threading.Thread | None = None
        self._write_end = -1
        self.forward: Callable[[Sequence[str]], None] | None = None
        self.stderr: TextIO = sys.stderr

    def __enter__(self) -> OutputAside:
        _flush_python_streams()
        _flush_c_streams()
        read_end, self._write_end = os.pipe()
        try:
            for fd in (1, 2):
                self._saved[fd] = os.dup(fd)
            encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
            self.stderr = open(os.dup(self._saved[2]), "w", encoding=encoding,  # noqa: SIM115 (closed on exit)
                               errors="backslashreplace", closefd=True)
            self._reader = threading.Thread(target=self._read, args=(read_end,), name="skin_audit-blender-log",
                                            daemon=True)
            self._reader.start()
            for fd in (1, 2):
                os.dup2(self._write_end, fd)
        except BaseException:
            self._restore()
            raise
        return self

    def _read(self, fd: int) -> None:
        pending = b""
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                *complete, pending = (pending + chunk).split(b"\n")
                if complete:
                    self._deliver([line.decode("utf-8", "replace") for line in complete])
            if pending:
                self._deliver([pending.decode("utf-8", "replace")])
        finally:
            os.close(fd)

    def _deliver(self, lines: list[str]) -> None:
        kept = []
        for line in lines:
            if line.endswith(self._marker):  # after a line Blender left without its newline, or alone
                self._drained.set()
                line = line[:-len(self._marker)]
                if not line:
                    continue
            kept.append(line.rstrip("\r"))
        lines = kept
        if not lines:
            return
        with self._lock:
            self._lines += lines
        forward = self.forward
        if forward is not None:
            forward(lines)

    def take(self) -> list[str]:
        """The lines written on descriptors 1 and 2 since the last call (waits for the reader to
        reach what was written before the call, at most ``DRAIN_SECONDS``)."""
        if self._reader is None:
            return []
        _flush_python_streams()
        _flush_c_streams()
        self._drained.clear()
        os.write(self._write_end, (self._marker + "\n").encode())
        self._drained.wait(DRAIN_SECONDS)
        with self._lock:
            lines, self._lines = self._lines, []
        return lines

    def _restore(self) -> None:
        _flush_python_streams()
        _flush_c_streams()
        for fd, saved in self._saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = {}
        if self._write_end >= 0:
            os.close(self._write_end)  # with 1 and 2 restored, the reader reads the end of the pipe
            self._write_end = -1
        if self._reader is not None:
            self._reader.join(JOIN_SECONDS)
            self._reader = None
        if self.stderr is not sys.stderr:
            try:
                self.stderr.close()
            except OSError:
                pass
            self.stderr = sys.stderr

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._restore()


def last_lines(lines: Sequence[str], count: int) -> list[str]:
    """The last ``count`` non-blank lines of ``lines``."""
    return [line for line in lines if line.strip()][-count:]
