# SPDX-License-Identifier: GPL-3.0-or-later
"""The command line through a real Blender executable (Debian's 3.4 in CI): the twist experiment,

    blender --background --factory-startup --python scripts/skin_audit_blender.py -- demo ...

the ``--command`` handler with Blender's own Ctrl-C handler in place, and a file saved by a
newer Blender than this executable.

No ``bpy`` in this process. Skipped when ``blender`` is not on PATH, unless
SKIN_AUDIT_REQUIRE_SYSTEM_BLENDER=1 (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.blender_executables import blender_env, blender_version, system_blender

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "skin_audit_blender.py"
OUTPUTS = {"twist_scene.json", "twist_radii.csv", "twist_wireframe.svg", "twist_summary.txt"}
ANGLES = (0.0, 90.0, 180.0)
METHODS = ("lbs", "dqs")  # the default --method is both


@pytest.fixture(scope="module")
def blender_exe() -> str:
    return system_blender()


def run_blender(exe: str, *args: str, script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [exe, "--background", "--factory-startup", "--python", str(script), "--", *args],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False, env=blender_env(),
    )


def degenerate_count(points: np.ndarray, triangles: np.ndarray, bind: np.ndarray) -> int:
    """Triangles below 1e-6 of the mean bind area (measured gap: <= 1e-15 vs >= 0.35)."""

    def areas(p):
        a, b, c = (p[triangles[:, k]] for k in range(3))
        return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)

    return int((areas(points) < 1e-6 * areas(bind).mean()).sum())


@pytest.fixture(scope="module")
def system_demo(blender_exe, tmp_path_factory):
    out = tmp_path_factory.mktemp("system_demo")
    result = run_blender(blender_exe, "demo", "--out", str(out), "--angles", "0,90,180")
    return SimpleNamespace(out=out, result=result)


def test_demo_exits_0_and_writes_four_files(system_demo):
    assert system_demo.result.returncode == 0, system_demo.result.stdout + system_demo.result.stderr
    assert {p.name for p in system_demo.out.iterdir()} == OUTPUTS
    assert "twist_scene.json" in system_demo.result.stdout


def test_numbers_match_the_closed_form(system_demo):
    assert system_demo.result.returncode == 0, system_demo.result.stderr
    with (system_demo.out / "twist_radii.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(METHODS) * len(ANGLES) * 9
    mid = {(r["method"], float(r["angle_deg"])): r for r in rows if float(r["z"]) == pytest.approx(1.0)}
    half_sqrt2 = math.cos(math.pi / 4.0)
    assert abs(float(mid["lbs", 90.0]["blender_ratio"]) - half_sqrt2) < 1e-6
    assert abs(float(mid["lbs", 90.0]["numpy_ratio"]) - half_sqrt2) < 1e-6
    assert float(mid["lbs", 180.0]["blender_ratio"]) < 1e-6
    assert abs(float(mid["dqs", 180.0]["blender_ratio"]) - 1.0) < 1e-6

    scene = json.loads((system_demo.out / "twist_scene.json").read_text(encoding="utf-8"))
    bind = np.array(scene["mesh"]["bind_vertices"])
    tris = np.array(scene["mesh"]["triangles"])
    counts = {(p["method"], p["angle_deg"]): degenerate_count(np.array(p["blender_positions"]), tris, bind)
              for p in scene["poses"]}
    assert counts == {("lbs", 0.0): 0, ("lbs", 90.0): 0, ("lbs", 180.0): 48,
                      ("dqs", 0.0): 0, ("dqs", 90.0): 0, ("dqs", 180.0): 0}
    # LBS positions on the closed form (1 - w) p + w Rz(theta) p, w = z/2.
    w = bind[:, 2:3] / 2.0
    for p in scene["poses"]:
        if p["method"] != "lbs":
            continue
        theta = math.radians(p["angle_deg"])
        c, s = math.cos(theta), math.sin(theta)
        x, y = bind[:, 0], bind[:, 1]
        rotated = np.column_stack([c * x - s * y, s * x + c * y, bind[:, 2]])
        assert np.abs(np.array(p["blender_positions"]) - ((1.0 - w) * bind + w * rotated)).max() < 4e-6


def test_blender_output_passes_the_independent_verifier(system_demo):
    assert system_demo.result.returncode == 0, system_demo.result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "skin_audit", "verify", str(system_demo.out / "twist_scene.json")],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr


def test_missing_output_folder_exits_2(blender_exe, tmp_path):
    missing = tmp_path / "missing"
    result = run_blender(blender_exe, "demo", "--out", str(missing))
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(missing) in result.stderr
    assert not missing.exists()


def test_bad_angles_exit_2(blender_exe, tmp_path):
    result = run_blender(blender_exe, "demo", "--out", str(tmp_path), "--angles", "abc")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--angles" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_exits_0(blender_exe):
    result = run_blender(blender_exe, "--help")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "demo" in result.stdout and "verify" in result.stdout


# ------------------------------------------------ the --command handler inside the Blender executable

COMMAND_SCRIPT = REPO / "tests" / "cli" / "blender_command_sigint.py"
CYLINDER = REPO / "tests" / "assets" / "BlenderIO_03_skinned_cylinder" / "03_skinned_cylinder.blend"


def test_command_handler_returns_the_audit_exit_code_and_gives_ctrl_c_back_to_blender(blender_exe, tmp_path):
    """Inside the Blender executable ``signal.getsignal(SIGINT)`` is None (Blender set its handler
    in C); the handler ``blender --command skin_audit`` calls must still return the audit's exit
    code (1: a WARNING at --fail-on warning), not 3, and leave Blender's own handler in place:
    a Ctrl-C afterwards is Blender's break event, not a KeyboardInterrupt or the end of the process."""
    out = tmp_path / "report.json"
    # The raw target keeps the cylinder's weight sums as stored: its one WARNING.
    result = run_blender(blender_exe, "audit", str(CYLINDER), "--target", "raw", "--fail-on", "warning",
                         "--json", str(out), script=COMMAND_SCRIPT)
    told = result.stdout + result.stderr
    assert "SIGINT before: None" in result.stdout, told  # the state --command runs in
    assert result.returncode == 1, told
    report = json.loads(out.read_text(encoding="utf-8"))
    (mesh,) = report["files"][0]["meshes"]
    assert {f["code"]: f["severity"] for f in mesh["findings"]}["weights-not-normalized"] == "WARNING"
    assert "Sent an internal break event" in result.stdout, told  # Blender's own background handler
    assert "survived Ctrl-C" in result.stdout, told
    assert "KeyboardInterrupt" not in told and "internal error" not in told


# ------------------------------------------------ a file saved by a newer Blender

def _save_with_bpy(path: Path, compress: bool) -> tuple[int, int]:
    """Save a small scene with this test's ``bpy`` (in a process of its own); its (major, minor)."""
    code = ("import sys, bpy; bpy.ops.wm.read_factory_settings(use_empty=True); "
            "bpy.ops.mesh.primitive_cube_add(); "
            f"bpy.ops.wm.save_as_mainfile(filepath={str(path)!r}, compress={compress}); "
            "print('version', *bpy.app.version[:2])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    line = [ln for ln in result.stdout.splitlines() if ln.startswith("version ")]
    assert result.returncode == 0 and line and path.is_file(), result.stdout + result.stderr
    major, minor = line[-1].split()[1:]
    return int(major), int(minor)


@pytest.mark.parametrize("compress", [False, True], ids=["uncompressed", "zstd"])
def test_a_file_from_a_newer_blender_names_the_blender_that_saved_it(blender_exe, tmp_path, compress):
    """Blender 3.4 calls a file saved by Blender 5.x "not a blend file"; the audit says which
    Blender saved it (the version of the ``bpy`` that saved it) and exits 2."""
    path = tmp_path / "newer.blend"
    saved = _save_with_bpy(path, compress)
    running = blender_version(blender_exe)
    if saved <= running:
        pytest.skip(f"the bpy module (Blender {saved}) is not newer than {blender_exe} (Blender {running})")
    out = tmp_path / "report.json"
    result = run_blender(blender_exe, "audit", str(path), "--json", str(out))
    told = result.stdout + result.stderr
    assert result.returncode == 2, told
    expected = (f"saved by Blender {saved[0]}.{saved[1]}, newer than this Blender {running[0]}.{running[1]}: "
                f"open it with Blender {saved[0]}.{saved[1]} or newer")
    assert expected in told, told
    (entry,) = json.loads(out.read_text(encoding="utf-8"))["files"]
    assert entry["status"] == "error" and expected in entry["message"], entry
