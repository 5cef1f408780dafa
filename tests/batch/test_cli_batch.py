# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit audit`` with the batch options, as a pipeline runs it.

The JSON report's files equal the in-process run's and the exit code is the one the
in-process run gives; a Ctrl-C stops the run with 130 and leaves no worker behind;
options that cannot go together exit 2 before any work.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .helpers import BATCH_PATHS, REPO

pytestmark = [pytest.mark.blender, pytest.mark.slow]


def cli(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "skin_audit", "audit", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def children_of(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def test_jobs_2_writes_the_in_process_report(in_process_run, tmp_path):
    report = tmp_path / "report.json"
    proc = cli(*BATCH_PATHS, "--jobs", "2", "--file-timeout", "120", "--json", str(report))
    out, err = proc.communicate(timeout=300)
    # A file that could not be audited (the missing path) gives 2, as in-process.
    assert proc.returncode == 2, (out, err)
    assert json.loads(report.read_text())["files"] == in_process_run
    assert "skin_audit: 7 file(s)" in err and "with 2 worker(s): 6 ok, 1 error(s)" in err


def test_ctrl_c_stops_the_run_and_its_workers(tmp_path):
    proc = cli(*BATCH_PATHS, "--jobs", "2", "--json", str(tmp_path / "report.json"))
    deadline = time.monotonic() + 60
    while len(children_of(proc.pid)) < 2:  # both workers started
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    workers = children_of(proc.pid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and not (tmp_path / "report.json").exists()
    for pid in workers:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize("flags", [["--jobs", "2", "--html", "x.html"], ["--jobs", "0"], ["--file-timeout", "-1"],
                                   ["--file-memory-mb", "lots"],
                                   ["--jobs", "2", "--scheduler", "tcp://127.0.0.1:9"]])
def test_unusable_batch_options_exit_2(tmp_path, flags):
    proc = cli(BATCH_PATHS[1], *[str(tmp_path / f) if f.endswith(".html") else f for f in flags])
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    assert not list(tmp_path.iterdir())


SIGNAL_WRAPPER = r"""
import functools
import runpy
import sys

import skin_audit.batch.local as local
from tests.batch.helpers import fault_command

# The real local runner, with the test-only worker that sends itself SIGSEGV on one file.
local.audit_paths_parallel = functools.partial(local.audit_paths_parallel,
                                               command=fault_command(crash_on=sys.argv[1]))
sys.argv = ["skin_audit", *sys.argv[2:]]
runpy.run_module("skin_audit", run_name="__main__")
"""


def test_a_worker_killed_by_a_signal_is_an_input_error_exit_2(tmp_path):
    """Blender dying on a file is the file's fault (error_kind input, exit 2), not ours (3)."""
    glb, gltf = BATCH_PATHS[1], BATCH_PATHS[2]
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-c", SIGNAL_WRAPPER, "RiggedSimple.glb", "audit", glb, gltf, "--jobs", "1",
                           "--json", str(report)], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, (done.stdout[-3000:], done.stderr[-3000:])
    crashed, fine = json.loads(report.read_text())["files"]
    assert (crashed["path"], crashed["status"], crashed["error_kind"]) == (glb, "error", "input")
    assert "died with signal SIGSEGV" in crashed["message"]
    assert fine["status"] == "ok" and "error_kind" not in fine
