# SPDX-License-Identifier: GPL-3.0-or-later
"""A pose is passed, apart from the rest data: the read pose carries each B-Bone's pose
properties and Blender's joints there, a test pose starts from rest (as Blender's sandboxes
clear every pose channel, B-Bone curves included), and the mesh's caches are built once.

Independent truth: the Armature modifier's sum written out per vertex here, each B-Bone's curve
from the one-B-Bone reference (``bbone_reference.one_pose_segments``, never the batched pass).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from skin_audit.core.audit.armature_modifier import recompute_blender, recompute_blender_many
from skin_audit.core.audit.pose import Pose, from_rest
from skin_audit.core.maths import bbone as bb
from tests.core.audit.test_sweep_threads import _bbone_chain_mesh
from tests.factories import bbone_reference as ref

BEND = 1  # the chain's middle bone, a B-Bone of 7 segments

#: Pose properties far from rest: the curve they give differs from the rest one by tenths.
SHAPE = bb.BBoneShape(ease_in=0.8, ease_out=-0.4, roll_in=0.5, curve_in_x=0.3, curve_out_z=-0.2,
                      scale_in=(1.3, 1.0, 0.8))


def _mesh_with_pose_properties():
    """The chain with its B-Bone's pose properties set at the read pose (nothing read there)."""
    mesh = _bbone_chain_mesh(400)
    at = tuple(bb.BBonePose(SHAPE) if j == BEND else None for j in range(len(mesh.bones.names)))
    return dataclasses.replace(mesh, read_pose=Pose(mesh.read_pose.channel, at))


def _by_hand(mesh, channel, at):
    """The modifier's sum per vertex, ``co + sum_j w_j (M_j co - co) / sum_j w_j``, the B-Bone's
    ``M`` from the reference curve with ``at``'s pose properties."""
    co = mesh.rest_armature
    total = np.zeros_like(co)
    contrib = np.zeros(len(co))
    for j, idx, w in mesh.deform_columns:
        rb = mesh.bones.bbones[j]
        if rb is not None:
            joints = ref.one_pose_segments(rb, j, channel, mesh.bones.rest, at)
            m = ref.vertex_matrices(co[idx], rb.spline, channel[j], rb.rest_segments, joints)
            moved = np.einsum("vij,vj->vi", m[:, :3, :3], co[idx]) + m[:, :3, 3]
        else:
            moved = co[idx] @ channel[j][:3, :3].T + channel[j][:3, 3]
        total[idx] += w[:, None] * (moved - co[idx])
        contrib[idx] += w
    return co + total / contrib[:, None]


def _turned(mesh, degrees):
    """Every bone at rest but the Root, turned about X: the B-Bone and its handles follow it."""
    channel = np.broadcast_to(np.eye(4), (len(mesh.bones.names), 4, 4)).copy()
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    turn = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    # A turn of the Root about its head at the origin carries the whole chain.
    channel[:, :3, :3] = turn
    channel[BEND, :3, :3] = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ turn  # bent on the B-Bone
    return channel


def test_the_read_pose_uses_its_bbone_properties_and_a_test_pose_their_rest():
    mesh = _mesh_with_pose_properties()
    weighted = np.zeros(mesh.vertex_count, dtype=bool)
    weighted[next(idx for j, idx, _ in mesh.deform_columns if j == BEND)] = True
    for channel in (_turned(mesh, d) for d in (25.0, -60.0)):
        read = recompute_blender(mesh, mesh.read_pose.at(channel)).positions
        test = recompute_blender(mesh, Pose(channel)).positions
        np.testing.assert_allclose(read, _by_hand(mesh, channel, bb.BBonePose(SHAPE)), rtol=0, atol=1e-12)
        np.testing.assert_allclose(test, _by_hand(mesh, channel, None), rtol=0, atol=1e-12)
        assert np.abs(read - test)[weighted].max() > 0.05  # the pose properties really bend it
        np.testing.assert_array_equal(read[~weighted], test[~weighted])  # nothing else differs


def test_poses_with_different_bbone_properties_blend_together_as_each_alone():
    """One call over read and test poses mixed: the B-Bone's curves are grouped by what each pose
    adds to it, so each result is that pose's alone."""
    mesh = _mesh_with_pose_properties()
    channels = [_turned(mesh, d) for d in (25.0, -60.0, 110.0)]
    poses = [mesh.read_pose.at(channels[0]), Pose(channels[1]), mesh.read_pose.at(channels[2]),
             *from_rest(channels[:1])]
    together = recompute_blender_many(mesh, poses)
    for pose, result in zip(poses, together, strict=True):
        ref.forget_curves(*mesh.bones.bbones)
        alone = recompute_blender(mesh, pose, build_layout=True)
        np.testing.assert_allclose(result.positions, alone.positions, rtol=0, atol=1e-12)
    assert np.abs(together[0].positions - together[3].positions).max() > 0.05  # same channels, other shapes


def test_the_mesh_keeps_its_caches_across_poses():
    """No pose copies the mesh: the weight tables and the blend layout are built once on it."""
    mesh = _mesh_with_pose_properties()
    recompute_blender(mesh, mesh.read_pose, build_layout=True)
    layout, columns = mesh.blend_layout, mesh.flat_columns
    for degrees in (25.0, -60.0):
        recompute_blender(mesh, Pose(_turned(mesh, degrees)))
        recompute_blender_many(mesh, [mesh.read_pose.at(_turned(mesh, degrees))])
    assert mesh.blend_layout is layout and mesh.flat_columns is columns
