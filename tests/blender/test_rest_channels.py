# SPDX-License-Identifier: GPL-3.0-or-later
"""Clearing a (sandbox) pose resets every pose channel, B-Bone pose properties included,
and Blender then evaluates every bone at rest."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]

#: Blender's B-Bone pose properties (Bone Properties > Bendy Bones, Pose Mode), written out here.
BBONE_SCALARS = ("bbone_curveinx", "bbone_curveinz", "bbone_curveoutx", "bbone_curveoutz", "bbone_rollin",
                 "bbone_rollout", "bbone_easein", "bbone_easeout")


def test_every_channel_is_back_at_rest(bpy, empty_scene):
    from skin_audit.blender.read.extract import REST_CHANNELS, set_rest_channels
    from tests.factories.blender_rigs import BoneSpec, build_armature

    arm = build_armature("A", [BoneSpec("a", (0, 0, 0), (0, 0, 1), bbone_segments=4),
                               BoneSpec("b", (0, 0, 1), (0, 0, 2), parent="a", bbone_segments=4)])
    for k, pb in enumerate(arm.pose.bones):  # every channel away from rest
        pb.location = (0.1, 0.2, 0.3 + k)
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = (0.8, 0.6, 0.0, 0.0)
        pb.rotation_euler = (0.3, 0.2, 0.1)
        pb.rotation_axis_angle = (0.5, 1.0, 0.0, 0.0)
        pb.scale = (1.5, 0.5, 2.0)
        for prop in BBONE_SCALARS:
            setattr(pb, prop, 0.4)
        pb.bbone_scalein = pb.bbone_scaleout = (1.4, 1.3, 1.2)
    bpy.context.view_layer.update()
    assert not np.allclose(np.array(arm.pose.bones["b"].matrix), np.array(arm.data.bones["b"].matrix_local))
    set_rest_channels(arm)
    bpy.context.view_layer.update()
    assert {p for p, _ in REST_CHANNELS} >= {*BBONE_SCALARS, "bbone_scalein", "bbone_scaleout"}
    for pb in arm.pose.bones:
        for prop, value in REST_CHANNELS:
            got = getattr(pb, prop)
            got = tuple(got) if hasattr(got, "__len__") else (got,)
            assert got == pytest.approx(value), (pb.name, prop)
        np.testing.assert_allclose(np.array(pb.matrix), np.array(pb.bone.matrix_local), atol=1e-6)
    # Every B-Bone segment back on its rest frame too.
    if hasattr(arm.pose.bones["b"], "bbone_segment_matrix"):
        pb = arm.pose.bones["b"]
        for i in range(pb.bone.bbone_segments):
            np.testing.assert_allclose(np.array(pb.bbone_segment_matrix(i, rest=False)),
                                       np.array(pb.bbone_segment_matrix(i, rest=True)), atol=1e-6)
