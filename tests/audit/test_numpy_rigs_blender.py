# SPDX-License-Identifier: GPL-3.0-or-later
"""The core tier's numpy factory (tests/factories/numpy_rigs.py) against real Blender:
bone rest frames, pose channels and the deformed mesh must be what Blender makes of the
same rig, so the core-tier rule tests stand on Blender's behaviour, not on a guess."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.factories import numpy_rigs as nr

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]

ROWS = (
    nr.BoneRow("Root", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    nr.BoneRow("Up", (0.0, 1.0, 0.0), (0.0, 1.0, 1.0), "Root", roll=0.3),
    nr.BoneRow("Arm.L", (0.2, 1.0, 0.0), (1.2, 1.1, -0.2), "Root", roll=-0.7),
    nr.BoneRow("Arm.R", (-0.2, 1.0, 0.0), (-1.2, 1.1, -0.2), "Root", roll=0.7),
    nr.BoneRow("Down", (0.0, 0.0, 0.0), (0.0, -1.0, 0.0), "Root"),
    nr.BoneRow("Free", (0.0, 1.0, 1.0), (0.5, 1.5, 1.5), "Up", inherit_rotation=False),
)


def build(bpy):
    from tests.factories import blender_rigs as rb

    specs = [rb.BoneSpec(r.name, r.head, r.tail, r.parent, r.roll) for r in ROWS]
    arm = rb.build_armature("Arm", specs)
    for r in ROWS:
        arm.data.bones[r.name].use_inherit_rotation = r.inherit_rotation
    return arm


def test_rest_frames_are_blenders(bpy):
    arm = build(bpy)
    assert len(arm.data.bones) == len(ROWS)
    for r in ROWS:
        blender = np.array(arm.data.bones[r.name].matrix_local)
        np.testing.assert_allclose(nr.rest_matrix(r.head, r.tail, r.roll), blender, atol=1e-6, err_msg=r.name)


def test_pose_channels_are_blenders(bpy):
    from mathutils import Matrix

    arm = build(bpy)
    # (Inherit Rotation off is modelled for parents without scale: Blender keeps the parent's scale.)
    basis = {"Root": nr.rotation("z", 0.4), "Up": nr.rotation("x", 0.9),
             "Arm.L": nr.rotation("y", -1.3) @ np.diag([1.2, 1.0, 0.8, 1.0]), "Free": nr.rotation("x", 0.5)}
    basis["Root"][:3, 3] = (0.1, 0.2, -0.3)
    for name, m in basis.items():
        arm.pose.bones[name].matrix_basis = Matrix(m.tolist())  # mathutils.Matrix takes rows
    bpy.context.view_layer.update()
    own = nr.channels(ROWS, basis)
    for j, r in enumerate(ROWS):
        pb = arm.pose.bones[r.name]
        blender = np.array(pb.matrix) @ np.linalg.inv(np.array(arm.data.bones[r.name].matrix_local))
        np.testing.assert_allclose(own[j], blender, atol=1e-5, err_msg=r.name)


def test_blender_positions_are_blenders_deformation(bpy):
    from mathutils import Matrix

    from tests.factories import blender_rigs as rb

    rig = nr.chain_tube(basis={"Root": nr.rotation("z", 0.3), "Child": nr.rotation("x", math.radians(70))})
    groups = {k: v.copy() for k, v in rig.groups.items()}
    groups["Root"][nr.ring(4)] = groups["Child"][nr.ring(4)] = 0.3  # renormalised by Blender
    groups["Root"][nr.ring(0)] = 5e-5  # below the 1e-4 rule: stays put
    specs = [rb.BoneSpec(r.name, r.head, r.tail, r.parent, r.roll) for r in rig.rows]
    weights = {g: (np.flatnonzero(w), w[w != 0]) for g, w in groups.items()}
    mesh, arm = rb.build_rig("Tube", specs, rig.rest, [], weights)
    for name, m in rig.basis.items():
        arm.pose.bones[name].matrix_basis = Matrix(m.tolist())
    bpy.context.view_layer.update()
    evaluated = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    blender = np.array([tuple(v.co) for v in evaluated.vertices])
    own = nr.blender_positions(rig.rest, tuple(groups), np.array(list(groups.values())), rig.rows, rig.channel())
    assert np.abs(blender - rig.rest).max() > 0.5  # the pose moves the tube
    np.testing.assert_allclose(own, blender, atol=2e-6 * 2.0)
