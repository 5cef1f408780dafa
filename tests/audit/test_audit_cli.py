# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit audit`` as a pipeline runs it: a subprocess with this venv's Python.

Exit codes (0 nothing at or above --fail-on, 1 something is, 2 a file could not
be audited or bad usage), the JSON report against the documented contract
(docs/report-format.md), files that are missing, corrupt or not rigs, and a
.blend whose scripts would write marker files if they ever ran.  The same audit
through a real ``blender`` executable is at the end (skipped without one).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skin_audit
from tests.blender_executables import blender_env, system_blender

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "tests" / "assets"  # copies of public rigs, with their licences
BLENDER_IO_03 = ASSETS / "BlenderIO_03_skinned_cylinder" / "03_skinned_cylinder.blend"
PARENT_IS_SKINED = ASSETS / "BlenderIO_parent_is_skined" / "parent_is_skined.blend"
RIGGED_SIMPLE = ASSETS / "RiggedSimple" / "glTF-Binary" / "RiggedSimple.glb"
SIMPLE_SKIN_EMBEDDED = ASSETS / "SimpleSkin" / "glTF-Embedded" / "SimpleSkin.gltf"
SEVERITIES = {"INFO", "WARNING", "ERROR"}


@pytest.fixture(scope="module", autouse=True)
def assets_present():
    if not ASSETS.is_dir():
        pytest.fail(f"the real rigs are missing: expected {ASSETS} (tests/assets in the repository)", pytrace=False)


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skin_audit", "audit", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def skin_audit_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    # No allowance for bpy 4.2's exit crash: __main__ leaves with os._exit, so a crash is a regression.
    return run_cli(*args)


def explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"


def check_contract(report: dict) -> None:
    """The report's shape as docs/report-format.md documents it (format version 2)."""
    assert report["format"] == "skin_audit.report" and report["format_version"] == 2
    assert report["tool"] == {"name": "skin_audit", "version": skin_audit.__version__}
    assert isinstance(report["blender_version"], str) and report["blender_version"]
    assert isinstance(report["options"], dict)
    summary = report["summary"]
    assert summary["files"] == len(report["files"])
    assert summary["files_with_errors"] == sum(f["status"] != "ok" for f in report["files"])
    assert summary["meshes"] == sum(len(f["meshes"]) for f in report["files"])
    assert summary["rigs"] == sum(len(f["rigs"]) for f in report["files"])
    severities = [x["severity"] for f in report["files"] for m in (*f["rigs"], *f["meshes"]) for x in m["findings"]]
    rank = ["INFO", "WARNING", "ERROR"]
    assert summary["worst_severity"] == (max(severities, key=rank.index) if severities else None)
    for f in report["files"]:
        assert isinstance(f["path"], str) and f["status"] in ("ok", "error")
        assert isinstance(f["meshes"], list) and isinstance(f["rigs"], list)
        if f["status"] == "error":
            assert isinstance(f["message"], str) and f["message"] and f["meshes"] == [] and f["rigs"] == []
        # One rig entry per armature, naming exactly the meshes it deforms.
        assert sorted(r["armature"] for r in f["rigs"]) == sorted({r["armature"] for r in f["rigs"]})
        deformed = {}
        for m in f["meshes"]:
            deformed.setdefault(m["armature"], []).append(m["object"])
        assert {r["armature"]: sorted(r["meshes"]) for r in f["rigs"] if r["meshes"]} == \
            {a: sorted(ms) for a, ms in deformed.items()}
        for m in f["meshes"]:
            assert isinstance(m["object"], str) and isinstance(m["armature"], str)
            assert isinstance(m["vertices"], int) and m["vertices"] > 0
            metrics = m["metrics"]
            for key in ("max_bind_drift", "max_numpy_vs_blender", "max_engine_divergence"):
                assert metrics[key] is None or isinstance(metrics[key], float), key
            assert isinstance(metrics["max_influences"], int)
            for x in m["findings"]:
                assert isinstance(x["code"], str) and x["severity"] in SEVERITIES
                assert isinstance(x["message"], str) and x["message"]
                assert isinstance(x["count"], int) and x["count"] >= 0
                assert all(isinstance(v, int) and 0 <= v < m["vertices"] for v in x["vertices"])
                assert len(x["vertices"]) == min(x["vertices_total"], 1000)
                if x["vertices_total"]:
                    assert x["count"] == x["vertices_total"]
                assert all(isinstance(b, str) for b in x["bones"])
                assert all(isinstance(g, str) for g in x["groups"])


def read_report(path: Path) -> dict:
    report = json.loads(path.read_text(encoding="utf-8"))
    check_contract(report)
    return report


def findings(report: dict, file_index: int = 0) -> dict[str, dict]:
    return {x["code"]: x for m in report["files"][file_index]["meshes"] for x in m["findings"]}


# ------------------------------------------------------------ exit codes and the report


def test_clean_rigs_exit_0_with_a_valid_report(bpy, tmp_path):
    out = tmp_path / "report.json"
    result = skin_audit_cli(RIGGED_SIMPLE, SIMPLE_SKIN_EMBEDDED, "--json", out, "--weight-tolerance", "gltf")
    assert result.returncode == 0, explain(result)
    report = read_report(out)
    assert report["blender_version"] == bpy.app.version_string
    assert report["options"]["weight_tolerance"] == "gltf" and report["options"]["fail_on"] == "error"
    assert [f["status"] for f in report["files"]] == ["ok", "ok"]
    assert [m["vertices"] for f in report["files"] for m in f["meshes"]] == [160, 10]
    assert "2 file(s), 0 unreadable, 2 mesh(es)" in result.stdout
    assert "glTF import" not in result.stdout  # importer chatter goes to stderr


@pytest.mark.blender42
def test_fail_on_sets_the_exit_code(tmp_path):
    out = tmp_path / "report.json"
    # raw keeps the sums as stored (the default threejs reads the exporter's normalised weights: INFO).
    warning = skin_audit_cli(BLENDER_IO_03, "--target", "raw", "--fail-on", "warning", "--json", out)
    assert warning.returncode == 1, explain(warning)
    report = read_report(out)
    assert report["summary"]["worst_severity"] in ("WARNING", "ERROR")
    f = findings(report)["weights-not-normalized"]
    assert (f["severity"], f["count"], f["vertices"]) == ("WARNING", 160, list(range(160)))
    assert report["options"]["fail_on"] == "warning"
    never = skin_audit_cli(BLENDER_IO_03, "--fail-on", "never")
    assert never.returncode == 0, explain(never)
    assert "weights-not-normalized" in never.stdout


def test_max_influences_option(tmp_path):
    out = tmp_path / "report.json"
    path = ASSETS / "BlenderIO_32_weights_influence" / "32_weights_influence_6.blend"
    result = skin_audit_cli(path, "--max-influences", "10", "--json", out)
    assert result.returncode == 0, explain(result)
    report = read_report(out)
    assert report["options"]["max_influences"] == 10
    codes = {x["code"] for m in report["files"][0]["meshes"] for x in m["findings"]}
    assert "too-many-influences" not in codes  # 10 influences at most in this file
    assert max(m["metrics"]["max_influences"] for m in report["files"][0]["meshes"]) == 10


def test_bad_files_exit_2_and_a_folder_run_goes_on(bpy, tmp_path):
    folder = tmp_path / "rigs"
    folder.mkdir()
    (folder / "a_corrupt.glb").write_bytes(b"glTF\x02\x00\x00\x00" + bytes(range(256)) * 4)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    cube = bpy.data.meshes.new("Cube")
    cube.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    bpy.context.scene.collection.objects.link(bpy.data.objects.new("Cube", cube))
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "b_no_armature.blend"), copy=True)
    shutil.copy(SIMPLE_SKIN_EMBEDDED, folder / "c_good.gltf")
    (folder / "d_notes.txt").write_text("not a rig\n", encoding="utf-8")
    missing = tmp_path / "missing.glb"
    out = tmp_path / "report.json"

    result = skin_audit_cli(folder, missing, "--json", out)
    assert result.returncode == 2, explain(result)
    report = read_report(out)
    files = {Path(f["path"]).name: f for f in report["files"]}
    assert list(files) == ["a_corrupt.glb", "b_no_armature.blend", "c_good.gltf", "missing.glb"]
    assert [f["status"] for f in files.values()] == ["error", "error", "ok", "error"]
    assert "cannot be read" in files["a_corrupt.glb"]["message"]
    assert "not a rig" in files["b_no_armature.blend"]["message"]
    assert "no such file" in files["missing.glb"]["message"]
    assert files["c_good.gltf"]["meshes"][0]["vertices"] == 10
    assert report["summary"]["files_with_errors"] == 3
    assert "3 unreadable" in result.stdout


def test_object_option(tmp_path):
    out = tmp_path / "report.json"
    result = skin_audit_cli(PARENT_IS_SKINED, BLENDER_IO_03, "--object", "Suzanne.003", "--json", out)
    assert result.returncode == 2, explain(result)  # BlenderIO_03 has no such object
    report = read_report(out)
    first, second = report["files"]
    assert first["status"] == "ok"
    assert [(m["object"], m["armature"]) for m in first["meshes"]] == [("Suzanne.003", "Armature.001")]
    assert "mesh-not-parented-to-armature" in {x["code"] for x in first["meshes"][0]["findings"]}
    assert second["status"] == "error" and "no object named 'Suzanne.003'" in second["message"]
    unskinned = skin_audit_cli(PARENT_IS_SKINED, "--object", "Cone")
    assert unskinned.returncode == 2, explain(unskinned)
    assert "'Cone' is not a mesh deformed by an Armature modifier" in unskinned.stdout


@pytest.mark.parametrize("option, value", [
    ("--max-influences", "0"), ("--max-influences", "x"), ("--max-influences", "2.5"),
    ("--weight-tolerance", "-1"), ("--weight-tolerance", "nan"), ("--weight-tolerance", "inf"),
    ("--weight-tolerance", "abc"), ("--fail-on", "fatal"),
])
def test_bad_option_values_exit_2_and_write_nothing(tmp_path, option, value):
    out = tmp_path / "report.json"
    result = skin_audit_cli(BLENDER_IO_03, option, value, "--json", out)
    assert result.returncode == 2, explain(result)
    assert option in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_missing_json_folder_exits_2_before_any_work(tmp_path):
    target = tmp_path / "missing" / "report.json"
    result = skin_audit_cli(BLENDER_IO_03, "--json", target)
    assert result.returncode == 2, explain(result)
    assert str(tmp_path / "missing") in result.stderr
    assert list(tmp_path.iterdir()) == []
    assert result.stdout == ""  # nothing audited


# ------------------------------------------------------------ scripts in a .blend never run


SCRIPTED_MARKERS = ("text_marker", "driver_marker")


def _scripted_blend(bpy, folder: Path) -> Path:
    """A rig whose registered text block and Python driver each write a marker file when run."""
    from tests.factories.blender_rigs import chain_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    _, arm = chain_rig("Scripted")
    text = bpy.data.texts.new("register_marker.py")
    text.write(f"from pathlib import Path\nPath({str(folder / 'text_marker')!r}).write_text('ran')\n")
    text.use_module = True  # Register: runs when the file is opened with scripts allowed
    pb = arm.pose.bones["Child"]
    pb.rotation_mode = "XYZ"
    driver = pb.driver_add("rotation_euler", 0).driver
    driver.type = "SCRIPTED"
    driver.expression = f"__import__('pathlib').Path({str(folder / 'driver_marker')!r}).write_text('ran') * 0.0"
    path = folder / "scripted.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def test_scripts_and_python_drivers_of_an_audited_blend_never_run(bpy, tmp_path):
    path = _scripted_blend(bpy, tmp_path)
    assert not any((tmp_path / m).exists() for m in SCRIPTED_MARKERS)
    # Positive control: opened with scripts allowed, the file does write both markers.
    opened = subprocess.run(
        [sys.executable, "-c", "import bpy, sys; bpy.ops.wm.open_mainfile(filepath=sys.argv[1], use_scripts=True); "
         "bpy.context.evaluated_depsgraph_get().update()", str(path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert all((tmp_path / m).exists() for m in SCRIPTED_MARKERS), explain(opened)
    for m in SCRIPTED_MARKERS:
        (tmp_path / m).unlink()
    # The audit opens it with scripts and Python drivers disabled.
    out = tmp_path / "report.json"
    result = run_cli(path, "--json", out)
    assert not any((tmp_path / m).exists() for m in SCRIPTED_MARKERS)
    report = read_report(out)
    assert report["files"][0]["status"] == "ok"
    assert [m["object"] for m in report["files"][0]["meshes"]] == ["Scripted"]
    assert result.returncode in (0, 1), explain(result)


# ------------------------------------------------------------ through a real Blender executable


@pytest.fixture(scope="module")
def blender_exe() -> str:
    return system_blender()


def test_audit_through_a_blender_executable(blender_exe, tmp_path):
    """A .blend only: Debian's Blender 3.4 cannot import glTF (its bundled importer uses ``np.bool``,
    gone from the system numpy)."""
    out = tmp_path / "report.json"
    result = subprocess.run(
        [blender_exe, "--background", "--factory-startup", "--python", str(REPO / "scripts" / "skin_audit_blender.py"),
         "--", "audit", str(BLENDER_IO_03), "--target", "raw", "--fail-on", "warning", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False, env=blender_env())
    assert result.returncode == 1, explain(result)
    report = read_report(out)
    assert report["files"][0]["status"] == "ok"
    f = findings(report)["weights-not-normalized"]
    assert (f["severity"], f["count"], f["vertices"]) == ("WARNING", 160, list(range(160)))
    assert report["files"][0]["meshes"][0]["metrics"]["max_numpy_vs_blender"] < 1e-5


def test_no_shape_checks_leaves_out_the_sweep_symmetry_and_stray_checks(tmp_path):
    """The fast CI gate: the same audit without the pose sweep, symmetry and stray-weight checks."""
    full, fast = tmp_path / "full.json", tmp_path / "fast.json"
    assert skin_audit_cli(BLENDER_IO_03, "--json", full).returncode == 0
    assert skin_audit_cli(BLENDER_IO_03, "--json", fast, "--no-shape-checks").returncode == 0
    (full_mesh,) = json.loads(full.read_text())["files"][0]["meshes"]
    (fast_mesh,) = json.loads(fast.read_text())["files"][0]["meshes"]
    from skin_audit.core.audit.shape_checks import SHAPE_CODES

    full_codes = {f["code"] for f in full_mesh["findings"]}
    fast_codes = {f["code"] for f in fast_mesh["findings"]}
    assert full_codes & SHAPE_CODES and not fast_codes & SHAPE_CODES
    assert fast_codes == full_codes - SHAPE_CODES
    assert "min_singular_value" in full_mesh["metrics"] and "min_singular_value" not in fast_mesh["metrics"]
    assert json.loads(fast.read_text())["options"]["shape_checks"] is False
