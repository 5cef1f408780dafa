# SPDX-License-Identifier: GPL-3.0-or-later
"""The mesh audit blends its test poses together (no bpy): the cleared pose of the drift check and
the stress poses of the engine check go through one ``recompute_blender_many`` call (the B-Bone
curves of every pose in one pass), and each result must reach its own check.

The rig: a chain whose middle bone is a B-Bone, so the engine check needs Blender's blend at every
stress pose.  A cleared pose held away from rest (as constraints would hold it) must report its
drift as the pose alone gives it, and must leave the engine divergence at every stress pose as it
is without a cleared pose.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from skin_audit.core.audit import armature_modifier, mesh_audit
from skin_audit.core.audit.armature_modifier import recompute_blender, recompute_blender_many
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.pose import Pose, from_rest
from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings
from skin_audit.core.audit.stress_poses import standard_poses
from tests.core.audit.test_sweep_threads import _bbone_chain_mesh
from tests.factories.audits import audit_skinned_mesh


def test_the_cleared_pose_and_the_stress_poses_each_reach_their_own_check(monkeypatch):
    mesh = _bbone_chain_mesh(600)
    options = AuditOptions(shape_checks=False)
    plain = audit_skinned_mesh(mesh, options)
    held = standard_poses(mesh.bones, 30.0)[0].channel  # every bone bent: far from rest
    calls: list[int] = []
    blend_many = mesh_audit.recompute_blender_many

    def spy(m, channels):
        calls.append(len(channels))
        return blend_many(m, channels)

    monkeypatch.setattr(mesh_audit, "recompute_blender_many", spy)
    with_cleared = audit_skinned_mesh(dataclasses.replace(mesh, cleared_channel=held), options)
    assert calls == [4]  # the cleared pose and the three stress poses, together
    # The engine check is blind to the cleared pose.
    assert with_cleared.metrics["engine_divergence_by_pose"] == plain.metrics["engine_divergence_by_pose"]
    np.testing.assert_array_equal(with_cleared.measures["engine_divergence"], plain.measures["engine_divergence"])
    # The drift check sees the cleared pose, as the pose alone deforms the mesh.
    alone = recompute_blender(mesh, Pose(held)).positions
    expected = np.linalg.norm(alone - mesh.rest, axis=1)
    assert "bind-pose-drift" in [f.code for f in with_cleared.findings]
    np.testing.assert_allclose(with_cleared.measures["bind_drift"], expected, rtol=0, atol=1e-12)
    assert expected.max() > 0.1


def _turned(mesh, degrees_by_bone):
    """Channels turning the named bones about Y (the others at rest)."""
    channel = np.broadcast_to(np.eye(4), (len(mesh.bones.names), 4, 4)).copy()
    for name, degrees in degrees_by_bone.items():
        c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
        channel[mesh.bones.names.index(name), :3, :3] = [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]
    return channel


def _mixed_poses(mesh, turns=({"Tip": 20.0}, {"Tip": -35.0})):
    """Stress poses (every bone bent: each blends every run) and turns of a few bones (a single
    tip's turn blends its own runs only), interleaved, and the rest pose."""
    stress = [p.channel for p in standard_poses(mesh.bones, 30.0)]
    turned = [_turned(mesh, t) for t in turns]
    return [stress[0], turned[0], stress[1], turned[1], stress[2], _turned(mesh, {})]


def test_poses_blended_in_batches_are_each_pose_blended_alone(monkeypatch):
    """``recompute_blender_many`` batches the poses that blend every run (two a batch here) and
    blends the others alone: each result equals that pose recomputed by itself."""
    mesh = _bbone_chain_mesh(600)
    poses = _mixed_poses(mesh)
    monkeypatch.setattr(armature_modifier, "BATCH_BYTES", 2 * 24 * int(mesh.blend_layout.runs.starts[-1]))
    together = recompute_blender_many(mesh, from_rest(poses))
    assert len(together) == len(poses)
    moved = 0.0
    for channel, result in zip(poses, together, strict=True):
        alone = recompute_blender(mesh, Pose(channel), build_layout=True)
        np.testing.assert_allclose(result.positions, alone.positions, rtol=0, atol=1e-12)
        moved = max(moved, float(np.abs(alone.positions - mesh.rest).max()))
    assert moved > 0.1


def test_preserve_volume_keeps_each_poses_own_order_sensitive_vertices():
    mesh = dataclasses.replace(_bbone_chain_mesh(600), modifier=ArmatureModifierSettings("Armature",
                                                                                        preserve_volume=True))
    # Root and tip twisted 100 degrees apart, each way: the tip's rotation falls in the other
    # hemisphere of the running sum, where three groups weight a vertex.
    poses = _mixed_poses(mesh, ({"Root": 100.0, "Tip": -100.0}, {"Tip": 20.0}))
    together = recompute_blender_many(mesh, from_rest(poses))
    assert together[1].order_sensitive.any() and not together[3].order_sensitive.any()
    for channel, result in zip(poses, together, strict=True):
        alone = recompute_blender(mesh, Pose(channel))
        np.testing.assert_array_equal(result.order_sensitive, alone.order_sensitive)
        np.testing.assert_allclose(result.positions, alone.positions, rtol=0, atol=1e-12)
