# SPDX-License-Identifier: GPL-3.0-or-later
"""Surface measures on triangles carried by B-Bones with segments, against Blender's own
evaluated mesh.

The rig (``tests/blender/test_bbone.build_rig``): a tube along a chain of three connected bones,
each a B-Bone of 4 segments (a turned bone bends its neighbours' curves: their handles are the
bones beside them), smooth weights over the three.  At the sweep pose that is the worst one for
most of the B-Bone triangles, the audit's area ratio and stretch of every triangle whose worst
pose it is must equal those computed here from the positions Blender's Armature modifier gives
at that pose, by an SVD of each triangle's map from its rest plane.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.blender.test_bbone import build_rig, evaluate

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]


def own_measures(rest, posed):
    """(T,) area ratio and stretch of triangles (T, 3, 3) by an SVD of each map from the rest
    triangle's plane (an orthonormal basis of its two edges) to the posed edges."""
    e = np.stack([rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0]], axis=2)  # (T, 3, 2)
    f = np.stack([posed[:, 1] - posed[:, 0], posed[:, 2] - posed[:, 0]], axis=2)
    basis, coords = np.linalg.qr(e)  # e = basis @ coords, coords (T, 2, 2)
    assert basis.shape[-1] == 2
    s = np.linalg.svd(f @ np.linalg.inv(coords), compute_uv=False)  # (T, 2)
    return s[:, 0] * s[:, 1], s[:, 0]


def test_bbone_triangles_are_measured_as_blender_deforms_them(bpy):
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.pose_sweep import sweep_poses
    from skin_audit.core.audit.surface import measure_surface
    from tests.factories.surface_reference import surface_at

    arm, tube = build_rig(bpy, segments=(4, 4, 4))
    evaluate(bpy, tube)
    mesh = extract(tube, tube.modifiers[0], bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    assert list(mesh.bones.bbone_segments[:3]) == [4, 4, 4]
    result = measure_surface(mesh, (90.0,), 40.0)
    tri = result.triangles
    # Every triangle here touches a B-Bone with segments: all were left out before they were posed
    # exactly (``surface_triangles_bbone_skipped`` was the triangle count).
    assert result.bbone_measured == len(tri) > 0
    assert result.measured.sum() > 0.9 * len(tri)

    sweep = sweep_poses(mesh, (90.0,))
    on_sweep = result.pose_of["stretch"][(result.pose_of["stretch"] >= 0)
                                         & (result.pose_of["stretch"] < len(sweep))]
    k = int(np.bincount(on_sweep).argmax())
    pose = sweep[k]
    assert result.poses[k].label == pose.label(mesh.bones.names)
    pb = arm.pose.bones[mesh.bones.names[pose.bone]]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler["xyz".index(pose.axis)] = math.radians(pose.degrees)
    theirs = evaluate(bpy, tube)
    m = mesh.mesh_to_armature
    posed = theirs @ m[:3, :3].T + m[:3, 3]
    area, stretch = own_measures(mesh.rest_armature[tri], posed[tri])
    for name, own in (("stretch", stretch), ("area", area)):
        at = np.flatnonzero(result.pose_of[name] == k)
        assert at.size > 20, name
        assert np.allclose(result.values[name][at], own[at], rtol=1e-4, atol=1e-4), \
            (name, float(np.abs(result.values[name][at] - own[at]).max()))
    assert stretch.max() > 1.05 or area.min() < 0.95  # the pose really deforms the surface

    # Bent as plain bones (their curves ignored), the same triangles are measured wrong.
    from skin_audit.core.audit.pose_sweep import pose_channel

    plain_area, plain_stretch, _ = surface_at(mesh, pose_channel(mesh, pose))
    at = np.flatnonzero(result.pose_of["stretch"] == k)
    assert np.abs(plain_stretch[at] - stretch[at]).max() > 1e-2


@pytest.mark.parametrize("bone, axis, degrees", [("B1", "x", 60.0), ("B0", "z", -45.0), ("B2", "x", 90.0)])
def test_the_contact_test_poses_bbones_as_blender_does(bpy, bone, axis, degrees):
    """The contact test's posed positions (armature space) at a turn against Blender's evaluated
    mesh at the same turn: the B-Bones bend by their curves there too."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.interpenetration import interpenetration
    from skin_audit.core.audit.pose_sweep import SweepPose
    from tests.blender.test_bbone import POSITION_TOL
    from tests.factories.contact_reference import contact_positions

    arm, tube = build_rig(bpy, segments=(4, 4, 4))
    evaluate(bpy, tube)
    mesh = extract(tube, tube.modifiers[0], bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    ours = contact_positions([mesh], SweepPose(mesh.bones.names.index(bone), axis, degrees, "default"))
    pb = arm.pose.bones[bone]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler["xyz".index(axis)] = math.radians(degrees)
    theirs = evaluate(bpy, tube)
    m = mesh.mesh_to_armature
    theirs = theirs @ m[:3, :3].T + m[:3, 3]
    assert np.linalg.norm(ours - theirs, axis=1).max() < POSITION_TOL
    assert np.linalg.norm(theirs - mesh.rest_armature, axis=1).max() > 0.1  # the turn moves the tube
    # The test itself runs its poses through the same blend (whole, still and mixed triangles).
    assert interpenetration([mesh], 90.0).metrics["contact_poses"] > 0
