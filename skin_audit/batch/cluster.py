# SPDX-License-Identifier: GPL-3.0-or-later
"""Audit many files on an existing Dask cluster (``--scheduler tcp://HOST:PORT``).

One Dask task per file.  The task does not run Blender in the Dask worker's own
process: it hands the file to a worker process of ``skin_audit.batch.worker`` (the
same one local runs use), kept per Dask worker thread so Blender is imported once.
Why: a file that crashes Blender must cost one file, not a Dask worker; in-process,
a segfault kills the worker, the scheduler re-runs the task elsewhere and the same
file kills the next worker too, until Dask gives up with ``KilledWorker`` after
several lost workers and their other tasks.  Here the crash, timeout or memory error
comes back as that file's error result, as in a local run.

A worker lost for outside reasons (its machine, a kill) is Dask's business: the
scheduler re-runs its tasks on another worker; after ``distributed.scheduler.allowed-
failures`` losses on one task (start the scheduler with
``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1`` for "retry once") the client gets
``KilledWorker`` and reports that file as an error.  A loss counts against every task
the worker holds, queued ones too, hence ``WORKER_SATURATION=1.0`` beside it
(docs/scale.md).  ``retries=1`` re-runs a task that
raised (e.g. a worker without skin_audit installed), on any worker.

Workers read each file from the path the client gives: the library must sit on a
path every worker sees the same way (a shared mount).  A path a worker cannot see is
reported for that file.  Dask is imported here only, when a scheduler is given.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import CancelledError
from dataclasses import asdict
from typing import Any, TextIO

from ..core.errors import InputError
from ..core.input_guard import one_line
from .local import BatchResult, advance, expand, finish, start_progress, unusable
from .process import _PACKAGE, Outcome, WorkerConfig, WorkerProcess, to_file_audit

#: Seconds the client waits for the scheduler to answer.
CONNECT_TIMEOUT_SECONDS = 30.0
#: Seconds beyond CONNECT_TIMEOUT_SECONDS the client waits before giving up on a silent peer.
CONNECT_GRACE_SECONDS = 5.0
#: Task retries after an exception in the task (not worker losses: see the module docstring).
TASK_RETRIES = 1

# ---------------------------------------------------------------- on the Dask worker

_WORKERS: dict[tuple[int, str], WorkerProcess] = {}
_WORKERS_LOCK = threading.Lock()


def _stop_all() -> None:
    with _WORKERS_LOCK:
        for process in _WORKERS.values():
            process.kill()
            process.stop()
        _WORKERS.clear()


atexit.register(_stop_all)


def _worker_process(config: WorkerConfig) -> WorkerProcess:
    """This thread's worker process for ``config`` (one Blender per Dask thread, reused across tasks)."""
    key = (threading.get_ident(), json.dumps(asdict(config), sort_keys=True))
    with _WORKERS_LOCK:
        process = _WORKERS.get(key)
        if process is None:
            process = _WORKERS[key] = WorkerProcess(config, log=sys.stderr.write)
        return process


def _here() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def audit_task(path: str, config: dict[str, Any], file_timeout: float | None) -> dict[str, Any]:
    """One file on a Dask worker: an ``Outcome`` as a dict, plus where and with what it ran."""
    where = _here()
    if not os.path.isfile(path):
        outcome = Outcome(path, reason="path", error=(
            f"{path}: not found on the Dask worker {where}; workers read files from a path they share "
            "with the client: mount the library at the same path on every worker"))
        return {"outcome": asdict(outcome), "worker": where, "blender_version": "", "startups": []}
    process = _worker_process(WorkerConfig(**{**config, "command": tuple(config["command"])
                                              if config.get("command") else None}))
    starts = len(process.startups)
    outcome = process.audit(path, file_timeout)
    return {"outcome": asdict(outcome), "worker": where, "blender_version": process.blender_version or "",
            "startups": process.startups[starts:]}


# ---------------------------------------------------------------- on the client

#: The task as the scheduler sees it: Python's own ``eval`` of this fixed expression, with the
#: package name and the arguments as plain data.  The scheduler unpickles every task it is sent;
#: ``audit_task`` itself would be pickled by reference to skin_audit, so a scheduler without
#: skin_audit installed would fail every file ("Error during deserialization of the task graph").
#: This way only the Dask workers import skin_audit, when the task runs.  The expression never
#: holds a file path or any other value: those travel in ``ARGS``.
TASK_EXPRESSION = "__import__(PACKAGE + '.batch.cluster', fromlist=['audit_task']).audit_task(*ARGS)"


def task_call(path: str, config: dict[str, Any], file_timeout: float | None) -> tuple[Any, ...]:
    """``client.submit`` arguments running ``audit_task(path, config, file_timeout)`` on a Dask worker,
    made of the standard library only (``builtins.eval``, a str, a dict of JSON-like values)."""
    return (eval, TASK_EXPRESSION, {"PACKAGE": _PACKAGE, "ARGS": [path, config, file_timeout]})



def _connect(scheduler: str, timeout: float) -> Any:
    """A Client of the scheduler, or InputError within ``timeout`` (+ a few seconds) whatever the
    other end does: Dask's own timeout covers the TCP connect, not a peer that accepts and then
    never answers its handshake, so the Client is made on a thread that is waited for with a bound."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise InputError("--scheduler needs Dask: install it with `pip install 'skin_audit[cluster]'` "
                         f"(or `pip install -r requirements-dev.txt`) ({exc})") from exc
    made: dict[str, Any] = {}

    def make() -> None:
        try:
            made["client"] = Client(scheduler, timeout=timeout, set_as_default=False)
        except BaseException as exc:  # handed to the caller's thread below
            made["error"] = exc

    thread = threading.Thread(target=make, name="skin_audit-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + CONNECT_GRACE_SECONDS)
    advice = "start one with `dask scheduler` and workers with `dask worker ADDRESS` (docs/scale.md)"
    if thread.is_alive():
        raise InputError(f"the Dask scheduler at {scheduler!r} accepted the connection but did not answer within "
                         f"{timeout + CONNECT_GRACE_SECONDS:g} s; is it a Dask scheduler? {advice}")
    if "client" in made:
        return made["client"]
    exc = made["error"]
    if isinstance(exc, (OSError, TimeoutError)):
        raise InputError(f"cannot reach the Dask scheduler at {scheduler!r} ({exc}); {advice}") from exc
    if isinstance(exc, Exception):  # garbage on the port: Dask fails to decode it (MemoryError, ValueError ...)
        raise InputError(f"{scheduler!r} does not speak Dask's protocol ({type(exc).__name__}: "
                         f"{str(exc)[:200]}); is it a Dask scheduler? {advice}") from exc
    raise exc


def audit_paths_on_cluster(
    paths: Iterable[str], options: Any, object_name: str | None = None, *, scheduler: str,
    file_timeout: float | None = None, file_memory_mb: int | None = None,
    command: tuple[str, ...] | None = None, stream: TextIO | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_SECONDS, quiet: bool = False,
) -> BatchResult:
    """Audit every file as a task on the Dask cluster at ``scheduler``; results in input order.

    The same contract as ``local.audit_paths_parallel``: one ``FileAudit`` per file,
    an error for a file whose audit process died, timed out or ran out of memory, or
    whose path a worker cannot see, or whose Dask workers were lost.  Results stream
    back as tasks finish; the caller writes the report.
    """
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    stream = sys.stderr if stream is None else stream
    began = time.monotonic()
    entries = expand(paths)
    results: list[Any] = [unusable(path, options) if problem else None for path, problem in entries]
    todo = [(i, path) for i, (path, problem) in enumerate(entries) if not problem]
    config = asdict(WorkerConfig(options=options.to_dict(), object_name=object_name, memory_mb=file_memory_mb,
                                 command=command))
    progress = start_progress(entries, results, stream, quiet)
    client = _connect(scheduler, connect_timeout)
    run = uuid.uuid4().hex[:8]
    failures: Counter[str] = Counter()
    seconds: list[float | None] = [None] * len(entries)
    startups: list[float] = []
    versions: set[str] = set()
    workers: set[str] = set()
    futures: dict[Any, int] = {}
    try:
        for index, path in todo:
            future = client.submit(*task_call(path, config, file_timeout), key=f"skin_audit-{run}-{index}",
                                   pure=False, retries=TASK_RETRIES)
            futures[future] = index
        for future in as_completed(list(futures), loop=client.loop):
            index = futures[future]
            path = entries[index][0]
            try:
                answer = future.result()
            except KilledWorker as exc:
                first = str(exc).split(". ")[0]  # "Attempted to run task ... on 2 different workers, but ..."
                answer = {"outcome": asdict(Outcome(path, reason="lost", error=(
                    f"{path}: its Dask workers were lost as often as the scheduler allows (KilledWorker: {first}); "
                    "if the file itself takes workers down, audit it alone with --jobs 1")))}
            except CancelledError as exc:  # the scheduler was lost (Dask cancels every future at once)
                reason = one_line(str(exc)).split(". ")[0]
                answer = {"outcome": asdict(Outcome(path, reason="lost", error=(
                    f"{path}: not audited: the connection to the Dask scheduler at {scheduler} was lost "
                    f"({reason}); check the scheduler and run again")))}
            except Exception as exc:  # raised by the task on the worker, after its retry
                answer = {"outcome": asdict(Outcome(path, reason="task", error=(
                    f"{path}: the Dask task failed ({type(exc).__name__}: {exc}); check that every worker "
                    "has skin_audit and bpy (docs/scale.md)")))}
            outcome = Outcome(**answer["outcome"])
            fa = to_file_audit(outcome)
            results[index] = fa
            if outcome.reason:
                failures[outcome.reason] += 1
            if outcome.file_audit is not None:
                seconds[index] = outcome.seconds
            startups += answer.get("startups", [])
            if answer.get("blender_version"):
                versions.add(answer["blender_version"])
            if answer.get("worker"):
                workers.add(answer["worker"])
            advance(progress, fa.status == "ok")
    except BaseException:
        client.cancel(list(futures), force=True)
        raise
    finally:
        client.close()
    result = BatchResult(
        files=tuple(results), blender_version=", ".join(sorted(versions)), jobs=len(workers),
        seconds=time.monotonic() - began, startup_seconds=tuple(startups), file_seconds=tuple(seconds),
        worker_failures=dict(failures))
    finish(progress, result.summary_line().replace("worker(s)", f"Dask worker(s) at {scheduler}", 1))
    return result
