# SPDX-License-Identifier: GPL-3.0-or-later
"""What each machine of a Dask cluster needs: the scheduler only Dask, the workers skin_audit and bpy.

The scheduler unpickles every task it is sent.  Started here in a folder and an environment
where ``import skin_audit`` fails (checked first), it must still schedule the audit's tasks;
a worker with skin_audit on its path audits the file as a local run does.
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

from .helpers import ASSETS, REPO

distributed = pytest.importorskip("distributed", reason="Dask is optional: pip install -r requirements-dev.txt")

pytestmark = [pytest.mark.blender, pytest.mark.slow]

SMALL = str(ASSETS / "RiggedSimple" / "glTF-Binary" / "RiggedSimple.glb")
#: Seconds the scheduler and worker get to start (a cold start under load is slow).
START_SECONDS = 120.0


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process we started and its children, by its process group."""
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


def _cluster(tmp_path, worker_has_skin_audit: bool):
    """``tcp://127.0.0.1:PORT`` of a scheduler that cannot import skin_audit, and one worker (that can)."""
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([sys.executable, "-c", "import skin_audit"], cwd=tmp_path, env=bare,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0, "skin_audit is importable without the repository: the test would prove nothing"
    scheduler_file = tmp_path / "scheduler.json"
    started: list[subprocess.Popen] = []
    try:
        with open(tmp_path / "scheduler.log", "wb") as log:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                cwd=tmp_path, env=bare, stdout=log, stderr=log, start_new_session=True))
        deadline = time.monotonic() + START_SECONDS
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline and started[0].poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        with open(tmp_path / "worker.log", "wb") as log:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                 "--nthreads", "1", "--no-dashboard"],
                cwd=tmp_path, env={**bare, "PYTHONPATH": str(REPO)} if worker_has_skin_audit else bare,
                stdout=log, stderr=log,
                start_new_session=True))
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=START_SECONDS)
        yield address, started[0]
    finally:
        for proc in reversed(started):
            _stop(proc)


@pytest.fixture
def scheduler_without_skin_audit(tmp_path):
    for address, _scheduler in _cluster(tmp_path, worker_has_skin_audit=True):
        yield address


@pytest.fixture
def cluster_without_skin_audit(tmp_path):
    for address, _scheduler in _cluster(tmp_path, worker_has_skin_audit=False):
        yield address


@pytest.fixture
def killable_scheduler(tmp_path):
    """(address, scheduler process) of a scheduler and one worker with skin_audit."""
    yield from _cluster(tmp_path, worker_has_skin_audit=True)


def test_a_scheduler_without_skin_audit_runs_the_audit(scheduler_without_skin_audit, bpy, options):
    from skin_audit.batch.cluster import audit_paths_on_cluster

    result = audit_paths_on_cluster([SMALL], options, scheduler=scheduler_without_skin_audit,
                                    file_timeout=300, stream=io.StringIO())
    (entry,) = [fa.to_dict() for fa in result.files]
    assert entry["status"] == "ok", entry
    assert entry["meshes"] and result.jobs == 1


def test_a_worker_without_skin_audit_is_named_in_the_files_error(cluster_without_skin_audit, bpy, options):
    from skin_audit.batch.cluster import audit_paths_on_cluster

    result = audit_paths_on_cluster([SMALL], options, scheduler=cluster_without_skin_audit,
                                    file_timeout=300, stream=io.StringIO())
    (entry,) = [fa.to_dict() for fa in result.files]
    assert entry["status"] == "error" and entry["error_kind"] == "internal", entry
    assert "ModuleNotFoundError" in entry["message"] and "'skin_audit'" in entry["message"], entry
    assert "check that every worker has skin_audit and bpy" in entry["message"]


def test_a_scheduler_lost_in_the_middle_of_a_run_ends_it_with_each_file_reported(killable_scheduler, bpy, options,
                                                                                 tmp_path):
    """The file hangs in its audit (tests/batch/fault_worker.py); the scheduler is killed once its task runs."""
    import threading

    from skin_audit.batch.cluster import audit_paths_on_cluster

    from .helpers import fault_command

    address, scheduler = killable_scheduler
    got: dict[str, object] = {}

    def run() -> None:
        try:
            got["result"] = audit_paths_on_cluster([SMALL], options, scheduler=address, stream=io.StringIO(),
                                                   command=fault_command(hang_on=Path(SMALL).name))
        except BaseException as exc:  # handed to the test's thread
            got["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    with distributed.Client(address, timeout=60) as client:
        deadline = time.monotonic() + START_SECONDS
        while not any(client.processing().values()):  # the file's task is running on the worker
            assert time.monotonic() < deadline and thread.is_alive(), got
            time.sleep(0.5)
    os.killpg(scheduler.pid, signal.SIGKILL)
    thread.join(START_SECONDS)
    assert not thread.is_alive(), "the run still waits on a scheduler that is gone"
    assert "result" in got, got
    (entry,) = [fa.to_dict() for fa in got["result"].files]
    assert entry["status"] == "error" and entry["error_kind"] == "input", entry  # exit 2: not our bug
    assert "connection to the Dask scheduler" in entry["message"] and address in entry["message"], entry
