# SPDX-License-Identifier: GPL-3.0-or-later
"""Local batch runs against the in-process run, with real Blender workers.

Same files, same JSON (input order, every field) with one and two workers; a worker
that segfaults, hangs past --file-timeout or runs out of its --file-memory-mb costs
only its own file, which says why.  Faults come from tests/batch/fault_worker.py.
"""

from __future__ import annotations

import io
import os

import pytest

from skin_audit.batch.local import audit_paths_parallel

from .helpers import BATCH_PATHS, fault_command, file_dicts

pytestmark = [pytest.mark.blender, pytest.mark.slow]

CRASHING = "RiggedSimple.glb"
HANGING = "32_weights_influence_6.blend"


def run(options, **kwargs):
    stream = io.StringIO()
    result = audit_paths_parallel(BATCH_PATHS, options, stream=stream, **kwargs)
    return result, stream.getvalue()


def without(files: list[dict], name: str) -> list[dict]:
    return [f for f in files if not f["path"].endswith(name)]


def only(files: list[dict], name: str) -> dict:
    (found,) = [f for f in files if f["path"].endswith(name)]
    return found


@pytest.mark.parametrize("jobs", [1, 2])
def test_workers_give_the_in_process_report(in_process, options, jobs):
    result, log = run(options, jobs=jobs)
    assert file_dicts(result.files) == in_process
    assert result.jobs == jobs and result.blender_version
    assert len(result.startup_seconds) == jobs and sum(s is not None for s in result.file_seconds) == 6
    # Not a terminal: no progress line, one summary line.
    assert log.count("\n") == 1 and log.startswith("skin_audit: 7 file(s)") and "6 ok, 1 error(s)" in log


def test_a_segfault_costs_only_its_file(in_process, options):
    result, log = run(options, jobs=2, command=fault_command(crash_on=CRASHING))
    files = file_dicts(result.files)
    crashed = only(files, CRASHING)
    assert crashed["status"] == "error" and crashed["meshes"] == []
    assert "signal SIGSEGV" in crashed["message"] and crashed["message"].startswith(crashed["path"])
    assert without(files, CRASHING) == without(in_process, CRASHING)
    assert result.worker_failures == {"signal": 1} and "1 signal" in log


def test_a_file_past_the_timeout_is_stopped(in_process, options):
    result, _ = run(options, jobs=2, file_timeout=3, command=fault_command(hang_on=HANGING))
    files = file_dicts(result.files)
    assert only(files, HANGING)["status"] == "error"
    assert "timeout after 3 s" in only(files, HANGING)["message"]
    assert without(files, HANGING) == without(in_process, HANGING)
    assert result.worker_failures == {"timeout": 1}


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="--file-memory-mb needs RLIMIT_AS and /proc")
def test_a_file_past_the_memory_limit_fails_alone(in_process, options):
    # 4 GB asked for under a 500 MB limit: a real MemoryError in the worker.
    result, _ = run(options, jobs=1, file_memory_mb=500, command=fault_command(hog_on=CRASHING))
    files = file_dicts(result.files)
    assert "out of memory" in only(files, CRASHING)["message"] and "500 MB" in only(files, CRASHING)["message"]
    assert without(files, CRASHING) == without(in_process, CRASHING)
    assert result.worker_failures == {"memory": 1}


def test_progress_on_a_terminal(options):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    audit_paths_parallel(BATCH_PATHS[1:], options, jobs=1, stream=stream)
    text = stream.getvalue()
    # The missing file first (no worker needed), then the two audits, then the summary over the line.
    assert "skin_audit: 3/3 files, about 0 s left: 1 failed so far" in text
    assert text.endswith("\n") and text.count("\n") == 1 and "skin_audit: 3 file(s)" in text
