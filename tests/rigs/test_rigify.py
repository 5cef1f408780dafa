# SPDX-License-Identifier: GPL-3.0-or-later
"""A Rigify character, audited as the rig it is: one rig entry, structure judged on the
deform hierarchy an exporter writes, helper bones never above INFO, no false mirror
mismatches, and the sweep saying when the rig poses a swept bone from its controls.

The character is generated once per session (``rigify_character`` in tests/conftest.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from tests.factories.rigify import BODY, LEFT_ARM_BBONES, RIG, pose_left_arm_fk

pytestmark = pytest.mark.blender


def _open(bpy, path: Path) -> None:
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False)


@pytest.fixture(scope="module")
def audited(bpy, rigify_character):
    """The file audit of the character at rest, timed."""
    from skin_audit.blender.run.audit_files import audit_file

    start = time.perf_counter()
    result = audit_file(rigify_character, AuditOptions())
    elapsed = time.perf_counter() - start
    print(f"\nRigify character: file audit (load + extract + audit) {elapsed:.2f} s")
    facts = {}
    rig = bpy.data.objects[RIG]
    facts["deform"] = {b.name for b in rig.data.bones if b.use_deform}
    facts["bones"] = len(rig.data.bones)
    facts["bbones"] = sum(b.use_deform and b.bbone_segments > 1 for b in rig.data.bones)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return result, facts


def test_the_character_is_a_production_rig(audited):
    """A production rig: hundreds of bones, most of them helpers, deform B-Bones."""
    result, facts = audited
    assert result.status == "ok", result.message
    assert facts["bones"] > 3 * len(facts["deform"]) and len(facts["deform"]) >= 100
    assert facts["bbones"] >= 20
    (mesh,) = result.meshes
    assert mesh.object == BODY and mesh.metrics["unweighted_vertices"] == 0


def test_one_rig_entry_reports_the_armature_once(audited):
    result, _ = audited
    (rig,) = result.rigs
    assert rig.armature == RIG and rig.meshes == (BODY,)
    armature_codes = {"multiple-root-bones", "bbones-on-deform-bones", "deform-bone-without-weights",
                      "unpaired-side-bone", "mirror-axis-mismatch", "no-mirrored-bones"}
    assert not armature_codes & {f.code for f in result.meshes[0].findings}
    assert rig.metrics["deform_bones"] < rig.metrics["bones"]
    # The JSON carries it.
    data = result.to_dict()
    assert [r["armature"] for r in data["rigs"]] == [RIG] and data["rigs"][0]["meshes"] == [BODY]


def test_structure_is_judged_on_the_deform_hierarchy(audited):
    """Rigify hangs its DEF bones from ORG/MCH helpers: an exporter writing deform bones
    only gets many roots, and the finding says which helpers they hang from.  Helper bones
    themselves are never the subject of a WARNING or ERROR."""
    result, facts = audited
    (rig,) = result.rigs
    (roots,) = [f for f in rig.findings if f.code == "multiple-root-bones"]
    assert set(roots.bones) <= facts["deform"] and "DEF-spine" in roots.bones
    assert roots.count == rig.metrics["deform_roots"] > 1
    assert any(h.startswith(("ORG-", "MCH-")) for h in roots.details["helper_parents"])
    for f in (*rig.findings, *result.meshes[0].findings):
        if f.severity != "INFO":
            assert set(f.bones) <= facts["deform"], (f.code, set(f.bones) - facts["deform"])


def test_no_false_mirror_mismatches(audited):
    """Rigify's rig is symmetric by construction (its helper ORG-heel.02 lies along the mirror
    axis, the degenerate case; deform pairs all mirror exactly)."""
    result, _ = audited
    (rig,) = result.rigs
    codes = {f.code for f in rig.findings}
    assert not codes & {"mirror-axis-mismatch", "unpaired-side-bone", "no-mirrored-bones", "mirror-axis-convention"}
    assert rig.metrics["mirror_matched_fraction"] == pytest.approx(1.0)


def test_the_sweep_says_the_rig_poses_its_deform_bones(audited):
    """Rigify's DEF bones copy its tweak controls: a bone swept alone is not what the rig does."""
    result, _ = audited
    squash = [f for f in result.meshes[0].findings if f.code in ("twist-collapse", "volume-loss")]
    assert squash
    for f in squash:
        assert "Swept alone" in f.message and f.details["rig_poses_it_from"], f.message
        assert all(not n.startswith("DEF-") for n in f.details["rig_poses_it_from"])


def test_posed_through_its_controls_its_bbones_bend(bpy, rigify_character):
    """Posing the arm through its controls bends its B-Bones: the end segments of each arm
    B-Bone turn relative to each other, and the body follows."""
    from skin_audit.blender.run.audit_scene import audit_rigs, skinned_meshes

    _open(bpy, rigify_character)
    rig = bpy.data.objects[RIG]
    body = bpy.data.objects[BODY]
    before = np.array([v.co for v in body.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices])
    pose_left_arm_fk(rig)
    bpy.context.view_layer.update()
    evaluated = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    for name in LEFT_ARM_BBONES:
        pb = evaluated.pose.bones[name]
        n = rig.data.bones[name].bbone_segments
        first = np.array(pb.bbone_segment_matrix(0, rest=False))[:3, :3]
        last = np.array(pb.bbone_segment_matrix(n - 1, rest=False))[:3, :3]
        turn = np.degrees(np.arccos(np.clip((np.trace(first.T @ last) - 1.0) / 2.0, -1.0, 1.0)))
        assert turn > 10.0, f"{name}: the B-Bone did not bend ({turn:.2f} deg between its end segments)"
    after = np.array([v.co for v in body.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices])
    assert np.linalg.norm(after - before, axis=1).max() > 0.1

    start = time.perf_counter()
    rigs, meshes = audit_rigs(bpy.context, skinned_meshes(bpy.context.scene.objects), AuditOptions())
    print(f"\nRigify character posed: audit_rigs {time.perf_counter() - start:.2f} s")
    (mesh,) = meshes
    assert len(rigs) == 1
    # What the recomputation compares still agrees with Blender at the pose.
    assert "skinning-mismatch" not in {f.code for f in mesh.findings}
    assert mesh.metrics["vertices_compared"] > 0
    bpy.ops.wm.read_factory_settings(use_empty=True)


def test_the_symmetry_convention_search_is_linear_on_every_bone_pair(bpy, rigify_character):
    """All 300-odd Rigify pairs (helpers included): one pass per distinct offset, not per pair."""
    from skin_audit.blender.read.extract import read_bones
    from skin_audit.core import tolerances
    from skin_audit.core.audit import symmetry

    _open(bpy, rigify_character)
    rig = bpy.data.objects[RIG]
    bones, _ = read_bones(rig.evaluated_get(bpy.context.evaluated_depsgraph_get()))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    pairs = symmetry.pair_bones(bones.names, bones.heads)
    frames = symmetry.mirror_frames(bones.rest, pairs)
    assert len(frames) > 200
    start = time.perf_counter()
    assert symmetry.shared_convention(frames, tolerances.MIRROR_ANGLE_DEGREES) is None
    print(f"\nshared_convention over {len(frames)} pairs: {1e3 * (time.perf_counter() - start):.1f} ms")
    # The helper heel bone along the mirror axis is the degenerate case: excused, and the only one.
    plain = symmetry.rotation_angles(np.array([f.offset for f in frames]))
    judged = symmetry.mirror_offset_angles(bones.rest, frames, pairs.normal, np.eye(3))
    excused = {bones.names[f.left] for f, a, b in zip(frames, plain, judged, strict=True)
               if a > tolerances.MIRROR_ANGLE_DEGREES >= b}
    assert excused == {"ORG-heel.02.L"}
    assert (judged <= tolerances.MIRROR_ANGLE_DEGREES).all()


def test_automatic_weights_are_not_a_warning(audited):
    """Rigify's automatic weights miss a sum of 1 by up to ~1e-3 on most of the body: Blender divides by
    the sum, and so does the default target's path (Blender's glTF exporter, then three.js), so the
    rule says so at INFO; the engine comparison finds nothing the sums would explain."""
    result, _ = audited
    (mesh,) = result.meshes
    (f,) = [f for f in mesh.findings if f.code == "weights-not-normalized"]
    assert f.count > mesh.vertices // 2  # most of the body (not vacuous)
    assert (f.severity, f.details["target"], f.details["target_keeps_sums"]) == ("INFO", "threejs", False)
    assert "nothing shows" in f.message and "exporter divides" in f.message
