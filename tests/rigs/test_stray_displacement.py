# SPDX-License-Identifier: GPL-3.0-or-later
"""stray-weights judged by what moves, against Blender's own evaluation: the audit's displacement
of an island vertex is the distance between Blender's evaluated vertex with and without the stray
weight, each deform bone turned 90 degrees about its own X, Y, Z axis in turn (the stress poses)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from tests.factories.characters import Bone, arm_weights, armature, mesh, tube

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


def _blender_displacement(bpy, rig, obj, vertex: int, group: str) -> float:
    """Largest |p(with) - p(without)| of ``vertex`` over the three stress poses, Blender evaluating both."""
    from skin_audit.blender.read.arrays import stored_positions

    def positions():
        out = []
        for axis in range(3):
            for pb in rig.pose.bones:
                pb.rotation_mode = "QUATERNION"
                q = [math.cos(math.pi / 4), 0.0, 0.0, 0.0]
                q[1 + axis] = math.sin(math.pi / 4)
                pb.rotation_quaternion = q
            bpy.context.view_layer.update()
            dg = bpy.context.evaluated_depsgraph_get()
            out.append(stored_positions(obj.evaluated_get(dg).data)[vertex].astype(np.float64))
        for pb in rig.pose.bones:
            pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        bpy.context.view_layer.update()
        return np.array(out)

    with_weight = positions()
    obj.vertex_groups[group].remove([vertex])
    without = positions()
    return float(np.linalg.norm(with_weight - without, axis=1).max())


@pytest.mark.parametrize("weight, severity", [(0.25, "WARNING"), (0.004, "INFO")])
def test_the_stray_displacement_is_blenders(bpy, empty_scene, weight, severity):
    from skin_audit.blender.run.audit_scene import audit_rigs, skinned_meshes

    rig = armature("Rig", (Bone("root", (0.0, 0.0, 1.0), (1.0, 0.0, 1.0)),
                           Bone("child", (1.0, 0.0, 1.0), (2.0, 0.0, 1.0), "root")))
    v, f = tube(0.0, 2.0, rings=9)
    groups = arm_weights(v, "root", "child", 1.0, blend=0.2)
    island = int(np.flatnonzero(v[:, 0] == v[:, 0].max())[0])  # on the far ring: Child's alone
    idx, w_root = groups["root"]
    w_root, w_child = np.array(w_root), np.array(groups["child"][1])
    w_root[island], w_child[island] = weight, 1.0 - weight
    obj = mesh("Tube", v, f, {"root": (idx, w_root), "child": (idx, w_child)}, rig)
    bpy.context.view_layer.update()
    _, (audit,) = audit_rigs(bpy.context, skinned_meshes([obj]), AuditOptions())
    (found,) = [x for x in audit.findings if x.code == "stray-weights"]
    assert (found.severity, found.vertices) == (severity, (island,))
    truth = _blender_displacement(bpy, rig, obj, island, "root")
    assert found.details["worst_displacement"] == pytest.approx(truth, rel=1e-5, abs=1e-6)
