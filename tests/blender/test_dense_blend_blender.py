# SPDX-License-Identifier: GPL-3.0-or-later
"""One pose by the dense product (``core/maths/dense_blend``) on a mesh Blender skinned: large
enough for its blocks and threads, against Blender's own Armature modifier and against the
layout of runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from skin_audit.core import tolerances
from skin_audit.core.maths import dense_blend

pytestmark = [pytest.mark.blender, pytest.mark.blender42, pytest.mark.usefixtures("empty_scene")]


def test_one_pose_by_the_dense_product_matches_blenders_armature_modifier(bpy):
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from tests.factories.blender_rigs import chain_rig

    names = ("A", "B", "C", "D", "E")
    rings, segments = 900, 100  # 90,000 vertices: several blocks, split between threads
    assert rings * segments > dense_blend.PARALLEL_FROM + dense_blend.BLOCK
    obj, arm = chain_rig("Dense", names, rings=rings, segments=segments)
    obj.location = (0.3, -1.0, 0.5)  # the mesh's space is not the armature's
    for k, name in enumerate(names[1:], 1):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (0.3 * k, 0.1, -0.2 * k)
    arm.pose.bones["C"].scale = (1.0, 1.4, 0.8)
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = extract(obj, obj.modifiers["Armature"], depsgraph, measure_drift=False)
    assert mesh.blender is not None
    ours = recompute_blender(mesh, mesh.read_pose)
    assert not mesh.has_blend_layout()  # the dense product served this pose
    size = mesh.size()
    err = np.linalg.norm(ours.positions - mesh.blender, axis=1)
    moved = np.linalg.norm(mesh.blender - mesh.rest, axis=1)
    assert moved.max() > 0.1 * size  # the pose moves the mesh
    assert err.max() <= tolerances.SKINNING_MATCH_RELATIVE * size
    layout = recompute_blender(dataclasses.replace(mesh), mesh.read_pose, build_layout=True)
    np.testing.assert_allclose(ours.positions, layout.positions, rtol=0, atol=1e-12 * size)
    np.testing.assert_array_equal(ours.influences, layout.influences)
