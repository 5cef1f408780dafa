# SPDX-License-Identifier: GPL-3.0-or-later
"""The worker process: one Blender, many files, one at a time.

``python -m skin_audit.batch.worker --options-json JSON [--object NAME] [--memory-mb N]
[--parent-pid PID]`` imports Blender once and writes a ``ready`` line; then, for each
line ``{"path": ...}`` read on stdin, it audits that file exactly as the in-process run
does (``audit_file``) and writes one JSON line with the result.  Results travel on the
original stdout; everything else written to stdout (Blender, importers) is sent to
stderr, so a stray print can never corrupt a result.

Why long-lived processes rather than one per file: importing Blender costs about 1.5 s,
more than auditing a typical small rig; a process that dies is replaced by the parent, so
a crash still costs only the file that caused it.

The same file holds the result codec (a ``FileAudit`` as JSON and back, all vertex
indices kept, unlike the report's capped list) so parent and worker always agree.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import time
import traceback
import typing
from collections.abc import Sequence
from typing import IO, Any

#: The protocol's version: the parent refuses a worker that speaks another.
PROTOCOL = 1


# --------------------------------------------------------------------------- codec


def _plain(value: Any) -> Any:
    """JSON fallback for numpy scalars and arrays that may sit in metrics or details."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot send {type(value).__name__} from a worker")


def _encode(obj: Any) -> dict[str, Any]:
    """A frozen dataclass as a dict; fields left out of comparisons (per-vertex measures) stay behind."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if not f.compare:
            continue
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            value = _encode(value)
        elif isinstance(value, tuple):
            value = [_encode(v) if dataclasses.is_dataclass(v) else v for v in value]
        out[f.name] = value
    return out


def _decode(cls: Any, data: dict[str, Any]) -> Any:
    """The inverse of ``_encode``, led by the field annotations (``tuple[Finding, ...]``)."""
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value, hint = data[f.name], hints[f.name]
        if typing.get_origin(hint) is tuple and isinstance(value, list):
            item = (typing.get_args(hint) or (None,))[0]
            value = tuple(_decode(item, v) if dataclasses.is_dataclass(item) else v for v in value)
        elif dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = _decode(hint, value)
        kwargs[f.name] = value
    return cls(**kwargs)


def encode_file_audit(file_audit: Any) -> dict[str, Any]:
    """``FileAudit`` -> plain dict: every compared field, nested audits and findings included."""
    return _encode(file_audit)


def decode_file_audit(data: dict[str, Any]) -> Any:
    """The inverse of ``encode_file_audit``: a ``FileAudit`` whose report JSON is the original's."""
    from ..core.audit.report import FileAudit

    return _decode(FileAudit, data)


def options_from_dict(data: dict[str, Any]) -> Any:
    """``AuditOptions`` from its ``to_dict()`` (JSON turned its tuples into lists)."""
    from ..core.audit.options import AuditOptions

    return AuditOptions(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def dumps_line(data: dict[str, Any]) -> str:
    # allow_nan: a NaN metric must reach the parent as it is, to be judged there as in-process.
    return json.dumps(data, default=_plain, separators=(",", ":")) + "\n"


# --------------------------------------------------------------------------- process


def _die_with_parent(parent_pid: int | None) -> None:
    """Linux: be killed when the parent goes (a killed Dask worker must not leave Blenders behind)."""
    if parent_pid is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    except OSError:
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _address_space_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def memory_limit_supported() -> bool:
    """True where ``limit_memory`` can act (a ``resource`` module and /proc/self/status)."""
    try:
        import resource  # noqa: F401
    except ImportError:
        return False
    return _address_space_bytes() is not None


def limit_memory(extra_mb: int | None) -> bool:
    """Let the next file add at most ``extra_mb`` MB of address space to what the worker holds now.

    RLIMIT_AS counts Blender's own address space (about 1.3 GB with bpy 5.0), so the
    limit is set before each file as "current + extra"; a soft limit can be raised
    again for the next file.  Returns False where the platform cannot enforce it.
    """
    if extra_mb is None:
        return True
    try:
        import resource
    except ImportError:
        return False
    current = _address_space_bytes()
    if current is None:
        return False
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = current + extra_mb * 2**20
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return True


def audit_one(path: str, options: Any, object_name: str | None) -> Any:
    """The per-file audit, exactly the in-process run's (a seam tests wrap; nothing else).

    ``audit_paths`` on the one file, not ``audit_file``: whatever the in-process loop does
    around each file (its guards, its error kinds) happens here too.
    """
    from ..blender.run.audit_files import audit_paths

    (result,) = audit_paths([path], options, object_name)
    return result


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m skin_audit.batch.worker",
                                     description="skin_audit batch worker (started by the batch runner)")
    parser.add_argument("--options-json", required=True, help="AuditOptions.to_dict() as JSON")
    parser.add_argument("--object", default=None)
    parser.add_argument("--memory-mb", type=int, default=None)
    parser.add_argument("--parent-pid", type=int, default=None)
    return parser.parse_args(list(argv))


def _send(channel: IO[str], data: dict[str, Any]) -> None:
    channel.write(dumps_line(data))
    channel.flush()


def serve(argv: Sequence[str]) -> int:
    """Run the worker until stdin closes; the return value is the process's exit code."""
    args = _parse(argv)
    # The parent stops us; a Ctrl-C in its terminal must not kill workers behind its back.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(args.parent_pid)
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    started = time.perf_counter()
    import bpy

    from ..blender.run.audit_files import audit_paths  # noqa: F401  (imported now: part of start-up)
    from ..blender.run.guarded import set_memory_errors_fatal
    from ..core.heap import keep_freed_memory
    from ..core.maths.parallel import warm_up

    if args.memory_mb is None:
        # Freed arrays kept for reuse, but not under --file-memory-mb: the limit is "what the
        # worker holds now + MB", and a kept heap would carry earlier files' peaks into it.
        keep_freed_memory()
    warm_up()  # the blend threads' stacks and arenas belong to start-up, not to the first file's budget

    options = options_from_dict(json.loads(args.options_json))
    set_memory_errors_fatal(True)  # a file's MemoryError reaches the handler below, not the audit's guard
    _send(channel, {"ready": True, "protocol": PROTOCOL, "pid": os.getpid(),
                    "blender_version": bpy.app.version_string,
                    "startup_seconds": time.perf_counter() - started,
                    "memory_limit_enforced": args.memory_mb is not None and memory_limit_supported()})
    for line in sys.stdin:
        if not line.strip():
            continue
        path = json.loads(line)["path"]
        limit_memory(args.memory_mb)
        began = time.perf_counter()
        reply: dict[str, Any] = {"path": path}
        fatal = False
        try:
            reply["file_audit"] = encode_file_audit(audit_one(path, options, args.object))
        except MemoryError:
            fatal = True  # Blender's state after a failed allocation is not to be trusted
            reply["error"] = (f"{path}: out of memory: auditing this file needed more than "
                              f"{args.memory_mb} MB on top of Blender's own (--file-memory-mb); "
                              "raise the limit or audit it on a larger machine") if args.memory_mb is not None \
                else (f"{path}: out of memory: auditing this file needed more memory than this machine gave "
                      "its worker; audit it on a larger machine")
        except Exception as exc:  # the project's errors are already results; this is a bug
            fatal = True
            reply["error"] = (f"{path}: internal error in the audit ({type(exc).__name__}: {exc}); "
                              + (f"the worker was limited to {args.memory_mb} MB on top of Blender's own "
                                 "(--file-memory-mb), a likely cause: raise the limit"
                                 if args.memory_mb is not None else "please report it with this file"))
            reply["traceback"] = traceback.format_exc()
        reply["seconds"] = time.perf_counter() - began
        _send(channel, reply)
        if fatal:
            return 3
    return 0


if __name__ == "__main__":
    code = serve(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit, as in skin_audit.__main__: bpy 4.2 can crash in its own shutdown.
    os._exit(code)
