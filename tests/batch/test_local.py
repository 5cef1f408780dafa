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
HOGGING = "RiggedSimple.gltf"


def run(options, **kwargs):
    stream = io.StringIO()
    result = audit_paths_parallel(BATCH_PATHS, options, stream=stream, **kwargs)
    return result, stream.getvalue()


def only(files: list[dict], name: str) -> dict:
    (found,) = [f for f in files if f["path"].endswith(name)]
    return found


def test_a_worker_gives_the_in_process_report(in_process, options):
    # Two workers: tests/batch/test_cli_batch.py and the fault test below.
    result, log = run(options, jobs=1)
    assert file_dicts(result.files) == in_process
    assert result.jobs == 1 and result.blender_version
    assert len(result.startup_seconds) == 1 and sum(s is not None for s in result.file_seconds) == 6
    # Not a terminal: no progress line, one summary line.
    assert log.count("\n") == 1 and log.startswith("skin_audit: 7 file(s)") and "6 ok, 1 error(s)" in log


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="--file-memory-mb needs RLIMIT_AS and /proc")
def test_a_crash_a_hang_and_a_memory_hog_cost_only_their_files(in_process, options):
    # One run, three faults (tests/batch/fault_worker.py): a SIGSEGV, a sleep past the
    # timeout, and 4 GB asked for under a 500 MB limit (a real MemoryError).
    result, log = run(options, jobs=2, file_timeout=8, file_memory_mb=500,
                      command=fault_command(crash_on=CRASHING, hang_on=HANGING, hog_on=HOGGING))
    files = file_dicts(result.files)
    crashed, hung, hog = only(files, CRASHING), only(files, HANGING), only(files, HOGGING)
    assert crashed["status"] == hung["status"] == hog["status"] == "error"
    assert crashed["meshes"] == hung["meshes"] == hog["meshes"] == []
    assert crashed["message"].startswith(crashed["path"] + ": ") and "signal SIGSEGV" in crashed["message"]
    # Each is the file's own fault (Blender crashing, too slow, too big), never ours.
    assert crashed["error_kind"] == hung["error_kind"] == hog["error_kind"] == "input"
    assert "timeout after 8 s" in hung["message"]
    assert "out of memory" in hog["message"] and "500 MB" in hog["message"]
    faulty = {crashed["path"], hung["path"], hog["path"]}
    assert [f for f in files if f["path"] not in faulty] == [f for f in in_process if f["path"] not in faulty]
    assert result.worker_failures == {"signal": 1, "timeout": 1, "memory": 1}
    assert "1 memory, 1 signal, 1 timeout" in log


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
