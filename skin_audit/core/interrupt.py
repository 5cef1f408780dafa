# SPDX-License-Identifier: GPL-3.0-or-later
"""Ctrl-C that nothing can swallow.

Importers (glTF, FBX) run inside Blender operators that catch every exception,
so a KeyboardInterrupt raised in them ends up as "cannot be read" and the run
goes on to write a false report.  During :func:`sigint_stops_the_run` a SIGINT
both raises KeyboardInterrupt and is remembered; :func:`raise_if_interrupted`
after each operator turns a swallowed interrupt back into one.  Standard library only.

The handler in place before the block is put back after it.  Inside the Blender executable
``signal.getsignal(SIGINT)`` is None: Blender set its own handler in C before Python started
(in background mode the first Ctrl-C sends a break to a running job, the second exits).
``signal.signal`` cannot take None back, so that C handler is kept aside through Python's
``PyOS_getsig`` and put back with ``PyOS_setsig``; where the C API cannot be reached, the
default action is restored (Ctrl-C ends the process).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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
    previous = signal.getsignal(signal.SIGINT)
    set_in_c = _c_handler() if previous is None else None
    signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        elif not _set_c_handler(set_in_c):
            signal.signal(signal.SIGINT, signal.SIG_DFL)


def _python_api(name: str) -> Any:
    """Python's own C function ``name`` (ctypes), or None where it cannot be reached."""
    try:
        import ctypes

        return getattr(ctypes.pythonapi, name)
    except (ImportError, AttributeError, OSError):
        return None


def _c_handler() -> int | None:
    """The address of SIGINT's handler as the C library holds it (one Python did not set),
    or None where Python's C API cannot be reached."""
    getsig = _python_api("PyOS_getsig")
    if getsig is None:
        return None
    import ctypes

    getsig.argtypes, getsig.restype = [ctypes.c_int], ctypes.c_void_p
    address = getsig(signal.SIGINT)
    if address == ctypes.c_void_p(-1).value:  # SIG_ERR
        return None
    return int(address or 0)


def _set_c_handler(address: int | None) -> bool:
    """Put back SIGINT's C handler kept by :func:`_c_handler`; False if it cannot be."""
    setsig = _python_api("PyOS_setsig")
    if address is None or setsig is None:
        return False
    import ctypes

    setsig.argtypes, setsig.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_void_p
    setsig(signal.SIGINT, address)
    return True


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived during the run, even if something swallowed it."""
    if _interrupted.is_set():
        raise KeyboardInterrupt


def interrupted() -> bool:
    return _interrupted.is_set()
