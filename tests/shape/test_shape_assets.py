# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape checks on the real rigs in ``tests/assets`` (nobody on the project made them).

For every skinned mesh the numpy pose sweep must agree with Blender at the
spot-checked poses.  For the rigs with left/right names the symmetry facts are
worked out here independently (names, bone heads, a brute-force mirror of every
vertex, the glTF file's own inverse bind matrices) and the audit is held to them.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.tolerances import FLOAT32_RELATIVE

pytestmark = [pytest.mark.blender]

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SUFFIXES = (".blend", ".glb", ".gltf", ".fbx")
RIGGED_FIGURE = ASSETS / "RiggedFigure" / "glTF-Binary" / "RiggedFigure.glb"
MIRROR_X = np.diag([-1.0, 1.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def audits(bpy):
    """Every asset file audited once with the default options, keyed by its path under ASSETS."""
    from skin_audit.blender.run.audit_files import audit_paths

    if not ASSETS.is_dir():
        pytest.fail(f"the real rigs are missing: expected them in {ASSETS}", pytrace=False)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        files = audit_paths([str(ASSETS)], AuditOptions())
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    return {Path(f.path).relative_to(ASSETS).as_posix(): f for f in files}


def meshes(audits):
    return [(path, m) for path, f in sorted(audits.items()) for m in f.meshes]


def findings(mesh_audit, code: str):
    return [f for f in mesh_audit.findings if f.code == code]


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Degrees of the rotation taking frame ``a`` (3, 3) to frame ``b``."""
    r = a.T @ b
    # atan2 of the skew and symmetric parts: precise near 0 and 180 degrees, unlike arccos of the trace.
    skew = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    return float(np.degrees(np.arctan2(0.5 * np.linalg.norm(skew), 0.5 * (np.trace(r) - 1.0))))


# ---------------------------------------------------------------- every mesh


def test_every_asset_file_is_audited(audits):
    expected = sorted(p.relative_to(ASSETS).as_posix() for p in ASSETS.rglob("*") if p.suffix.lower() in SUFFIXES)
    assert sorted(audits) == expected and len(expected) >= 10
    assert {path: f.status for path, f in audits.items() if f.status != "ok"} == {}
    assert len(meshes(audits)) >= 15


def test_sweep_agrees_with_blender_on_every_mesh(audits):
    checked = 0
    for path, mesh in meshes(audits):
        where = f"{path} / {mesh.object}"
        assert not findings(mesh, "sweep-mismatch"), where
        smallest = mesh.metrics.get("min_singular_value")
        assert smallest is not None and -1e-9 <= smallest <= 1.0 + 1e-9, where
        assert mesh.metrics.get("min_volume_ratio") is not None, where
        if smallest < 1.0 - 1e-9:
            # Something squashes: the worst poses were re-evaluated in Blender.
            assert mesh.metrics.get("sweep_spot_checks", 0) >= 1, where
        if mesh.metrics.get("sweep_spot_checks"):
            tol = FLOAT32_RELATIVE * max(mesh.metrics["size"], 1.0)
            assert mesh.metrics["sweep_spot_check_max_difference"] <= tol, where
            checked += 1
    assert checked >= 10


def test_humanoids_collapse_only_at_180_degrees(audits):
    """Real rigs with 4 influences survive 90-degree poses (no WARNING) and collapse at 180 (INFO)."""
    for name in ("CesiumMan/glTF-Binary/CesiumMan.glb", "RiggedFigure/glTF-Binary/RiggedFigure.glb",
                 "Fox/glTF-Binary/Fox.glb"):
        (mesh,) = audits[name].meshes
        collapse = findings(mesh, "twist-collapse")
        assert [f.severity for f in collapse] == ["INFO"], name
        assert abs(collapse[0].details["degrees"]) == 180.0
        assert mesh.metrics["min_singular_value"] < 0.5


EDIT_MODE_FILE = ASSETS / "BlenderIO_32_weights_influence" / "32_weights_influence_4.blend"


def test_edit_mode_mesh_evaluates_to_no_vertices(bpy, empty_scene):
    """32_weights_influence_4.blend saves Plane.002 in Edit Mode: Blender evaluates it to 0 vertices."""
    bpy.ops.wm.open_mainfile(filepath=str(EDIT_MODE_FILE), load_ui=False, use_scripts=False)
    obj = bpy.data.objects["Plane.002"]
    assert obj.mode == "EDIT" and len(obj.data.vertices) == 1
    assert len(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices) == 0


def test_edit_mode_mesh_is_spot_checked_for_real(audits):
    """A file saved in Edit Mode is audited in Object Mode (never saved), so its sweep is really compared."""
    mesh = next(m for m in audits[EDIT_MODE_FILE.relative_to(ASSETS).as_posix()].meshes if m.object == "Plane.002")
    assert mesh.metrics.get("sweep_spot_checks", 0) >= 1
    assert mesh.metrics["sweep_spot_check_max_difference"] <= 2e-6 * max(mesh.metrics["size"], 1.0)


# ---------------------------------------------------------------- symmetric rigs, worked out by hand


def glb_binds(path: Path) -> dict[str, np.ndarray]:
    """Joint name -> (4, 4) bind matrix (inverse of inverseBindMatrices) read from the .glb itself."""
    data = path.read_bytes()
    json_length = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + json_length])
    binary = data[20 + json_length + 8:]
    skin = doc["skins"][0]
    accessor = doc["accessors"][skin["inverseBindMatrices"]]
    view = doc["bufferViews"][accessor["bufferView"]]
    start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
    flat = np.frombuffer(binary, dtype="<f4", count=16 * accessor["count"], offset=start)
    ibm = flat.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)  # glTF stores columns
    return {doc["nodes"][j]["name"]: np.linalg.inv(m) for j, m in zip(skin["joints"], ibm, strict=True)}


def pairs_by_replacing(old: str, new: str):
    def rule(names, parents):
        return [(n, n.replace(old, new)) for n in names if old in n and n.replace(old, new) in names]
    return rule


def fox_pairs(names, parents):
    """Fox: b_LeftUpperArm_09 / b_RightUpperArm_06: the same name once the node index is dropped."""
    by_stem = {re.sub(r"_\d+$", "", n): n for n in names}
    return [(n, by_stem[stem.replace("Left", "Right")]) for stem, n in by_stem.items() if "Left" in stem]


def cesium_pairs(names, parents):
    """CesiumMan: legs by name; arms by their place in the chain below the chest, because the left chain
    is named __4_, __3_, __2_ from the shoulder and the right one R, __2_, __3_."""
    def chain(start):
        out = [start]
        while (child := [n for n, p in zip(names, parents, strict=True) if p == out[-1]]):
            out.append(child[0])
        return out
    legs = [p for p in pairs_by_replacing("_L_", "_R_")(names, parents) if p[0].startswith("leg_")]
    return legs + list(zip(chain("Skeleton_arm_joint_L__4_"), chain("Skeleton_arm_joint_R"), strict=True))


#: asset -> (file, the armature-space axis its left and right sides lie along, how its bones pair).
SYMMETRIC = {
    "RiggedFigure": ("RiggedFigure/glTF-Binary/RiggedFigure.glb", 0, pairs_by_replacing("_L_", "_R_")),
    "Fox": ("Fox/glTF-Binary/Fox.glb", 0, fox_pairs),
    "CesiumMan": ("CesiumMan/glTF-Binary/CesiumMan.glb", 2, cesium_pairs),
}


def symmetry_facts(bpy, name: str) -> dict:
    """Import one rig and work out its symmetry without skin_audit's symmetry code: pairs by the rule
    above, the plane across the axis checked by inspection, Blender's mirror convention
    (``H B diag(-1, 1, 1)``, what Symmetrize makes), every vertex's mirror by brute force."""
    relative, axis, rule = SYMMETRIC[name]
    bpy.ops.import_scene.gltf(filepath=str(ASSETS / relative))
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    obj = next(o for o in bpy.context.scene.objects if o.type == "MESH" and o.modifiers)
    names = [b.name for b in arm.data.bones]
    parents = [b.parent.name if b.parent else None for b in arm.data.bones]
    pairs = rule(names, parents)
    rest = {b.name: np.array(b.matrix_local, dtype=np.float64) for b in arm.data.bones}
    offset = float(np.median([0.5 * (rest[a][axis, 3] + rest[b][axis, 3]) for a, b in pairs]))
    reflect = np.eye(4)
    reflect[axis, axis], reflect[axis, 3] = -1.0, 2.0 * offset
    head_error = {a: float(np.linalg.norm(reflect @ rest[a][:, 3] - rest[b][:, 3])) for a, b in pairs}
    angles = {a: rotation_angle((reflect @ rest[a] @ MIRROR_X)[:3, :3], rest[b][:3, :3]) for a, b in pairs}
    # Vertices in armature space, mirrored across the plane, nearest partner by brute force (in chunks).
    to_arm = np.linalg.inv(np.array(arm.matrix_world)) @ np.array(obj.matrix_world)
    local = np.array([tuple(v.co) for v in obj.data.vertices], dtype=np.float64)
    size = float(np.ptp(local, axis=0).max())
    co = local @ to_arm[:3, :3].T + to_arm[:3, 3]
    mirrored = co @ reflect[:3, :3].T + reflect[:3, 3]
    partner, gap = np.empty(len(co), dtype=np.intp), np.empty(len(co))
    for start in range(0, len(co), 500):
        d = np.linalg.norm(mirrored[start:start + 500, None, :] - co[None, :, :], axis=2)
        partner[start:start + 500], gap[start:start + 500] = d.argmin(axis=1), d.min(axis=1)
    matched = gap <= AuditOptions().mirror_radius_relative * size
    groups = [g.name for g in obj.vertex_groups]
    weights = np.zeros((len(groups), len(co)))
    for v in obj.data.vertices:
        for g in v.groups:
            weights[g.group, v.index] = g.weight
    flip = {a: b for a, b in pairs} | {b: a for a, b in pairs}
    mirror_rows = weights[[groups.index(flip.get(n, n)) for n in groups]]
    asymmetry = np.where(matched, np.abs(weights - mirror_rows[:, partner]).max(axis=0), 0.0)
    side_named = {n for n in names if re.search(r"(^|_)[LR](_|$)|Left|Right", n)}
    return {"obj": obj, "pairs": pairs, "side_named": side_named, "rest": rest, "head_error": head_error,
            "angles": angles, "matched": float(matched.mean()), "asymmetry": asymmetry, "size": size}


def test_rigged_figure_facts(bpy, empty_scene):
    """Seven L/R pairs mirrored across x = 0; every vertex has a mirror vertex; the joints' frames are
    not mirror images in the glTF file itself (so not an importer artefact); 24 vertices weigh
    differently from their mirror vertex by more than 0.05 (shoulders: up to 0.74)."""
    facts = symmetry_facts(bpy, "RiggedFigure")
    assert len(facts["pairs"]) == 7 and {n for p in facts["pairs"] for n in p} == facts["side_named"]
    tol = FLOAT32_RELATIVE * max(facts["size"], 1.0)
    assert max(facts["head_error"].values()) <= tol
    assert facts["matched"] == 1.0
    source = glb_binds(ASSETS / SYMMETRIC["RiggedFigure"][0])
    for a, b in facts["pairs"]:
        in_file = rotation_angle((MIRROR_X @ source[a] @ MIRROR_X)[:3, :3], source[b][:3, :3])
        assert facts["angles"][a] == pytest.approx(in_file, abs=0.05), a
    assert facts["angles"]["arm_joint_L_1"] == pytest.approx(173.9, abs=0.1)
    assert sum(angle > 1.0 for angle in facts["angles"].values()) == 6
    assert int((facts["asymmetry"] > 0.05).sum()) == 24
    assert facts["asymmetry"].max() == pytest.approx(0.741, abs=1e-3)


def test_fox_facts(bpy, empty_scene):
    """Seven pairs once the node index is dropped, mirrored across x = 0 to 2e-4 of the size; every
    right bone is Blender's mirror of its left bone turned 180 degrees about its own Y (one consistent
    convention, not a stray roll); 97% of the vertices have a mirror vertex and weigh the same."""
    facts = symmetry_facts(bpy, "Fox")
    assert len(facts["pairs"]) == 7 and {n for p in facts["pairs"] for n in p} == facts["side_named"]
    assert max(facts["head_error"].values()) <= 2e-4 * facts["size"]
    assert all(abs(angle - 180.0) <= 1.0 for angle in facts["angles"].values())
    roll_180 = np.diag([-1.0, 1.0, -1.0])
    for a, b in facts["pairs"]:  # H B diag(-1, 1, 1) Ry(180) = H B diag(1, 1, -1) matches within 1 degree
        expected = (MIRROR_X @ facts["rest"][a] @ MIRROR_X)[:3, :3] @ roll_180
        assert rotation_angle(expected, facts["rest"][b][:3, :3]) <= 1.0, a
    assert facts["matched"] == pytest.approx(0.97, abs=0.01)
    assert facts["asymmetry"].max() <= 0.01


def test_cesiumman_facts(bpy, empty_scene):
    """Left and right lie along armature Z (the armature object stands the rig up); the pairs' heads
    mirror across z = 0.005 to 1e-4 of the size; at the audit's 1e-3 radius almost no vertex has a mirror
    vertex (the mesh is symmetric only to about 1% of its size)."""
    facts = symmetry_facts(bpy, "CesiumMan")
    assert len(facts["pairs"]) == 7 and {n for p in facts["pairs"] for n in p} == facts["side_named"]
    assert max(facts["head_error"].values()) <= 1e-4 * facts["size"]
    assert facts["matched"] < 0.05


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_symmetry_findings_match_the_facts(bpy, empty_scene, audits, name):
    from skin_audit.blender.run.audit_scene import audit_meshes

    facts = symmetry_facts(bpy, name)
    (result,) = audit_meshes(bpy.context, [facts["obj"]], AuditOptions())
    assert not findings(result, "unpaired-side-bone")
    convention = findings(result, "mirror-axis-convention")
    if name == "Fox":
        # test_fox_facts: every right bone is Blender's mirror turned 180 degrees about its own Y, one
        # rule (another tool's mirroring), said once as INFO; no pair deviates from it.  (CesiumMan's
        # pairs are also 180 degrees off, but about different axes: no shared rule, so they are judged.)
        (rule,) = convention
        assert rule.severity == "INFO" and rule.details["angle_degrees"] == pytest.approx(180.0, abs=1.0)
        assert not findings(result, "mirror-axis-mismatch")
        return
    assert not convention
    # Pairs whose rest frames are not Blender mirror images (by more than 1 degree), with the worst angle.
    (mismatch,) = findings(result, "mirror-axis-mismatch")
    expected = {n for a, b in facts["pairs"] if facts["angles"][a] > 1.0 for n in (a, b)}
    assert set(mismatch.bones) == expected
    # Both bones of each pair, left then right: the audit paired them as worked out here.
    assert set(zip(mismatch.bones[::2], mismatch.bones[1::2], strict=True)) == {
        (a, b) for a, b in facts["pairs"] if facts["angles"][a] > 1.0}
    assert mismatch.details["worst_angle_degrees"] == pytest.approx(max(facts["angles"].values()), abs=0.1)
    assert mismatch.details["worst_head_distance"] <= 1e-3 * facts["size"]
    assert result.metrics["mirror_matched_fraction"] == pytest.approx(facts["matched"], abs=0.02)
    asymmetric = findings(result, "weight-asymmetry")
    if facts["matched"] < AuditOptions().symmetric_fraction:
        assert [f.severity for f in findings(result, "mesh-not-symmetric")] == ["INFO"]
        assert not asymmetric
    elif facts["asymmetry"].max() <= AuditOptions().asymmetry_tolerance:
        assert not asymmetric and not findings(result, "mesh-not-symmetric")
    else:
        (asym,) = asymmetric
        assert set(asym.vertices) == set(np.flatnonzero(facts["asymmetry"] > AuditOptions().asymmetry_tolerance))
        assert asym.details["worst_difference"] == pytest.approx(facts["asymmetry"].max(), abs=1e-6)
    # The audit of the same file in the folder run agrees.
    # (the folder run reports the armature's findings once, in the file's rig entry).
    folder = audits[SYMMETRIC[name][0]]
    assert len(folder.meshes) == 1 and len(folder.rigs) == 1
    assert sorted(f.code for f in folder.findings) == sorted(f.code for f in result.findings)
