# SPDX-License-Identifier: GPL-3.0-or-later
"""The terminal of an in-process run: Blender's own output set aside while files load.

Blender writes its log from C (``Read blend: ...``, ``blend.doversion`` warnings) and
importers print from Python, on file descriptors 1 and 2, whatever ``sys.stdout``
is.  On a terminal those lines land in the middle of the progress line, and in a CI
log between the summary's lines.  ``OutputAside`` points both descriptors at a
temporary file while the files are audited and gives the run a stream on the real
stderr (``stderr``) for its own progress; ``take()`` returns what was set aside since
the last call, so the caller can pass on a failed file's last lines, each on a line
of its own (the workers of a batch run keep their Blender output the same way).
"""

from __future__ import annotations

import os
import sys
import tempfile
from types import TracebackType
from typing import TextIO


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
    """``with OutputAside() as aside:`` descriptors 1 and 2 go to a temporary file.

    ``aside.stderr`` writes to the stderr the process had before (a terminal stays a
    terminal: ``isatty()`` answers as before); ``aside.take()`` returns the text set
    aside since the last call.  Leaving restores both descriptors, even on an exception.
    """

    def __init__(self) -> None:
        self._saved: dict[int, int] = {}
        self._pos = 0
        self._file: tempfile._TemporaryFileWrapper[bytes] | None = None
        self.stderr: TextIO = sys.stderr

    def __enter__(self) -> OutputAside:
        _flush_python_streams()
        _flush_c_streams()
        self._file = tempfile.NamedTemporaryFile(prefix="skin_audit-blender-", suffix=".log", delete=True)
        try:
            for fd in (1, 2):
                self._saved[fd] = os.dup(fd)
            encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
            self.stderr = open(os.dup(self._saved[2]), "w", encoding=encoding,  # noqa: SIM115 (closed on exit)
                               errors="backslashreplace", closefd=True)
            for fd in (1, 2):
                os.dup2(self._file.fileno(), fd)
        except BaseException:
            self._restore()
            raise
        return self

    def take(self) -> str:
        """What was written on descriptors 1 and 2 since the last call."""
        if self._file is None:
            return ""
        _flush_python_streams()
        _flush_c_streams()
        fd = self._file.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, max(size - self._pos, 0), self._pos) if size > self._pos else b""
        self._pos = size
        return data.decode("utf-8", "replace")

    def _restore(self) -> None:
        _flush_python_streams()
        _flush_c_streams()
        for fd, saved in self._saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = {}
        if self.stderr is not sys.stderr:
            try:
                self.stderr.close()
            except OSError:
                pass
            self.stderr = sys.stderr
        if self._file is not None:
            self._file.close()
            self._file = None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._restore()


def last_lines(text: str, count: int) -> list[str]:
    """The last ``count`` non-blank lines of ``text``."""
    return [line for line in text.splitlines() if line.strip()][-count:]
