# SPDX-License-Identifier: GPL-3.0-or-later
"""The pose sweep on B-Bones: a sweep pose that turns a bone but not its B-Bone's handles
bends that B-Bone, and the sweep measures its vertices with the segments' per-vertex blend.

Independent truth: Blender.  At a sweep pose put on the rig, the per-vertex blended 4x4
the sweep's 3x3 comes from must carry each rest vertex to Blender's evaluated position;
the sweep's value at that pose is the smallest singular value of that 3x3 (by weight sum).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.blender.test_bbone import POSITION_TOL, build_rig, evaluate, handles

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]


def _blended(mesh, channel, bent):
    """(V, 4, 4) sum_k w_k M_k per vertex (armature space), B-Bones by their segments; and the weight sum."""
    from skin_audit.core.audit.armature_modifier import to_armature
    from skin_audit.core.maths import bbone as bb
    from tests.factories import bbone_reference as ref

    co = to_armature(mesh)
    total = np.zeros((mesh.vertex_count, 4, 4))
    contrib = np.zeros(mesh.vertex_count)
    for j, idx, w in mesh.deform_columns:
        rb = mesh.bones.bbones[j] if mesh.bones.bbones else None
        if rb is not None and j in bent:
            segs = bb.rig_pose_segments(rb, j, channel, mesh.bones.rest, mesh.read_pose.bbone(j))
            m = ref.vertex_matrices(co[idx], rb.spline, channel[j], rb.rest_segments, segs)
        else:
            m = np.broadcast_to(channel[j], (len(idx), 4, 4))
        total[idx] += w[:, None, None] * m
        contrib[idx] += w
    return co, total, contrib


def test_a_bone_turned_without_its_bbone_handles_bends_them_and_the_sweep_measures_it(bpy):
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit import pose_sweep

    arm, tube = build_rig(bpy, segments=(5, 9, 12), edit=handles("ABSOLUTE"))
    evaluate(bpy, tube)
    mesh = extract(tube, tube.modifiers[0], bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    names = mesh.bones.names
    b0, b1 = names.index("B0"), names.index("B1")
    # B1's handles are the free bones H0 and H1: turning B0 turns B1 but not its handles.
    result = pose_sweep.run_sweep(mesh, (90.0,))
    k = next(i for i, p in enumerate(result.poses) if p.bone == b0 and p.axis == "x" and p.degrees == 90.0)
    channel = pose_sweep.pose_channel(mesh, result.poses[k])
    turned = np.abs(channel[:, :3, :3] - channel[b0, :3, :3]).max(axis=(1, 2)) < 1e-9
    bent = pose_sweep._bent_bbones(mesh, turned)
    assert b1 in bent

    # The same pose on the rig in Blender: B0 bent 90 degrees about its own X.
    arm.pose.bones["B0"].rotation_mode = "XYZ"
    arm.pose.bones["B0"].rotation_euler = (math.radians(90.0), 0.0, 0.0)
    theirs = evaluate(bpy, tube)
    co, total, contrib = _blended(mesh, channel, bent)
    moved = contrib > 1e-4
    ours_arm = np.einsum("vij,vj->vi", total[:, :3, :], np.column_stack([co, np.ones(len(co))]))
    ours_arm = ours_arm[moved] / contrib[moved, None]
    premat = mesh.mesh_to_armature
    ours = (ours_arm - premat[:3, 3]) @ np.linalg.inv(premat[:3, :3]).T
    assert np.linalg.norm(theirs[moved] - ours, axis=1).max() < POSITION_TOL  # the blend is Blender's

    # The sweep keeps, per vertex, the smallest singular value of that blend (by weight sum)
    # over all its poses: recompute it pose by pose here.
    on_b1 = next(idx for j, idx, _ in mesh.deform_columns if j == b1)
    sv = np.linalg.svd(total[on_b1, :3, :3] / contrib[on_b1, None, None], compute_uv=False)[:, -1]
    assert sv.min() < 0.99  # the bent B-Bone really squashes some of its vertices at this pose
    worst = np.ones(len(on_b1))
    for pose in result.poses:
        ch = pose_sweep.pose_channel(mesh, pose)
        tr = np.abs(ch[:, :3, :3] - ch[pose.bone, :3, :3]).max(axis=(1, 2)) < 1e-9
        _, t, c = _blended(mesh, ch, pose_sweep._bent_bbones(mesh, tr))
        worst = np.minimum(worst, np.linalg.svd(t[on_b1, :3, :3] / c[on_b1, None, None], compute_uv=False)[:, -1])
    assert worst.min() < 0.99
    np.testing.assert_allclose(result.smallest[on_b1], np.minimum(worst, 1.0), atol=1e-9)


def test_the_dqs_measure_is_one_at_each_vertex_worst_pose(bpy):
    """The sweep's DQS measure is 1 by construction (the rotation part of a dual-quaternion blend,
    normalised, is a rotation): Blender's dual-quaternion blend (``accumulate_dual``) of every
    vertex at its worst LBS pose, recomputed here over every column, bent B-Bones included,
    must measure 1 to rounding."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit import pose_sweep
    from skin_audit.core.audit.armature_modifier import accumulate_dual
    from skin_audit.core.audit.pose import Pose
    from tests.factories.collapse import dqs_rotation_measures

    arm, tube = build_rig(bpy, segments=(5, 9, 12), edit=handles("ABSOLUTE"))
    evaluate(bpy, tube)
    mesh = extract(tube, tube.modifiers[0], bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    result = pose_sweep.run_sweep(mesh, (90.0, 180.0))
    on_bbones = 0
    bbone_vertices = np.zeros(mesh.vertex_count, dtype=bool)
    for bone, idx, _ in mesh.deform_columns:
        bbone_vertices[idx] |= mesh.bones.bbone_segments[bone] > 1
    for k in np.unique(result.worst_pose[result.worst_pose >= 0]):
        vs = np.flatnonzero(result.worst_pose == k)
        posed = Pose(pose_sweep.pose_channel(mesh, result.poses[k]))  # a test pose: from rest
        dual = accumulate_dual(mesh, posed)
        smallest, det = dqs_rotation_measures(dual.real[vs])
        assert np.abs(smallest - 1.0).max() < 1e-12 and np.abs(det - 1.0).max() < 1e-12
        on_bbones += int(bbone_vertices[vs].sum())
    assert on_bbones > 0  # B-Bone joints were among the blends
    assert np.all(result.dqs_smallest == 1.0)
