# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the twist experiment on the demo rig: pose in Blender, recompute in numpy
from the armature's own matrices, and compare with the Armature modifier."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np
from numpy.typing import NDArray

from ... import __version__
from ...core import tolerances
from ...core.audit.armature_modifier import apply_affine
from ...core.findings import Finding
from ...core.maths.affine import rigid_inverse
from ...core.maths.dqs import dual_quaternion_skinning
from ...core.maths.lbs import linear_blend_skinning
from ...core.twist.checks import BindCheck, PoseCheck, check_pose, twist_findings
from ...core.twist.outputs import Scene, ScenePose
from ..build import twist_rig as demo_rig
from ..read import arrays as read
from ..read.weights import group_weights

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class TwistRun:
    """Everything the experiment measured, ready for reports and files."""

    scene: Scene
    binds: tuple[BindCheck, ...]
    checks: tuple[PoseCheck, ...]
    findings: tuple[Finding, ...]
    size: float


def _influences(obj: bpy.types.Object, bone_names: Sequence[str]) -> tuple[NDArray[np.intp], F64]:
    """(V, J) slots: every bone for every vertex, weight from its group (0 if none)."""
    names = [g.name for g in obj.vertex_groups]
    rows = group_weights(obj)  # (G, V)
    weights = np.zeros((rows.shape[1], len(bone_names)))
    for j, bone in enumerate(bone_names):
        if bone in names:
            weights[:, j] = rows[names.index(bone)]
    indices = np.tile(np.arange(len(bone_names), dtype=np.intp), (rows.shape[1], 1))
    return indices, weights


def _skin(method: str, points: F64, idx: NDArray[np.intp], w: F64, skin: F64) -> F64:
    if method == "dqs":
        # Blender's matrices are float32: judge their rigidity at float32 precision.
        return dual_quaternion_skinning(points, idx, w, skin, tolerances.ORTHONORMAL_FLOAT32)
    return linear_blend_skinning(points, idx, w, skin)


def run_twist_experiment(
    angles_deg: Sequence[float],
    methods: Sequence[str] = ("lbs",),
    context: bpy.types.Context | None = None,
    rig: demo_rig.DemoRig | None = None,
) -> TwistRun:
    """Pose the demo rig at each angle for each method, and measure.

    Builds the rig when ``rig`` is None.  The rig's pose, rest/pose switch and
    Preserve Volume flag are restored afterwards.
    """
    context = context or bpy.context
    rig = rig or demo_rig.build_demo_rig(context)
    arm, mesh = rig.armature, rig.mesh
    child = arm.pose.bones[demo_rig.CHILD_BONE]
    saved = (child.rotation_mode, tuple(child.rotation_quaternion), tuple(child.rotation_euler),
             tuple(child.rotation_axis_angle), arm.data.pose_position,
             rig.modifier.use_deform_preserve_volume)
    try:
        mesh_world = read.matrix(mesh.matrix_world)
        bind_vertices = apply_affine(mesh_world, read.mesh_positions(mesh.data))
        triangles = read.mesh_triangles(mesh.data)
        state = read.read_armature(arm)
        bind_inverse = rigid_inverse(state.bind, "bind matrix", tolerances.ORTHONORMAL_FLOAT32)
        idx, w = _influences(mesh, state.names)
        size = float(np.ptp(bind_vertices, axis=0).max())
        segments = int(np.sum(np.isclose(bind_vertices[:, 2], bind_vertices[0, 2])))
        ring_of = (np.arange(len(bind_vertices)) // segments).astype(np.intp)
        child_j = state.names.index(demo_rig.CHILD_BONE)
        binds, poses, checks = [], [], []
        for method in methods:
            demo_rig.set_method(rig, method)
            # Bind check: Blender with the armature at rest; numpy with G = B.
            arm.data.pose_position = "REST"
            context.view_layer.update()
            blender_rest = apply_affine(mesh_world, read.evaluated_positions(mesh))
            arm.data.pose_position = "POSE"
            numpy_rest = _skin(method, bind_vertices, idx, w, state.bind @ bind_inverse)
            binds.append(BindCheck(method, float(np.abs(numpy_rest - bind_vertices).max()),
                                   float(np.abs(blender_rest - bind_vertices).max())))
            for angle in angles_deg:
                demo_rig.set_twist(rig, angle)
                context.view_layer.update()
                current = read.read_armature(arm).current
                skin = current @ bind_inverse
                numpy_pos = _skin(method, bind_vertices, idx, w, skin)
                blender_pos = apply_affine(mesh_world, read.evaluated_positions(mesh))
                poses.append(ScenePose(method, float(angle), current, skin, numpy_pos, blender_pos))
                checks.append(check_pose(method, angle, bind_vertices, triangles, w[:, child_j],
                                         ring_of, numpy_pos, blender_pos))
    finally:
        child.rotation_mode = saved[0]  # mode first: setting it converts the rotation
        child.rotation_quaternion = saved[1]
        child.rotation_euler = saved[2]
        child.rotation_axis_angle = saved[3]
        arm.data.pose_position = saved[4]
        rig.modifier.use_deform_preserve_volume = saved[5]
        context.view_layer.update()
    scene = Scene(
        tool_version=__version__,
        blender_version=bpy.app.version_string,
        mesh_object=mesh.name,
        armature_object=arm.name,
        bone_names=state.names,
        parents=state.parents,
        bind_vertices=bind_vertices,
        triangles=triangles,
        ring_of=ring_of,
        indices=idx,
        weights=w,
        bind=state.bind,
        bind_inverse=bind_inverse,
        poses=tuple(poses),
    )
    return TwistRun(scene, tuple(binds), tuple(checks), tuple(twist_findings(binds, checks, size)), size)
