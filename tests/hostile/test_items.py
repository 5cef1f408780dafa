# SPDX-License-Identifier: GPL-3.0-or-later
"""Hostile input, case by case: each hostile rig (built in code) against the promise it broke.

The command line runs in this process (``cli.main`` returns the exit code);
reports are read as strict JSON and validated against docs/report.schema.json.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hostile.conftest import files_by_name, mesh_findings, run_main, strict_report

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


# 1. --json never overwrites an input, never writes into an input folder under an input extension,
#    never replaces a read-only file.

def test_json_naming_an_input_file_is_refused_and_the_file_is_untouched(hostile, empty_scene):
    a, b = hostile / "good.blend", hostile / "two_modifiers.blend"
    before = a.read_bytes()
    code, _, err = run_main("audit", a, b, "--json", a)
    assert code == 2, err
    assert a.read_bytes() == before
    assert "is one of the inputs" in err and str(a.name) in err


def test_json_naming_an_input_through_another_spelling_is_refused(hostile, empty_scene):
    a = hostile / "good.blend"
    before = a.read_bytes()
    other = hostile / "lib" / ".." / "good.blend"
    code, _, err = run_main("audit", a, "--json", other)
    assert code == 2, err
    assert a.read_bytes() == before


def test_json_inside_an_input_folder_with_an_input_extension_is_refused(hostile, empty_scene):
    target = hostile / "lib" / "report.blend"
    code, _, err = run_main("audit", hostile / "lib", "--json", target)
    assert code == 2, err
    assert not target.exists()
    assert "input folder" in err


def test_json_replacing_a_read_only_file_is_refused(hostile, empty_scene, tmp_path):
    target = tmp_path / "report.json"
    target.write_text("keep me", encoding="utf-8")
    target.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        code, _, err = run_main("audit", hostile / "good.blend", "--json", target)
        assert code == 2, err
        assert target.read_text(encoding="utf-8") == "keep me"
        assert "read-only" in err
    finally:
        target.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_json_beside_the_inputs_under_a_report_name_is_written(hostile, empty_scene):
    target = hostile / "report.json"
    code, _, err = run_main("audit", hostile / "good.blend", "--json", target)
    assert code == 0, err
    assert strict_report(target)["summary"]["files"] == 1


# 2. Rigs that crashed the audit are file errors with one line naming the file; the run goes on.

@pytest.mark.parametrize("name, words", [
    ("zero_bone.blend", "no bones"),
    ("zero_scale.blend", "scale"),
    ("nan_ibm.gltf", "NaN"),
    ("bad_joints.gltf", "joint"),
])
def test_a_rig_that_crashed_is_a_one_line_file_error(hostile, empty_scene, tmp_path, name, words):
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", hostile / name, hostile / "good.blend", "--json", target)
    assert code == 2, out + err
    files = files_by_name(strict_report(target))
    bad = files[name]
    assert bad["status"] == "error" and bad.get("error_kind", "input") == "input"
    assert "\n" not in bad["message"] and name in bad["message"] and words in bad["message"]
    assert len(bad["message"]) < 400
    assert files["good.blend"]["status"] == "ok"
    assert "Traceback" not in err


# 3. A non-finite result is a finding, never a pass; the JSON stays strict.

def test_a_nan_vertex_is_a_finding_and_the_json_is_strict(hostile, empty_scene, tmp_path):
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", hostile / "nan_vertex.blend", "--json", target)
    assert code == 1, out + err
    entry = files_by_name(strict_report(target))["nan_vertex.blend"]
    assert entry["status"] == "ok"
    (mesh,) = entry["meshes"]
    codes = {x["code"] for x in mesh["findings"] if x["severity"] == "ERROR"}
    assert {"non-finite-result", "non-finite-positions"} <= codes, codes
    assert mesh["metrics"]["max_numpy_vs_blender"] is None
    undefined = next(x for x in mesh["findings"] if x["code"] == "non-finite-result")
    assert 5 in undefined["vertices"] and "max_numpy_vs_blender" in undefined["details"]["undefined"]
    assert "vs Blender nan" not in out


def test_preserve_volume_with_a_bone_scaled_to_zero_matches_blender_instead_of_nan(hostile, empty_scene,
                                                                                  tmp_path):
    # Was "numpy vs Blender nan" and exit 0; Blender turns the zero matrix into the identity
    # rotation (normalize_v3 of a zero vector is zero) and so does the recomputation now.
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", hostile / "preserve_volume_zero_scale.blend", "--json", target)
    entry = files_by_name(strict_report(target))["preserve_volume_zero_scale.blend"]
    (mesh,) = entry["meshes"]
    assert not any(x["code"] == "non-finite-result" for x in mesh["findings"]), mesh["findings"]
    assert mesh["metrics"]["max_numpy_vs_blender"] is not None
    assert mesh["metrics"]["max_numpy_vs_blender"] < 1e-5
    assert mesh["metrics"]["vertices_compared"] == mesh["vertices"]
    assert "vs Blender nan" not in out


def test_a_non_finite_metric_becomes_null_with_an_error_finding():
    import numpy as np

    from skin_audit.core.audit.finite import finite_audit
    from skin_audit.core.audit.report import MeshAudit
    from skin_audit.core.findings import Finding

    audit = MeshAudit("M", "A", 3, {"max_numpy_vs_blender": float("nan"), "max_influences": 2},
                      (Finding("engine-divergence", "WARNING", "m", 1, (0,), (), (), {"max": float("inf")}),),
                      {"numpy_vs_blender": np.array([0.0, np.nan, 0.0])})
    out = finite_audit(audit)
    assert out.metrics["max_numpy_vs_blender"] is None and out.metrics["max_influences"] == 2
    assert out.findings[0].details == {"max": None}
    extra = out.findings[-1]
    assert (extra.code, extra.severity, extra.vertices) == ("non-finite-result", "ERROR", (1,))
    assert len(finite_audit(out).findings) == len(out.findings)  # judged once


# 5. Two Armature modifiers on one armature: no false sweep-mismatch.

def test_two_armature_modifiers_on_one_armature_give_no_false_error(hostile, empty_scene, tmp_path):
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", hostile / "two_modifiers.blend", "--json", target)
    entry = files_by_name(strict_report(target))["two_modifiers.blend"]
    errors = [x for x in mesh_findings(entry) if x["severity"] == "ERROR"]
    assert errors == [], errors
    assert code == 0, out + err
    for mesh in entry["meshes"]:
        assert mesh["metrics"]["sweep_spot_check_max_difference"] < 1e-5


# 6. Drift names only causes that are present.

@pytest.mark.parametrize("name, cause", [("bbone_drift.blend", "B-Bone"), ("huge_scale.blend", "scale")])
def test_drift_names_a_cause_that_is_present(hostile, empty_scene, tmp_path, name, cause):
    target = tmp_path / "r.json"
    run_main("audit", hostile / name, "--json", target)
    entry = files_by_name(strict_report(target))[name]
    drift = [x for x in mesh_findings(entry) if x["code"] == "bind-pose-drift"]
    assert drift, mesh_findings(entry)
    for x in drift:
        assert "modifiers after" not in x["message"]
        assert cause in x["message"], x["message"]


def test_curved_bbones_give_no_false_sweep_mismatch(hostile, empty_scene, tmp_path):
    target = tmp_path / "r.json"
    run_main("audit", hostile / "bbone_drift.blend", "--json", target)
    entry = files_by_name(strict_report(target))["bbone_drift.blend"]
    assert not [x for x in mesh_findings(entry) if x["code"] == "sweep-mismatch"]


# 7. A missing linked library is reported by its path.

def test_a_missing_linked_library_is_named_by_path(hostile, empty_scene, tmp_path):
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", hostile / "lib" / "uses_missing_library.blend", "--json", target)
    assert code == 2, out + err
    entry = files_by_name(strict_report(target))["uses_missing_library.blend"]
    assert entry["status"] == "error"
    assert "rig_library.blend" in entry["message"] and "missing" in entry["message"]


def test_a_library_that_no_longer_holds_the_linked_rig_is_named(hostile, empty_scene, tmp_path):
    from tests.hostile.blend_files import incomplete_library_blend

    main, library = incomplete_library_blend(tmp_path)
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", main, "--json", target)
    assert code == 2, out + err
    entry = files_by_name(strict_report(target))[main.name]
    assert entry["status"] == "error" and library.name in entry["message"]
    assert "no longer holds them" in entry["message"]


# 8. verify: a scene that proves nothing fails; malformed input is exit 2 with a message.

def _scene(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scene.json"
    path.write_text(text, encoding="utf-8")
    return path


def _good_scene_text() -> str:
    import json

    from tests.core.test_verify_scene import GOOD

    return json.dumps(GOOD)


def test_verify_fails_a_scene_without_poses(tmp_path):
    import json

    data = json.loads(_good_scene_text())
    data["poses"] = []
    code, out, err = run_main("verify", _scene(tmp_path, json.dumps(data)))
    assert code == 1, out + err
    assert "no pose" in err


def test_verify_refuses_deep_nesting_with_exit_2(tmp_path):
    depth = 100_000
    code, _, err = run_main("verify", _scene(tmp_path, "[" * depth + "]" * depth))
    assert code == 2, err
    assert "nested" in err and "Traceback" not in err


def test_verify_refuses_a_400_digit_integer_with_exit_2(tmp_path):
    import json

    data = json.loads(_good_scene_text())
    data["mesh"]["bind_vertices"][0][0] = int("9" * 400)
    code, _, err = run_main("verify", _scene(tmp_path, json.dumps(data)))
    assert code == 2, err
    assert "Traceback" not in err and "number" in err


def test_an_internal_error_is_exit_3_not_1(monkeypatch, tmp_path):
    from skin_audit.core.twist import verify

    def broken(_data):
        raise ZeroDivisionError("planted bug")

    monkeypatch.setattr(verify, "verify_scene", broken)
    code, _, err = run_main("verify", _scene(tmp_path, _good_scene_text()))
    assert code == 3, err
    assert "planted bug" in err and "internal error" in err
    assert os.linesep in err
