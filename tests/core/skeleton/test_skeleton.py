# SPDX-License-Identifier: GPL-3.0-or-later
"""Skeleton conformance on humanoids built in numpy: the mapping against the names each
pipeline gives the humanoid bones, the rest pose against the angle the rig was built with,
joint budgets at the documented limit, and skeletons compared across files."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.report import FileAudit
from skin_audit.core.audit.rig_audit import audit_rig
from skin_audit.core.skeleton import cross_file_findings, skeleton_groups
from skin_audit.core.skeleton.humanoid import REQUIRED, map_humanoid
from tests.factories.humanoid_rigs import (
    MIXAMO,
    RIGIFY,
    UNREAL,
    VROID,
    humanoid_rig,
    humanoid_rows,
    many_joint_rig,
)
from tests.factories.numpy_rigs import chain_tube, skinned_mesh


def expected(names: dict[str, str]) -> dict[str, str]:
    """The mapping a person writes down from the naming table: VRM name -> bone name."""
    out = {}
    for generic, pattern in names.items():
        if generic[0].isupper():
            for side in ("left", "right"):
                out[side + generic] = pattern.format(Side=side.capitalize(), S=side[0].upper(), s=side[0])
        else:
            out[generic] = pattern
    return out


def mapping_of(rows):
    names = [r.name for r in rows]
    index = {n: i for i, n in enumerate(names)}
    parents = [index[r.parent] if r.parent is not None else -1 for r in rows]
    heads = np.array([r.head for r in rows], dtype=np.float64)
    tails = np.array([r.tail for r in rows], dtype=np.float64)
    return map_humanoid(names, parents, heads, tails)


def audit(rows, **options):
    mesh = skinned_mesh(humanoid_rig(rows))
    rig, parts = audit_rig("Armature", [mesh], AuditOptions(**options))
    return rig, parts[0]


def codes(findings):
    return {f.code: f for f in findings}


@pytest.mark.parametrize("names", [MIXAMO, UNREAL, VROID], ids=["mixamo", "unreal", "vroid"])
def test_each_pipelines_names_map_to_the_humanoid_bones_they_mean(names):
    m = mapping_of(humanoid_rows(names))
    assert m.humanoid and not m.missing and not m.ambiguous
    assert m.bones == expected(names)
    # Limbs by name; a numbered spine chain (Spine, Spine1, Spine2) gets its roles from the chain.
    assert {m.how[k] for k in m.how if k not in ("spine", "chest", "upperChest")} == {"name"}


def test_rigify_names_map_through_the_chain_split_where_the_hierarchy_is_broken():
    # Every DEF bone a root (Rigify's DEF bones hang from ORG/MCH helpers): the spine chain is
    # read from its numbers, split where the shoulders sit along it.
    m = mapping_of(humanoid_rows(RIGIFY, flat=True))
    assert m.humanoid and not m.missing
    assert m.bones == expected(RIGIFY)
    assert m.how["hips"] == "hierarchy" and m.how["head"] == "hierarchy" and m.how["leftHand"] == "name"


def test_unnamed_middles_are_found_between_their_ends():
    rows = humanoid_rows(MIXAMO, rename={"mixamorig:LeftForeArm": "Bone.007", "mixamorig:Spine1": "Bone.002"})
    m = mapping_of(rows)
    assert m.bones["leftLowerArm"] == "Bone.007" and m.how["leftLowerArm"] == "hierarchy"
    assert m.bones["chest"] == "Bone.002" and m.how["chest"] == "hierarchy"


def test_a_hand_under_another_name_is_the_one_child_of_the_forearm():
    m = mapping_of(humanoid_rows(MIXAMO, rename={"mixamorig:LeftHand": "Palm.L"}))
    assert m.bones["leftHand"] == "Palm.L" and m.how["leftHand"] == "hierarchy" and not m.missing


def test_a_missing_hand_is_named_and_nothing_else_is():
    rig, _ = audit(humanoid_rows(MIXAMO, without=("Hand",)), target="unity")
    found = codes(rig.findings)
    f = found["humanoid-bone-missing"]
    assert f.severity == "WARNING"
    assert f.details["missing"] == ["rightHand"]
    assert "rightHand" in f.message
    assert rig.skeleton["humanoid"]["bones"]["leftHand"] == "mixamorig:LeftHand"


def test_a_missing_hand_matters_where_a_humanoid_is_mapped():
    """Unity's Humanoid avatar or a stated rest pose maps the humanoid: WARNING; three.js draws the
    rig the same without a hand bone: INFO, saying so."""
    rows = humanoid_rows(MIXAMO, without=("Hand",))
    severity = {name: codes(audit(rows, **options)[0].findings)["humanoid-bone-missing"].severity
                for name, options in {"threejs": {}, "unreal": {"target": "unreal"}, "unity": {"target": "unity"},
                                      "rest pose": {"rest_pose": "t"}}.items()}
    assert severity == {"threejs": "INFO", "unreal": "INFO", "unity": "WARNING", "rest pose": "WARNING"}
    assert "target 'threejs' draws the rig the same" in codes(audit(rows)[0].findings)["humanoid-bone-missing"].message


def test_a_complete_humanoid_has_no_missing_bone_and_a_tube_is_no_humanoid():
    rig, _ = audit(humanoid_rows(MIXAMO))
    assert "humanoid-bone-missing" not in codes(rig.findings)
    tube = skinned_mesh(chain_tube(("Root", "Child")))
    rig, _ = audit_rig("Armature", [tube], AuditOptions(rest_pose="t"))
    assert not {"humanoid-bone-missing", "rest-pose", "rest-pose-mismatch"} & set(codes(rig.findings))
    assert rig.skeleton["humanoid"]["humanoid"] is False


def test_two_unrelated_bones_claiming_one_humanoid_bone_are_ambiguous():
    rows = humanoid_rows(MIXAMO)
    extra = replace(rows[-1], name="hand_r", parent="mixamorig:Hips")  # a second right hand, elsewhere
    m = mapping_of(rows + (extra,))
    assert m.ambiguous == {"rightHand": ("mixamorig:RightHand", "hand_r")}
    assert "rightHand" not in m.bones and "rightHand" not in m.missing
    rig, _ = audit(rows + (extra,))
    f = codes(rig.findings)["humanoid-bone-ambiguous"]
    assert f.severity == "INFO" and f.bones == ("mixamorig:RightHand", "hand_r")
    assert "humanoid-bone-missing" not in codes(rig.findings)


@pytest.mark.parametrize("degrees", [0.0, 5.0, 20.0, 31.0, 40.0, 45.0, 59.0, 70.0])
def test_the_arm_angle_is_measured_as_built(degrees):
    rig, _ = audit(humanoid_rows(MIXAMO, arm_degrees=degrees))
    limbs = rig.skeleton["rest_pose"]["limbs"]
    for arm in ("leftArm", "rightArm"):
        assert limbs[arm]["below_horizontal"] == pytest.approx(degrees, abs=1e-9)
        assert limbs[arm]["forward"] == pytest.approx(0.0, abs=1e-9)
    for leg in ("leftLeg", "rightLeg"):
        assert limbs[leg]["from_vertical"] == pytest.approx(0.0, abs=1e-9)
    convention = rig.skeleton["rest_pose"]["convention"]
    assert convention == ("t" if degrees <= 10 else "a" if 30 <= degrees <= 60 else None)


def test_the_angle_does_not_depend_on_how_the_armature_lies():
    # The same A-pose turned 90 degrees about X (a glTF's Y-up) and scaled: the same angles.
    rows = humanoid_rows(MIXAMO, arm_degrees=40.0, scale=0.01)
    turned = tuple(replace(r, head=(r.head[0], -r.head[2], r.head[1]), tail=(r.tail[0], -r.tail[2], r.tail[1]))
                   for r in rows)
    m = mapping_of(turned)
    from skin_audit.core.skeleton.rest_pose import measure_rest_pose

    pose = measure_rest_pose(m, tuple(r.name for r in turned), np.array([r.head for r in turned]))
    assert pose is not None
    assert pose.limbs["leftArm"]["below_horizontal"] == pytest.approx(40.0, abs=1e-9)
    assert pose.limbs["rightArm"]["below_horizontal"] == pytest.approx(40.0, abs=1e-9)


def test_rest_pose_is_info_unless_the_pipeline_asks_for_another():
    a_pose = humanoid_rows(MIXAMO, arm_degrees=40.0)
    rig, _ = audit(a_pose)
    assert codes(rig.findings)["rest-pose"].severity == "INFO"
    assert "rest-pose-mismatch" not in codes(rig.findings)
    rig, _ = audit(a_pose, rest_pose="a")
    assert "rest-pose-mismatch" not in codes(rig.findings)
    rig, _ = audit(a_pose, rest_pose="t")
    f = codes(rig.findings)["rest-pose-mismatch"]
    assert f.severity == "WARNING" and f.details["wanted"] == "t"
    assert f.details["off_degrees"]["leftArm"] == pytest.approx(40.0, abs=1e-9)
    assert "rest-pose" not in codes(rig.findings)
    rig, _ = audit(humanoid_rows(MIXAMO), rest_pose="a")
    assert codes(rig.findings)["rest-pose-mismatch"].details["off_degrees"]["rightArm"] == pytest.approx(-45.0)


@pytest.mark.parametrize(("joints", "target", "flagged"), [
    (300, "unreal", True), (257, "unreal", True), (256, "unreal", False), (300, "threejs", False),
    (300, "unity", False), (300, "godot", False),
])
def test_joint_budget_at_the_documented_limit(joints, target, flagged):
    mesh = skinned_mesh(many_joint_rig(joints))
    _, parts = audit_rig("Armature", [mesh], AuditOptions(target=target, shape_checks=False))
    found = codes(parts[0].findings)
    assert ("joint-budget-exceeded" in found) is flagged
    assert parts[0].metrics["weighting_bones"] == joints
    if flagged:
        f = found["joint-budget-exceeded"]
        assert f.severity == "WARNING" and f.details["limit"] == 256 and f.details["joints"] == joints
        assert "Skeletal Mesh Rendering Paths" in f.details["source"]


def file_of(path, rows, armature="Armature"):
    rig, _ = audit(rows)
    return FileAudit(path, "ok", rigs=(replace(rig, armature=armature),))


def test_identical_skeletons_are_grouped_and_a_scaled_copy_is_the_same():
    files = [file_of("a.blend", humanoid_rows(MIXAMO)), file_of("b.glb", humanoid_rows(MIXAMO)),
             file_of("c.fbx", humanoid_rows(MIXAMO, scale=0.01))]
    groups = skeleton_groups(files)
    assert len(groups) == 1 and [m["path"] for m in groups[0]["members"]] == ["a.blend", "b.glb", "c.fbx"]
    assert cross_file_findings(files) == tuple(files)


def test_a_renamed_spine_bone_makes_two_skeletons_and_names_both_names():
    files = [file_of("a.blend", humanoid_rows(MIXAMO)),
             file_of("b.blend", humanoid_rows(MIXAMO, rename={"mixamorig:Spine1": "mixamorig:Spine_Mid"})),
             file_of("c.blend", humanoid_rows(MIXAMO))]
    groups = skeleton_groups(files)
    assert [[m["path"] for m in g["members"]] for g in groups] == [["a.blend", "c.blend"], ["b.blend"]]
    diff = groups[1]["differs_from_skeleton_1"]
    assert diff["renamed"] == [{"from": "mixamorig:Spine1", "to": "mixamorig:Spine_Mid"}]
    assert diff["missing"] == diff["extra"] == diff["reparented"] == diff["moved"] == []
    out = cross_file_findings(files)
    f = codes(out[1].rigs[0].findings)["skeleton-differs"]
    assert f.severity == "INFO"
    assert set(f.bones) == {"mixamorig:Spine1", "mixamorig:Spine_Mid"}
    assert "'mixamorig:Spine1' -> 'mixamorig:Spine_Mid'" in f.message
    assert "skeleton-differs" not in codes(out[2].rigs[0].findings)


def test_missing_moved_and_rerolled_bones_are_each_named():
    base = humanoid_rows(MIXAMO)
    moved = tuple(replace(r, head=(r.head[0], r.head[1], r.head[2] + 0.05)) if r.name == "mixamorig:Head" else r
                  for r in base)
    rolled = tuple(replace(r, roll=0.5) if r.name == "mixamorig:LeftHand" else r for r in base)
    files = [file_of("a", base), file_of("b", humanoid_rows(MIXAMO, without=("Hand",))), file_of("c", moved),
             file_of("d", rolled)]
    groups = skeleton_groups(files)
    assert len(groups) == 4
    assert groups[1]["differs_from_skeleton_1"]["missing"] == ["mixamorig:RightHand"]
    assert groups[2]["differs_from_skeleton_1"]["moved"] == ["mixamorig:Head"]
    assert groups[3]["differs_from_skeleton_1"]["rerolled"] == ["mixamorig:LeftHand"]


def test_an_unrelated_skeleton_is_another_group_without_a_finding():
    tube = skinned_mesh(chain_tube(("Root", "Child")))
    rig, _ = audit_rig("Tube", [tube], AuditOptions())
    files = [file_of("a", humanoid_rows(MIXAMO)), FileAudit("t", "ok", rigs=(rig,))]
    assert len(skeleton_groups(files)) == 2
    assert "skeleton-differs" not in codes(cross_file_findings(files)[1].rigs[0].findings)


def test_required_bones_are_vrm_1_0s_fifteen():
    assert len(REQUIRED) == 15
    assert set(REQUIRED) == {"hips", "spine", "head"} | {
        f"{s}{b}" for s in ("left", "right")
        for b in ("UpperArm", "LowerArm", "Hand", "UpperLeg", "LowerLeg", "Foot")}
