# SPDX-License-Identifier: GPL-3.0-or-later
"""Audit many files on this machine, each in a worker process with its own Blender.

Worker processes (``subprocess``, not ``multiprocessing``): a worker is a plain
``python -m skin_audit.batch.worker`` whose only link to the parent is two pipes, so
whatever kills it (a segfault in Blender, SIGKILL, the out-of-memory killer, our own
timeout) is seen as the pipe closing plus an exit status, and nothing of the parent's
state (threads, locks, an imported Blender) is copied into it.  ``multiprocessing``
with spawn would give the same isolation, but its pool has no per-task timeout, loses
the whole pool on a dead worker (``BrokenProcessPool``) and pickles results.  One
thread per worker only waits on its pipe; the work happens in the processes.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..core.maths.parallel import thread_count
from ..core.reports.progress import Progress, file_sizes
from .process import Outcome, WorkerConfig, WorkerProcess, to_file_audit


def default_jobs(files: int) -> int:
    """One worker per core when there is more than one file, never more workers than files."""
    return max(1, min(os.cpu_count() or 1, files))


@dataclass(frozen=True)
class BatchResult:
    """A batch run: the per-file audits in input order and what the run cost."""

    files: tuple[Any, ...]
    blender_version: str
    jobs: int
    seconds: float
    #: Each worker start (Python, Blender and skin_audit imports), seconds.
    startup_seconds: tuple[float, ...] = ()
    #: Per file, in input order: seconds its worker spent loading and auditing it (None: no worker answered).
    file_seconds: tuple[float | None, ...] = ()
    #: Files lost to a worker, by reason ('signal', 'exit', 'timeout', 'memory', 'internal', 'start', 'lost').
    worker_failures: Mapping[str, int] = field(default_factory=dict)

    def summary_line(self) -> str:
        errors = sum(fa.status != "ok" for fa in self.files)
        lost = ", ".join(f"{n} {reason}" for reason, n in sorted(self.worker_failures.items()))
        start = (f"; worker start {sum(self.startup_seconds) / len(self.startup_seconds):.2f} s "
                 f"x {len(self.startup_seconds)}") if self.startup_seconds else ""
        timed = [s for s in self.file_seconds if s is not None]
        audit = f", audit {sum(timed) / len(timed):.2f} s per file" if timed else ""
        return (f"skin_audit: {len(self.files)} file(s) in {self.seconds:.1f} s with {self.jobs} worker(s): "
                f"{len(self.files) - errors} ok, {errors} error(s)"
                + (f" (worker lost on {lost})" if lost else "") + start + audit)


def expand(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(path, problem) for each file to audit, exactly as the in-process run lists them."""
    from ..core.input_guard import expand_paths

    return [(str(path), problem) for path, problem in expand_paths(paths)]


def unusable(path: str, options: Any) -> Any:
    """The in-process run's entry for a path that is no file to audit (missing, empty folder...).

    ``audit_paths`` on that path lists it again and loads nothing, so the entry is the
    in-process one to the letter.
    """
    from ..blender.run.audit_files import audit_paths

    (result,) = audit_paths([path], options)
    return result


def audit_paths_parallel(
    paths: Iterable[str], options: Any, object_name: str | None = None, *,
    jobs: int | None = None, file_timeout: float | None = None, file_memory_mb: int | None = None,
    command: tuple[str, ...] | None = None, stream: TextIO | None = None, quiet: bool = False,
) -> BatchResult:
    """Audit every file in ``jobs`` worker processes; results in input order.

    ``options`` is an ``AuditOptions``.  A file whose worker dies or passes
    ``file_timeout`` seconds gets ``status: "error"`` with the reason and the run goes
    on with a fresh worker.  ``command`` replaces the worker command (tests).  Progress
    goes to ``stream`` (stderr) when it is a terminal and not ``quiet``, and a summary line always.
    """
    stream = sys.stderr if stream is None else stream
    began = time.monotonic()
    entries = expand(paths)
    results: list[Any] = [unusable(path, options) if problem else None for path, problem in entries]
    todo = [(i, path) for i, (path, problem) in enumerate(entries) if not problem]
    jobs = max(1, min(jobs or default_jobs(len(todo)), len(todo) or 1))
    # The cores shared out between the workers: each worker's blends use its share, not all of them.
    config = WorkerConfig(options=options.to_dict(), object_name=object_name, memory_mb=file_memory_mb,
                          command=command, threads=max(1, thread_count() // jobs))
    progress = start_progress(entries, results, stream, quiet)
    log_lock = threading.Lock()

    def log(text: str) -> None:
        with log_lock:
            stream.write(("\r\x1b[K" if progress.enabled else "") + text)
            stream.flush()

    work: queue.SimpleQueue[tuple[int, str] | None] = queue.SimpleQueue()
    for item in todo:
        work.put(item)
    done: queue.SimpleQueue[tuple[int, Outcome]] = queue.SimpleQueue()
    workers = [WorkerProcess(config, log) for _ in range(jobs if todo else 0)]

    def run(worker: WorkerProcess) -> None:
        while True:
            try:
                item = work.get_nowait()
            except queue.Empty:
                return
            if item is None:
                return
            index, path = item
            try:
                outcome = worker.audit(path, file_timeout)
            except BaseException as exc:  # never leave the main thread waiting for this file
                worker.kill()
                outcome = Outcome(path, reason="internal", error=(
                    f"{path}: the thread waiting on its worker failed ({type(exc).__name__}: {exc}); "
                    "a skin_audit bug, please report it"))
            done.put((index, outcome))

    threads = [threading.Thread(target=run, args=(w,), name=f"skin_audit-worker-{n}", daemon=True)
               for n, w in enumerate(workers)]
    failures: Counter[str] = Counter()
    seconds: list[float | None] = [None] * len(entries)
    try:
        for t in threads:
            t.start()
        for _ in range(len(todo)):
            index, outcome = _next(done)
            fa = to_file_audit(outcome)
            results[index] = fa
            if outcome.reason:
                failures[outcome.reason] += 1
            if outcome.file_audit is not None:
                seconds[index] = outcome.seconds
            advance(progress, fa.status == "ok")
    except BaseException:
        # An interrupt: no new file starts, running workers are killed, the caller reports it.
        while True:
            try:
                work.get_nowait()
            except queue.Empty:
                break
        for w in workers:
            w.kill()
        raise
    finally:
        for t in threads:
            t.join()
        for w in workers:
            w.stop()
    versions = sorted({w.blender_version for w in workers if w.blender_version})
    result = BatchResult(
        files=tuple(results), blender_version=", ".join(versions) or _own_blender_version(), jobs=jobs,
        seconds=time.monotonic() - began, startup_seconds=tuple(s for w in workers for s in w.startups),
        file_seconds=tuple(seconds), worker_failures=dict(failures))
    finish(progress, result.summary_line())
    return result


def start_progress(entries: list[tuple[str, str]], results: list[Any], stream: TextIO,
                   quiet: bool = False) -> Progress:
    """The run's progress line (terminals only, none when ``quiet``), already past the entries that need
    no worker."""
    progress = Progress(len(entries), stream, enabled=False if quiet else None,
                        weights=file_sizes([path for path, _ in entries]))
    for fa in results:
        if fa is not None:
            advance(progress, False)
    return progress


def advance(progress: Progress, ok: bool) -> None:
    """One more file done: files done, failures so far and time left (several files run at once)."""
    progress.done(ok)
    progress.start(f"{progress.failed} failed so far")


def finish(progress: Progress, summary: str) -> None:
    """The summary line, on a terminal or not (over the progress line on a terminal)."""
    progress.stream.write(("\r\x1b[K" if progress.enabled else "") + summary + "\n")
    progress.stream.flush()


def _next(done: queue.SimpleQueue[tuple[int, Outcome]]) -> tuple[int, Outcome]:
    # Short waits: a Ctrl-C reaches the main thread between two, even where a long wait would not wake.
    while True:
        try:
            return done.get(timeout=0.2)
        except queue.Empty:
            continue


def _own_blender_version() -> str:
    import bpy

    return str(bpy.app.version_string)
