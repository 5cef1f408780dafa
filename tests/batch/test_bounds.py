# SPDX-License-Identifier: GPL-3.0-or-later
"""Every wait of a batch run is bounded and every failure has its documented exit code.

Absurd option values are bad usage (exit 2, with the allowed range); a wait longer than
select() can hold never kills the thread that waits; a scheduler that accepts and never
answers, or answers garbage, is an input error within the connect timeout; a file that runs
out of memory under --file-memory-mb says so (exit 2), wherever the allocation failed.

Servers here listen on 127.0.0.1 and run on daemon threads; every wait on them is bounded,
so broken code fails a test instead of hanging it.
"""

from __future__ import annotations

import io
import os
import socket
import threading
from pathlib import Path

import pytest

from .helpers import ASSETS, fault_command

pytestmark = [pytest.mark.blender]

SMALL = str(ASSETS / "RiggedSimple" / "glTF-Binary" / "RiggedSimple.glb")
#: Seconds a test waits for a run that should end within its connect timeout, before failing it.
BOUND_SECONDS = 90.0


def _main(capsys, *args: str) -> tuple[int, str]:
    """The command line in this process: (exit code, everything written to stderr, argparse's too)."""
    from skin_audit.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, err.getvalue() + capsys.readouterr().err


@pytest.mark.parametrize("option, value, words", [
    ("--file-timeout", "1e300", "at most 604800"),
    ("--file-timeout", "inf", "at most 604800"),
    ("--file-timeout", "0", "> 0"),
    ("--file-memory-mb", "99999999999999", "between 1 and 16777216"),
    ("--file-memory-mb", "0", "between 1 and 16777216"),
    ("--scheduler", "http://[::1", "Invalid IPv6 URL"),
    ("--scheduler", "tcp://127.0.0.1:99999", "Port out of range"),
    ("--scheduler", "http://127.0.0.1:8786", "expected tcp://HOST:PORT"),
    ("--scheduler", "tcp://127.0.0.1", "expected tcp://HOST:PORT"),
])
def test_absurd_batch_options_are_bad_usage_naming_the_range(capsys, option, value, words):
    code, err = _main(capsys, "audit", "no_such_rig.glb", option, value)
    assert code == 2, err
    assert option in err and words in err, err


def test_a_wait_longer_than_select_can_hold_still_returns_the_files_result(bpy, options):
    """The library API takes any float: a deadline of 1e300 s is waited for in bounded steps."""
    from skin_audit.batch.process import WorkerConfig, WorkerProcess, to_file_audit

    worker = WorkerProcess(WorkerConfig(options=options.to_dict()))
    try:
        outcome = worker.audit(SMALL, 1e300)
    finally:
        worker.stop()
    assert outcome.error == "" and to_file_audit(outcome).status == "ok", outcome


def _serve(mode: str) -> tuple[str, threading.Event]:
    """``tcp://127.0.0.1:PORT`` of a server that accepts and then stays silent or sends garbage."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(1.0)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if mode == "garbage":
                conn.sendall(b"\xff" * 4096)
        for conn in held:
            conn.close()
        server.close()

    threading.Thread(target=accept, daemon=True).start()
    return f"tcp://127.0.0.1:{server.getsockname()[1]}", stop


@pytest.mark.parametrize("mode", ["silent", "garbage"])
def test_a_scheduler_that_never_answers_or_sends_garbage_is_an_input_error_in_bounded_time(bpy, options, mode):
    pytest.importorskip("distributed", reason="Dask is optional: pip install -r requirements-dev.txt")
    from skin_audit.batch.cluster import audit_paths_on_cluster
    from skin_audit.core.errors import InputError

    address, stop = _serve(mode)
    got: dict[str, BaseException] = {}

    def run() -> None:
        try:
            audit_paths_on_cluster([SMALL], options, scheduler=address, connect_timeout=3, stream=io.StringIO())
        except BaseException as exc:  # handed to the test's thread
            got["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_SECONDS)
    stop.set()
    assert not thread.is_alive(), f"still waiting on {address} after {BOUND_SECONDS} s"
    error = got.get("error")
    assert isinstance(error, InputError), repr(error)
    assert address in str(error) and "is it a Dask scheduler?" in str(error)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="--file-memory-mb needs RLIMIT_AS and /proc")
def test_running_out_of_memory_inside_the_audit_is_the_documented_message_not_an_internal_error(options):
    """4 GB asked for inside the audit's own guard (where a large rig's arrays are) under a 500 MB limit."""
    from skin_audit.batch.local import audit_paths_parallel

    name = Path(SMALL).name
    result = audit_paths_parallel([SMALL], options, jobs=1, file_memory_mb=500, file_timeout=300,
                                  command=fault_command(hog_inside_on=name), stream=io.StringIO())
    (entry,) = [fa.to_dict() for fa in result.files]
    assert entry["status"] == "error" and entry["error_kind"] == "input", entry  # exit 2, not 3
    assert entry["message"].startswith(f"{SMALL}: out of memory"), entry
    assert "(--file-memory-mb)" in entry["message"] and "500 MB" in entry["message"]
    assert result.worker_failures == {"memory": 1}


def test_out_of_memory_in_this_process_is_an_input_error_and_the_run_goes_on(bpy, options):
    from skin_audit.blender.run.guarded import guarded_audit

    def hungry(path, options, object_name=None):
        raise MemoryError

    entry = guarded_audit(hungry, Path("big.blend"), options).to_dict()
    assert entry["status"] == "error" and entry["error_kind"] == "input", entry
    assert entry["message"].startswith("big.blend: out of memory"), entry
