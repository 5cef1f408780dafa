# SPDX-License-Identifier: GPL-3.0-or-later
"""Batch audits through a real Dask cluster on 127.0.0.1, started and stopped here.

A scheduler and two workers (``dask scheduler`` / ``dask worker`` processes, with
nannies that restart a killed worker, as a deployment runs them) audit the same files
as the local run and give the same report; a Dask worker killed in the middle of a
file costs nothing (the file is re-run on another worker) and leaves no audit process
behind; a file that kills every worker it lands on is re-run once, then reported
(scheduler started with ``allowed-failures`` 1 and ``worker-saturation`` 1.0, as
docs/scale.md says); a path a
worker cannot see is reported for that file.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import BATCH_PATHS, REPO, fault_command, file_dicts

distributed = pytest.importorskip("distributed", reason="Dask is optional: pip install -r requirements-dev.txt")

pytestmark = [pytest.mark.blender, pytest.mark.slow]

KILLED_ONCE = "RiggedSimple.gltf"
KILLS_ALWAYS = "32_weights_influence_9.blend"


def orphaned_audit_processes() -> list[str]:
    """Audit worker processes whose Dask worker is gone (a killed worker must take its Blender along)."""
    def cmdline(pid: str) -> str:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read().replace(b"\0", b" ").decode()
        except OSError:
            return ""

    orphans = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        line = cmdline(pid)
        if "fault_worker.py" in line:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parent = f.read().rsplit(")", 1)[1].split()[1]
            except OSError:
                continue
            # Its parent is a Dask worker (its process title, or how the nanny spawns it), or it is an orphan.
            if not any(mark in cmdline(parent) for mark in ("dask worker", "dask_worker", "spawn_main")):
                orphans.append(f"{pid} (parent {parent}: {cmdline(parent)[:80]!r}): {line[:120]}")
    return orphans


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process we started and its children (a worker's nanny and its Blenders)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """``tcp://127.0.0.1:PORT`` of a scheduler and two single-thread workers, stopped after the module."""
    folder = tmp_path_factory.mktemp("dask")
    scheduler_file = folder / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": str(REPO),
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
           # One task at a time per single-thread worker: a lost worker then counts against its running
           # task only, not against a queued innocent one too (docs/scale.md).
           "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}
    started: list[subprocess.Popen] = []
    try:
        log = open(folder / "scheduler.log", "wb")  # noqa: SIM115 (closed with the processes)
        started.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(scheduler_file)],
            env=env, stdout=log, stderr=log, start_new_session=True))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline, (folder / "scheduler.log").read_text()
            assert started[0].poll() is None, (folder / "scheduler.log").read_text()
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for n in range(2):
            wlog = open(folder / f"worker{n}.log", "wb")  # noqa: SIM115
            started.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                 "--nthreads", "1", "--no-dashboard", "--name", f"w{n}"],
                env=env, stdout=wlog, stderr=wlog, start_new_session=True))
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for proc in reversed(started):
            _stop(proc)


def test_the_cluster_gives_the_local_report(scheduler, in_process, options):
    from skin_audit.batch.cluster import audit_paths_on_cluster

    stream = io.StringIO()
    result = audit_paths_on_cluster(BATCH_PATHS, options, scheduler=scheduler, stream=stream)
    assert file_dicts(result.files) == in_process
    assert result.blender_version and result.jobs == 2, result
    assert stream.getvalue().startswith("skin_audit: 7 file(s)") and scheduler in stream.getvalue()


def test_lost_workers_are_retried_once_then_reported(scheduler, in_process, options, tmp_path):
    """KILLED_ONCE SIGKILLs its Dask worker once: re-run elsewhere, its result is the local one.
    KILLS_ALWAYS SIGKILLs every worker it lands on: tried twice, then reported."""
    from skin_audit.batch.cluster import audit_paths_on_cluster

    marker = tmp_path / "killed"
    command = fault_command(kill_parent_once_on=f"{KILLED_ONCE}:{marker}", kill_parent_on=KILLS_ALWAYS)
    result = audit_paths_on_cluster(BATCH_PATHS, options, scheduler=scheduler, command=command,
                                    stream=io.StringIO())
    assert marker.exists(), "the fault never fired: no worker was killed"
    files = file_dicts(result.files)
    (lost,) = [f for f in files if f["path"].endswith(KILLS_ALWAYS)]
    assert lost["status"] == "error" and "KilledWorker" in lost["message"], lost
    assert "on 2 different workers" in lost["message"], lost  # the first try and one retry
    assert [f for f in files if f is not lost] == [f for f in in_process if not f["path"].endswith(KILLS_ALWAYS)]
    assert result.worker_failures == {"lost": 1}
    assert not orphaned_audit_processes()


def test_a_path_missing_on_the_worker_is_that_files_error(scheduler, options):
    from skin_audit.batch.cluster import audit_task
    from skin_audit.batch.process import WorkerConfig

    config = {**WorkerConfig(options=options.to_dict()).__dict__, "options": options.to_dict()}
    missing = str(Path("/nonexistent-share/library/hero.blend"))
    with distributed.Client(scheduler, timeout=60) as client:
        answer = client.submit(audit_task, missing, config, None, pure=False).result(timeout=120)
    assert answer["outcome"]["file_audit"] is None
    assert answer["outcome"]["error"].startswith(f"{missing}: not found on the Dask worker tcp://127.0.0.1:")
    assert "same path on every worker" in answer["outcome"]["error"]
