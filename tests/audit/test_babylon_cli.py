# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m skin_audit audit FILE --target babylon`` on glTF copies that break a rule Babylon
reads differently (real bpy in a child process, the report validated against the schema).

Expected vertices come from the file's stored weights read here, not from the audit: CesiumMan
has one primitive, and Blender's importer keeps its rows in order, so file row i is Blender
vertex i (the audit verifies that pairing on the rest positions).
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.gltf.document import load_gltf, read_accessor
from skin_audit.core.tolerances import BABYLON_WEIGHT_SUM_SLACK
from tests.engines import variants
from tests.engines.test_babylon import morph_target
from tests.engines.variants import negative_weight
from tests.hostile.conftest import strict_report

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]


def audit_babylon(path: Path, out: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "skin_audit", "audit", str(path), "--target", "babylon", "--json", str(out),
         "--no-shape-checks", "--fail-on", "never"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = strict_report(out)  # strict JSON (no NaN/Infinity), validated against docs/report.schema.json
    assert report["options"]["target"] == "babylon"
    (f,) = report["files"]
    assert f["status"] == "ok", f.get("message")
    (mesh,) = f["meshes"]
    return mesh


def stored_weights(path: Path) -> np.ndarray:
    doc = load_gltf(path)
    attrs = doc.json["meshes"][0]["primitives"][0]["attributes"]
    return np.asarray(read_accessor(doc, attrs["WEIGHTS_0"]), dtype=np.float64)


def by_code(mesh: dict) -> dict[str, dict]:
    return {f["code"]: f for f in mesh["findings"]}


def test_all_zero_weights_vanish(tmp_path):
    path = variants.all_zero(tmp_path)
    expected = np.flatnonzero(~(stored_weights(path) > 0).any(axis=1))
    assert len(expected) == 468  # every seventh of CesiumMan's 3273 rows
    mesh = audit_babylon(path, tmp_path / "report.json")
    found = by_code(mesh)
    vanish = found["babylon-vertex-vanishes"]
    assert vanish["severity"] == "ERROR"
    assert vanish["count"] == vanish["vertices_total"] == len(expected)
    assert vanish["vertices"] == expected.tolist()
    assert vanish["details"]["target"] == "babylon" and vanish["details"]["cpu_nan"] == len(expected)
    # Vanishing is reported as such: no NaN metric, no misleading non-finite-result.
    assert "non-finite-result" not in found
    assert mesh["metrics"]["max_engine_divergence"] is not None
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] < 1e-5 * mesh["metrics"]["size"]


def test_unnormalised_weights_are_shaded_elsewhere(tmp_path):
    path = variants.unnormalised(tmp_path)
    expected = np.flatnonzero(np.abs(stored_weights(path).sum(axis=1) - 1.0) > BABYLON_WEIGHT_SUM_SLACK)
    assert len(expected) > 3000
    mesh = audit_babylon(path, tmp_path / "report.json")
    found = by_code(mesh)
    shading = found["babylon-unnormalised-weights-shading"]
    assert shading["severity"] == "WARNING" and shading["details"]["storage_rounding"] is False
    assert shading["count"] == shading["vertices_total"] == len(expected)
    assert shading["vertices"] == expected[:1000].tolist()  # the report lists the first 1000
    assert "babylon-vertex-vanishes" not in found and "babylon-cpu-gpu-differ" not in found
    # Engine divergence is Babylon's model: it divides by the sum where Blender clamps above 1.
    assert found["engine-divergence"]["details"]["target"] == "babylon"


def test_negative_weights_differ_between_cpu_and_gpu(tmp_path):
    path = negative_weight(tmp_path)
    negative = set(np.flatnonzero((stored_weights(path) < 0).any(axis=1)).tolist())
    mesh = audit_babylon(path, tmp_path / "report.json")
    differ = by_code(mesh)["babylon-cpu-gpu-differ"]
    assert differ["count"] > 0 and set(differ["vertices"]) <= negative


def test_shape_keys_ignored_on_cpu(tmp_path):
    path = morph_target(tmp_path)
    mesh = audit_babylon(path, tmp_path / "report.json")
    ignored = by_code(mesh)["babylon-shape-keys-ignored-on-cpu"]
    assert ignored["count"] > 0.9 * len(stored_weights(path))


def test_well_formed_file_has_no_babylon_finding(tmp_path):
    mesh = audit_babylon(variants.CESIUM, tmp_path / "report.json")
    assert not [f for f in mesh["findings"] if f["code"].startswith("babylon-")]
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] < 1e-5 * mesh["metrics"]["size"]


def two_primitives(folder: Path) -> Path:
    """CesiumMan's mesh with a second primitive: the same rows, every seventh weight all zero."""
    r = variants.Rewrite(variants.CESIUM)
    second = copy.deepcopy(r.skinned_attributes())
    w = r.read(second["WEIGHTS_0"]).copy()
    w[::7] = 0.0
    second["WEIGHTS_0"] = r.add(w, 5126, "VEC4")
    prims = r.json["meshes"][0]["primitives"]
    prims.append({**copy.deepcopy(prims[0]), "attributes": second})
    return r.write(folder, "two_primitives")


def test_second_primitive_rows_become_blender_indices(tmp_path):
    """Blender's importer writes the primitives one after the other: primitive 1's row i is vertex
    len(primitive 0) + i; the first primitive, with every weight, vanishes nowhere."""
    path = two_primitives(tmp_path)
    rows = len(stored_weights(path))
    mesh = audit_babylon(path, tmp_path / "report.json")
    vanish = by_code(mesh)["babylon-vertex-vanishes"]
    assert vanish["vertices"] == list(range(rows, 2 * rows, 7))
    assert vanish["details"]["where"] == "node 2 mesh 0 primitive 1"


def test_blend_unweighted_vertex_is_a_finding_not_a_nan(bpy, tmp_path):
    """A .blend reaches Babylon through the glTF exporter, which binds an unweighted vertex to a
    joint that never moves: Babylon draws it at rest, where Blender leaves it; the report is strict
    JSON with finite engine metrics, and the vertex is Blender's unweighted-vertices finding."""
    from tests.factories.blender_rigs import BoneSpec, build_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bones = [BoneSpec("B0", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0))]
    build_rig("Loose", bones, [(0.0, 0.0, 0.0), (0.0, 0.5, 0.0), (1.0, 0.0, 0.0)], [], {"B0": ([0, 1], [1.0, 1.0])})
    path = tmp_path / "loose.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    mesh = audit_babylon(path, tmp_path / "report.json")
    found = by_code(mesh)
    assert found["unweighted-vertices"]["vertices"] == [2]
    assert "non-finite-result" not in found and not [c for c in found if c.startswith("babylon-")]
    by_pose = mesh["metrics"]["engine_divergence_by_pose"]
    assert len(by_pose) > 1 and all(v is not None and v < 1e-5 for v in by_pose.values()), by_pose
