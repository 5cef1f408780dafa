# SPDX-License-Identifier: GPL-3.0-or-later
"""The whole hostile folder in one run, and Ctrl-C, through ``python -m skin_audit`` as a pipeline runs it.

A folder run always completes: every file gets ``ok`` or ``error`` with one line
naming it, nothing internal, and the report validates against the schema.  A
SIGINT while the glTF importer works stops the run with exit 130 and writes no
report (an existing one is left byte for byte).
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import REPO, files_by_name, strict_report

pytestmark = pytest.mark.blender

ASSETS = REPO / "tests" / "assets"


def test_a_folder_of_every_hostile_rig_completes_with_a_complete_report(hostile_dir, tmp_path):
    target = tmp_path / "report.json"
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "skin_audit", "audit", str(hostile_dir), "--json", str(target)],
                            cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr[-3000:]  # some files cannot be audited; no internal error
    report = strict_report(target)
    inputs = sorted(p for p in hostile_dir.rglob("*") if p.suffix in (".blend", ".gltf", ".glb", ".fbx"))
    files = files_by_name(report)
    assert sorted(files) == sorted(p.name for p in inputs)
    assert report["summary"]["files"] == len(inputs)
    for name, entry in files.items():
        assert entry["status"] in ("ok", "error"), name
        assert entry.get("error_kind") != "internal", entry
        if entry["status"] == "error":
            assert "\n" not in entry["message"] and name in entry["message"], entry["message"]
    expected_errors = {"zero_bone.blend", "zero_scale.blend", "nan_ibm.gltf", "bad_joints.gltf", "random_body.fbx",
                       "truncated.glb", "not_a_blend.blend", "uses_missing_library.blend"}
    assert {n for n, e in files.items() if e["status"] == "error"} == expected_errors
    assert files["good.blend"]["status"] == "ok"
    assert "Traceback" not in result.stdout
    # The corrupt FBX is refused before the importer sees it (it used to cost 10 to 70 s).
    assert "corrupt FBX" in files["random_body.fbx"]["message"]
    assert elapsed < 300


def _gltf_folder(tmp_path: Path, copies: int) -> Path:
    folder = tmp_path / "rigs"
    folder.mkdir()
    source = ASSETS / "CesiumMan" / "glTF-Binary" / "CesiumMan.glb"
    for k in range(copies):
        shutil.copy(source, folder / f"man_{k:02d}.glb")
    return folder


def _prepare(tmp_path: Path, existing: bool) -> tuple[Path, Path]:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "report.json"
    if existing:
        target.write_text('{"old": "report"}\n', encoding="utf-8")
    return out, target


def _assert_nothing_written(out: Path, target: Path, existing: bool) -> None:
    if existing:
        assert target.read_text(encoding="utf-8") == '{"old": "report"}\n'
    else:
        assert not target.exists()
    assert os.listdir(out) == (["report.json"] if existing else [])  # no staging folder left behind


@pytest.mark.parametrize("existing", [False, True])
def test_ctrl_c_inside_the_gltf_importer_stops_the_run_with_exit_130_and_no_report(tmp_path, existing):
    # One file is audited in this process: the SIGINT lands inside Blender's glTF importer, which
    # catches every exception (it used to report the valid file "cannot be read" and write a report).
    source = ASSETS / "CesiumMan" / "glTF-Binary" / "CesiumMan.glb"
    out, target = _prepare(tmp_path, existing)
    proc = subprocess.Popen([sys.executable, "-u", "-m", "skin_audit", "audit", str(source), "--json", str(target)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if "Data are loaded" in line:  # the importer logs this mid-import
                proc.send_signal(signal.SIGINT)
                break
        _, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = "".join(seen) + rest
    assert any("Data are loaded" in line for line in seen), stderr[-3000:]
    assert proc.returncode == 130, stderr[-3000:]
    assert "interrupted" in stderr
    _assert_nothing_written(out, target, existing)


@pytest.mark.parametrize("existing", [False, True])
def test_ctrl_c_on_a_folder_run_in_workers_exits_130_and_writes_no_report(tmp_path, existing):
    # A terminal's Ctrl-C reaches the whole process group: the run and its Blender workers.
    # stderr is a pseudo-terminal so the run prints its progress ("3/40 files"); the interrupt
    # goes out once files are done and most remain: mid-run whatever the machine's speed.
    folder = _gltf_folder(tmp_path, 40)
    out, target = _prepare(tmp_path, existing)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "skin_audit", "audit", str(folder), "--json", str(target),
                             "--jobs", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=slave, text=True,
                            start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        while not re.search(rb"skin_audit: ([2-9]|\d\d)/40 files", seen):
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the run ended and closed the terminal
                chunk = b""
            if not chunk:
                break
            seen += chunk
        assert proc.poll() is None, "the run ended before the interrupt: " + seen.decode(errors="replace")[-2000:]
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=300)
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    stderr = seen.decode(errors="replace")
    assert proc.returncode == 130, stderr[-3000:]
    assert "interrupted" in stderr
    _assert_nothing_written(out, target, existing)
