# SPDX-License-Identifier: GPL-3.0-or-later
"""The whole hostile folder in one run, and Ctrl-C, through ``python -m skin_audit`` as a pipeline runs it.

A folder run always completes: every file gets ``ok`` or ``error`` with one line
naming it, nothing internal, and the report validates against the schema.  A
SIGINT while the glTF importer works stops the run with exit 130 and writes no
report (an existing one is left byte for byte).
"""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("existing", [False, True])
def test_ctrl_c_inside_the_gltf_importer_stops_the_run_with_exit_130_and_no_report(tmp_path, existing):
    folder = _gltf_folder(tmp_path, 12)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "report.json"
    if existing:
        target.write_text('{"old": "report"}\n', encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-u", "-m", "skin_audit", "audit", str(folder), "--json", str(target)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        # The glTF importer logs while it works: interrupt on its second file, mid-import.
        imports = 0
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if "Data are loaded" in line:
                imports += 1
                if imports == 2:
                    proc.send_signal(signal.SIGINT)
                    break
        _, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = "".join(seen) + rest
    assert imports == 2, stderr[-3000:]
    assert proc.returncode == 130, stderr[-3000:]
    assert "interrupted" in stderr
    if existing:
        assert target.read_text(encoding="utf-8") == '{"old": "report"}\n'
    else:
        assert not target.exists()
    assert os.listdir(out) == (["report.json"] if existing else [])  # no staging folder left behind
