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

from skin_audit.core.audit import mesh_audit
from skin_audit.core.audit.armature_modifier import recompute_blender
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.stress_poses import standard_poses
from tests.core.audit.test_sweep_threads import _bbone_chain_mesh


def test_the_cleared_pose_and_the_stress_poses_each_reach_their_own_check(monkeypatch):
    mesh = _bbone_chain_mesh(600)
    options = AuditOptions(shape_checks=False)
    plain = mesh_audit.audit_skinned_mesh(mesh, options)
    held = standard_poses(mesh.bones, 30.0)[0].channel  # every bone bent: far from rest
    calls: list[int] = []
    blend_many = mesh_audit.recompute_blender_many

    def spy(m, channels):
        calls.append(len(channels))
        return blend_many(m, channels)

    monkeypatch.setattr(mesh_audit, "recompute_blender_many", spy)
    with_cleared = mesh_audit.audit_skinned_mesh(dataclasses.replace(mesh, cleared_channel=held), options)
    assert calls == [4]  # the cleared pose and the three stress poses, together
    # The engine check is blind to the cleared pose.
    assert with_cleared.metrics["engine_divergence_by_pose"] == plain.metrics["engine_divergence_by_pose"]
    np.testing.assert_array_equal(with_cleared.measures["engine_divergence"], plain.measures["engine_divergence"])
    # The drift check sees the cleared pose, as the pose alone deforms the mesh.
    alone = recompute_blender(mesh.for_test_poses(), held).positions
    expected = np.linalg.norm(alone - mesh.rest, axis=1)
    assert "bind-pose-drift" in [f.code for f in with_cleared.findings]
    np.testing.assert_allclose(with_cleared.measures["bind_drift"], expected, rtol=0, atol=1e-12)
    assert expected.max() > 0.1
