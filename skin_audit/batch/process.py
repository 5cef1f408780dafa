# SPDX-License-Identifier: GPL-3.0-or-later
"""The parent's handle on one worker process (local runs and Dask tasks alike).

``WorkerProcess.audit(path, timeout)`` sends one file and waits for its answer.  When
the worker dies on the file (a signal, an exit, a failed allocation) or runs past the
timeout, the file gets an error that says which, the process is gone, and the next call
starts a fresh one.  Nothing here imports Blender or Dask.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .worker import PROTOCOL

#: Seconds a worker may take to import Blender and say it is ready (a cold disk on a cluster node is slow).
START_TIMEOUT_SECONDS = 300.0
#: Seconds a worker gets to leave on its own after its input closes, before it is killed.
STOP_GRACE_SECONDS = 5.0
#: The longest single wait on a worker's pipe (looped until the file's deadline).
READ_POLL_SECONDS = 60.0
#: Lines of a dead worker's stderr passed on to the log.
STDERR_TAIL_LINES = 20

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_PACKAGE = __name__.rsplit(".", 2)[0]


def default_command() -> tuple[str, ...]:
    """This Python running this copy of the package's worker module."""
    return (sys.executable, "-m", f"{_PACKAGE}.batch.worker")


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker of a run is started with."""

    #: ``AuditOptions.to_dict()``
    options: Mapping[str, Any]
    object_name: str | None = None
    #: Address space one file may add to the worker's (None: no limit).
    memory_mb: int | None = None
    #: The worker command line up to its own options; None: ``default_command()``.
    command: tuple[str, ...] | None = None
    start_timeout: float = START_TIMEOUT_SECONDS
    #: Threads each worker's blends may use (``SKIN_AUDIT_THREADS``, unless already set); None:
    #: the worker's own choice.
    threads: int | None = None


@dataclass(frozen=True)
class Outcome:
    """What became of one file in a worker.

    ``file_audit`` is the encoded ``FileAudit`` when the worker answered, else None and
    ``error`` says why; ``reason`` is one of '', 'signal', 'exit', 'timeout', 'memory',
    'internal', 'start' (for counting); ``seconds`` is the audit's own time.
    """

    path: str
    file_audit: dict[str, Any] | None = None
    error: str = ""
    reason: str = ""
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


def describe_exit(returncode: int, memory_mb: int | None) -> tuple[str, str]:
    """(reason, text) for a worker that ended with ``returncode`` in the middle of a file."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        text = f"the worker auditing it died with signal {name}"
        if name == "SIGKILL":
            return "signal", text + " (killed from outside the run, often by the kernel's out-of-memory killer)"
        if memory_mb is not None:
            return "signal", text + (f" (it was limited to {memory_mb} MB beyond Blender's own by --file-memory-mb "
                                     "and may have run out)")
        return "signal", text + " (Blender crashed on this file; the other files are unaffected)"
    return "exit", f"the worker auditing it exited with code {returncode} before answering"


class WorkerProcess:
    """One worker process, started on first use and after each death."""

    def __init__(self, config: WorkerConfig, log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.log = log
        self.blender_version: str | None = None
        #: Seconds each start took (Python, Blender and skin_audit imports), one entry per start.
        self.startups: list[float] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._dir = tempfile.mkdtemp(prefix="skin_audit_worker_")
        self._stderr_path = os.path.join(self._dir, "stderr.log")

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    # ----------------------------------------------------------------- lifecycle

    def _argv(self) -> list[str]:
        argv = [*(self.config.command or default_command()),
                "--options-json", json.dumps(dict(self.config.options)), "--parent-pid", str(os.getpid())]
        if self.config.object_name is not None:
            argv += ["--object", self.config.object_name]
        if self.config.memory_mb is not None:
            argv += ["--memory-mb", str(self.config.memory_mb)]
        return argv

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # The worker runs this very copy of the package, installed or not.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
        if self.config.memory_mb is not None:
            # glibc reserves 64 MB of address space per thread arena; under RLIMIT_AS that is memory lost.
            env.setdefault("MALLOC_ARENA_MAX", "2")
        if self.config.threads is not None:
            env.setdefault("SKIN_AUDIT_THREADS", str(self.config.threads))
        return env

    def _start(self, path: str) -> Outcome | None:
        """Start the process; an Outcome (the file's error) when it cannot start."""
        stderr = os.open(self._stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
        try:
            began = time.perf_counter()
            # start_new_session: a Ctrl-C in the terminal reaches the parent only, which stops the workers.
            self._proc = subprocess.Popen(self._argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=stderr, env=self._env(), start_new_session=True)
        except OSError as exc:
            self._proc = None
            return Outcome(path, error=f"{path}: cannot start a worker ({exc})", reason="start")
        finally:
            os.close(stderr)
        self._buffer = b""
        try:
            line = self._read_line(time.monotonic() + self.config.start_timeout)
        except TimeoutError:
            line = None
        ready = _parse_line(line)
        if not ready.get("ready") or ready.get("protocol") != PROTOCOL:
            self.kill()
            tail = self._stderr_tail(1)
            return Outcome(path, reason="start", error=(
                f"{path}: the worker could not start Blender within {self.config.start_timeout:g} s"
                + (f": {tail.strip()}" if tail.strip() else "")
                + "; each worker needs Python 3.11 with the bpy module and skin_audit"))
        self.startups.append(time.perf_counter() - began)
        self.blender_version = str(ready.get("blender_version", ""))
        return None

    def stop(self) -> None:
        """Let the worker finish and leave (its input closes), then clean up."""
        proc = self._proc
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(STOP_GRACE_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._close_pipes()
        self._proc = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def kill(self) -> None:
        """Kill the process now (a timeout, an interrupt); safe from another thread."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass
        if proc is not None:
            proc.wait()

    def _close_pipes(self) -> None:
        proc = self._proc
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    def _forget(self) -> None:
        self._close_pipes()
        self._proc = None

    # ------------------------------------------------------------------ one file

    def audit(self, path: str, timeout: float | None = None) -> Outcome:
        """Audit ``path`` in the worker; never raises for anything the worker does."""
        if self._proc is None or self._proc.poll() is not None:
            self._forget()
            failed = self._start(path)
            if failed is not None:
                self._forget()
                return failed
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        os.truncate(self._stderr_path, 0)  # the log tail on a crash is this file's
        began = time.perf_counter()
        try:
            proc.stdin.write((json.dumps({"path": path}) + "\n").encode())
            proc.stdin.flush()
            line = self._read_line(None if timeout is None else time.monotonic() + timeout)
        except TimeoutError:
            self.kill()
            self._forget()
            return Outcome(path, reason="timeout", seconds=time.perf_counter() - began,
                           error=f"{path}: timeout after {timeout:g} s (--file-timeout); its worker was stopped")
        except OSError:  # the worker was gone before it read the path
            line = None
        seconds = time.perf_counter() - began
        reply = _parse_line(line)
        if line is None or reply.get("path") != path:
            returncode = proc.wait()
            self._pass_on_stderr(path)
            self._forget()
            reason, text = describe_exit(returncode, self.config.memory_mb)
            return Outcome(path, reason=reason, seconds=seconds, error=f"{path}: {text}")
        if "error" in reply:  # the worker answered, then leaves: it is not to be trusted after this
            proc.wait()
            self._pass_on_stderr(path, reply.get("traceback", ""))
            self._forget()
            reason = "memory" if "out of memory" in reply["error"] else "internal"
            return Outcome(path, reason=reason, seconds=float(reply.get("seconds", seconds)), error=reply["error"])
        return Outcome(path, file_audit=reply["file_audit"], seconds=float(reply.get("seconds", seconds)))

    # ------------------------------------------------------------------ plumbing

    def _read_line(self, deadline: float | None) -> bytes | None:
        """The next line from the worker; None at end of file; TimeoutError after ``deadline``."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise TimeoutError
            # Waits of at most a minute, looped: any deadline stays a number select() can hold.
            wait = READ_POLL_SECONDS if wait is None else min(wait, READ_POLL_SECONDS)
            try:
                readable, _, _ = select.select([fd], [], [], wait)
            except (OSError, ValueError):  # closed by kill() from another thread
                return None
            if not readable:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _stderr_tail(self, lines: int) -> str:
        try:
            with open(self._stderr_path, "rb") as f:
                text = f.read()[-(1 << 16):].decode("utf-8", "replace")
        except OSError:
            return ""
        kept = [line for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    def _pass_on_stderr(self, path: str, extra: str = "") -> None:
        if self.log is None:
            return
        tail = "\n".join(t for t in (self._stderr_tail(STDERR_TAIL_LINES), extra.strip()) if t)
        if tail:
            self.log(f"skin_audit: worker output while auditing {path} (last lines):\n{tail}\n")


def _parse_line(line: bytes | None) -> dict[str, Any]:
    if not line:
        return {}
    try:
        data = json.loads(line)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


#: The error kind of a file lost with its worker: the file itself (crashes Blender, too slow, too
#: big, out of sight) is 'input'; our own failure (a bug, a worker that cannot start) 'internal'.
INTERNAL_REASONS = frozenset({"internal", "start", "task"})


def to_file_audit(outcome: Outcome) -> Any:
    """The ``FileAudit`` for an outcome: the worker's own, or an error saying what happened."""
    from ..core.audit.report import FileAudit
    from .worker import decode_file_audit

    if outcome.file_audit is not None:
        return decode_file_audit(outcome.file_audit)
    kind = "internal" if outcome.reason in INTERNAL_REASONS else "input"
    return FileAudit(outcome.path, "error", message=outcome.error, error_kind=kind)
