# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep freed memory in the process for the next array (command-line runs only).

glibc serves every allocation above 128 KiB with its own ``mmap`` and gives it back on
``free``, so each new (V, 3) array of a million-vertex audit page-faults all its memory
again (about 1 ms per MB here): an audit allocates and frees gigabytes in total.  Raising
the mmap threshold and switching off heap trimming keeps freed blocks for reuse: 10-25%
less time for the checks of the 1M-vertex benchmark rig (measured over several runs), the
same peak memory.  The
process then keeps its peak size until it exits, which suits a command or a worker, not
an interactive Blender, so the panel never calls this.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

#: glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Largest block glibc serves from the heap (its maximum mmap threshold on 64-bit).
HEAP_BLOCK_LIMIT = 32 * 1024 * 1024

_done = False


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks up to ``HEAP_BLOCK_LIMIT`` for reuse; True if it did.

    A no-op (False) off Linux/glibc or with ``SKIN_AUDIT_KEEP_HEAP=0``; called once per process.
    """
    global _done
    if _done:
        return True
    if os.environ.get("SKIN_AUDIT_KEEP_HEAP", "1").strip() == "0" or not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_LIMIT)) and bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1))
    return _done
