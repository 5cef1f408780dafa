# SPDX-License-Identifier: GPL-3.0-or-later
"""The batch options of ``skin_audit audit`` and the choice between workers and this process.

``cli.py`` calls ``add_arguments`` on its audit parser and ``audit_in_workers`` before
its in-process loop; everything about batch runs stays here.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..core.errors import InputError

#: The longest --file-timeout: a week (a wait must stay a number every clock and select() can hold).
MAX_FILE_TIMEOUT_SECONDS = 7 * 24 * 3600.0
#: The largest --file-memory-mb: 16 TiB (address-space limits are 64-bit byte counts).
MAX_FILE_MEMORY_MB = 1 << 24
#: Dask's address schemes (distributed.comm): what --scheduler may start with.
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_FILE_TIMEOUT_SECONDS:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 and at most "
                                         f"{MAX_FILE_TIMEOUT_SECONDS:.0f} (7 days), got {text!r}")
    return value


def _megabytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of MB, got {text!r}") from None
    if not 1 <= value <= MAX_FILE_MEMORY_MB:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_FILE_MEMORY_MB} MB (16 TiB), got {value}")
    return value


def _scheduler(text: str) -> str:
    """``SCHEME://HOST:PORT`` (``HOST:PORT`` means tcp), checked before any connection is tried."""
    import urllib.parse

    address = text if "://" in text else f"tcp://{text}"
    usage = f"expected tcp://HOST:PORT (or {', '.join(SCHEDULER_SCHEMES[1:])}), got {text!r}"
    try:
        parts = urllib.parse.urlsplit(address)
        port = parts.port
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{usage}: {exc}") from None
    if parts.scheme not in SCHEDULER_SCHEMES or not parts.hostname or port is None or port == 0 \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(usage)
    return address


def positive_int(text: str) -> int:
    """An option's whole number of at least 1 (``--jobs``; ``cli.py``'s ``--max-influences``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_arguments(audit: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--file-timeout``, ``--file-memory-mb``, ``--scheduler`` (docs/scale.md)."""
    audit.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                       help="audit in N worker processes, each with its own Blender, so a file that crashes "
                            "or hangs costs only itself (default: one per core when there is more than one file)")
    audit.add_argument("--file-timeout", type=_seconds, default=None, metavar="SECONDS",
                       help="stop a file's worker after this long and report the file as an error")
    audit.add_argument("--file-memory-mb", type=_megabytes, default=None, metavar="MB",
                       help="address space one file may add to its worker's Blender (Linux); best with "
                            "--file-timeout, as Blender may hang rather than fail when memory runs out")
    audit.add_argument("--scheduler", type=_scheduler, metavar="tcp://HOST:PORT",
                       help="send the files to this Dask cluster; workers read them from the same paths "
                            "(pip install 'skin_audit[cluster]'; docs/scale.md)")


def _inside_blender() -> bool:
    """True in a Blender executable, whose ``sys.executable`` is a Python without bpy (no workers then)."""
    import bpy

    return bool(bpy.app.binary_path)


def audit_in_workers(args: argparse.Namespace, todo: list[str], options: Any,
                     in_process_for: str | None = None) -> tuple[Any, ...] | None:
    """The files audited by workers or a Dask cluster, or None to audit them in this process.

    In this process by default for one file, inside a Blender executable, and when
    ``in_process_for`` names a reason (an output that needs the loaded files); asking
    for workers explicitly then is bad usage.
    """
    explicit = [flag for flag, value in (("--jobs", args.jobs), ("--file-timeout", args.file_timeout),
                                         ("--file-memory-mb", args.file_memory_mb),
                                         ("--scheduler", args.scheduler)) if value is not None]
    if explicit and in_process_for:
        raise InputError(f"{explicit[0]} runs files in worker processes, but {in_process_for} needs them "
                         f"in this process: drop one of the two")
    if args.scheduler is not None and args.jobs is not None:
        raise InputError("--jobs sets local workers, but --scheduler sends the files to the cluster's: drop --jobs")
    if args.scheduler is not None:
        from .cluster import audit_paths_on_cluster

        return audit_paths_on_cluster(todo, options, args.object, scheduler=args.scheduler,
                                      file_timeout=args.file_timeout, file_memory_mb=args.file_memory_mb,
                                      quiet=getattr(args, "quiet", False)).files
    if _inside_blender():
        if explicit:
            raise InputError(f"{explicit[0]} starts workers with the bpy module: run `python -m skin_audit` "
                             "from a Python 3.11 with bpy installed, or audit here without it")
        return None
    if not explicit and (in_process_for or len(todo) < 2):
        return None
    from .local import audit_paths_parallel

    return audit_paths_parallel(todo, options, args.object, jobs=args.jobs, file_timeout=args.file_timeout,
                                file_memory_mb=args.file_memory_mb, quiet=getattr(args, "quiet", False)).files
