# SPDX-License-Identifier: GPL-3.0-or-later
"""Skeleton conformance through real Blender: the Rigify character's humanoid map against the
bones Rigify's own metarig names, its arms' rest angle against one measured here with bpy
alone, a humanoid built in Blender in an A-pose, and a folder run that groups identical
skeletons and names a renamed bone by both its names."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories.humanoid_rigs import MIXAMO, humanoid_rows
from tests.factories.rigify import RIG

pytestmark = pytest.mark.blender
REPO = Path(__file__).resolve().parents[2]

#: What Rigify's human metarig calls each required humanoid bone (rigify/metarigs/human.py):
#: the hips are "spine", the head "spine.006"; DEF- is the deform copy the generated rig adds.
RIGIFY_EXPECTED = {
    "hips": "DEF-spine", "spine": "DEF-spine.001", "head": "DEF-spine.006",
    **{f"{side}{bone}": f"DEF-{name}.{s}" for side, s in (("left", "L"), ("right", "R"))
       for bone, name in (("UpperArm", "upper_arm"), ("LowerArm", "forearm"), ("Hand", "hand"),
                          ("UpperLeg", "thigh"), ("LowerLeg", "shin"), ("Foot", "foot"))},
}


def _arm_angle_by_bpy(bpy, rig_name: str, upper: str, lower: str) -> float:
    """Degrees below the horizontal of upper.head -> lower.head in world space (Z up)."""
    rig = bpy.data.objects[rig_name]
    a = rig.matrix_world @ rig.data.bones[upper].head_local
    b = rig.matrix_world @ rig.data.bones[lower].head_local
    d = b - a
    return math.degrees(math.atan2(-d.z, math.hypot(d.x, d.y)))


def test_rigify_maps_to_its_metarigs_humanoid_bones(bpy, rigify_character):
    from skin_audit.blender.run.audit_files import audit_file
    from skin_audit.core.audit.options import AuditOptions

    result = audit_file(rigify_character, AuditOptions(shape_checks=False))
    (rig,) = result.rigs
    humanoid = rig.skeleton["humanoid"]
    assert humanoid["humanoid"] and humanoid["missing"] == []
    assert {k: humanoid["bones"][k] for k in RIGIFY_EXPECTED} == RIGIFY_EXPECTED
    assert humanoid["bones"]["leftShoulder"] == "DEF-shoulder.L" and humanoid["bones"]["neck"] == "DEF-spine.004"
    limbs = rig.skeleton["rest_pose"]["limbs"]
    for arm, side in (("leftArm", "L"), ("rightArm", "R")):
        want = _arm_angle_by_bpy(bpy, RIG, f"DEF-upper_arm.{side}", f"DEF-forearm.{side}")
        assert limbs[arm]["below_horizontal"] == pytest.approx(want, abs=0.5)
    assert not [f for f in rig.findings if f.code in ("humanoid-bone-missing", "rest-pose-mismatch")]
    bpy.ops.wm.read_factory_settings(use_empty=True)


def _save_humanoid(bpy, path: Path, arm_degrees: float = 0.0, rename: dict[str, str] | None = None,
                   without: tuple[str, ...] = ()) -> None:
    """A Mixamo-named humanoid saved as .blend: bones from the numpy factory, one vertex per bone."""
    from tests.factories.blender_rigs import BoneSpec, build_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    rows = humanoid_rows(MIXAMO, arm_degrees, rename=rename, without=without)
    bones = [BoneSpec(r.name, r.head, r.tail, r.parent) for r in rows]
    verts = [tuple((a + b) / 2 for a, b in zip(r.head, r.tail, strict=True)) for r in rows]
    weights = {r.name: ([k], [1.0]) for k, r in enumerate(rows)}
    build_rig("Body", bones, verts, weights=weights)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_factory_settings(use_empty=True)


def _audit(paths, *flags):
    out = subprocess.run([sys.executable, "-m", "skin_audit", "audit", *map(str, paths), *flags],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    return out


def test_a_folder_groups_skeletons_and_names_a_renamed_bone_by_both_names(bpy, tmp_path):
    folder = tmp_path / "lib"
    folder.mkdir()
    _save_humanoid(bpy, folder / "a_tpose.blend")
    _save_humanoid(bpy, folder / "b_apose.blend", arm_degrees=40.0)
    _save_humanoid(bpy, folder / "c_renamed.blend", rename={"mixamorig:Spine1": "mixamorig:Spine_Mid"})
    _save_humanoid(bpy, folder / "d_tpose_copy.blend")
    _save_humanoid(bpy, folder / "e_no_hand.blend", without=("Hand",))
    report = tmp_path / "report.json"
    out = _audit([folder], "--json", report, "--no-shape-checks", "--rest-pose", "t", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    data = json.loads(report.read_text())
    by_file = {Path(f["path"]).name: f for f in data["files"]}
    assert len(by_file) == 5
    groups = data["skeletons"]
    members = [sorted(Path(m["path"]).name for m in g["members"]) for g in groups]
    # The A-pose moves the arms: a skeleton of its own, like the renamed and the handless ones.
    assert members[0] == ["a_tpose.blend", "d_tpose_copy.blend"]
    assert sorted(map(tuple, members[1:])) == [("b_apose.blend",), ("c_renamed.blend",), ("e_no_hand.blend",)]
    renamed = next(g for g in groups if g["members"][0]["path"].endswith("c_renamed.blend"))
    assert renamed["differs_from_skeleton_1"]["renamed"] == [{"from": "mixamorig:Spine1",
                                                              "to": "mixamorig:Spine_Mid"}]

    def codes(name):
        return {f["code"]: f for r in by_file[name]["rigs"] for f in r["findings"]}

    differs = codes("c_renamed.blend")["skeleton-differs"]
    assert set(differs["bones"]) == {"mixamorig:Spine1", "mixamorig:Spine_Mid"}
    assert "skeleton-differs" not in codes("d_tpose_copy.blend")
    assert codes("e_no_hand.blend")["humanoid-bone-missing"]["details"]["missing"] == ["rightHand"]
    mismatch = codes("b_apose.blend")["rest-pose-mismatch"]
    assert mismatch["severity"] == "WARNING"
    assert mismatch["details"]["off_degrees"]["leftArm"] == pytest.approx(40.0, abs=0.01)
    assert "rest-pose-mismatch" not in codes("a_tpose.blend")
    # The terminal says it too.
    assert "rest-pose-mismatch" in out.stdout and "skeleton-differs" in out.stdout


def test_a_mesh_of_300_bones_is_over_unreals_budget(bpy, tmp_path):
    from tests.factories.blender_rigs import BoneSpec, build_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bones = [BoneSpec(f"Bone{k:03d}", (0.0, float(k), 0.0), (0.0, k + 1.0, 0.0),
                      f"Bone{k - 1:03d}" if k else None) for k in range(300)]
    verts = [(0.0, k + 0.5, 0.0) for k in range(300)]
    build_rig("Strip", bones, verts, weights={b.name: ([k], [1.0]) for k, b in enumerate(bones)})
    path = tmp_path / "strip.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    for target, flagged in (("unreal", True), ("threejs", False)):
        report = tmp_path / f"{target}.json"
        out = _audit([path], "--json", report, "--no-shape-checks", "--target", target, "--fail-on", "never")
        assert out.returncode == 0, out.stderr
        (mesh,) = json.loads(report.read_text())["files"][0]["meshes"]
        found = [f for f in mesh["findings"] if f["code"] == "joint-budget-exceeded"]
        assert bool(found) is flagged
        assert mesh["metrics"]["weighting_bones"] == 300
        if flagged:
            assert found[0]["details"]["limit"] == 256 and found[0]["count"] == 300
