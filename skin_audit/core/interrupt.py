# SPDX-License-Identifier: GPL-3.0-or-later
"""Ctrl-C that nothing can swallow.

Importers (glTF, FBX) run inside Blender operators that catch every exception,
so a KeyboardInterrupt raised in them ends up as "cannot be read" and the run
goes on to write a false report.  During :func:`sigint_stops_the_run` a SIGINT
both raises KeyboardInterrupt and is remembered; :func:`raise_if_interrupted`
after each operator turns a swallowed interrupt back into one.  Standard library only.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Exit code of a run stopped by Ctrl-C (128 + SIGINT, what shells report).
EXIT_INTERRUPTED = 130

_interrupted = threading.Event()


def _handler(signum: int, frame: object) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


@contextmanager
def sigint_stops_the_run() -> Iterator[None]:
    """Install the remembering SIGINT handler for the block (main thread only), then restore."""
    _interrupted.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived during the run, even if something swallowed it."""
    if _interrupted.is_set():
        raise KeyboardInterrupt


def interrupted() -> bool:
    return _interrupted.is_set()
