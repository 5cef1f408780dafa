# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the twist experiment on the demo rig: pose in Blender, recompute in numpy
from the armature's own matrices, and compare with the Armature modifier."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import bpy
import numpy as np
from numpy.typing import NDArray

from ...core import tolerances
from ...core.findings import Finding
from ...core.maths.affine import apply_affine, rigid_inverse
from ...core.maths.dqs import dual_quaternion_skinning
from ...core.maths.lbs import linear_blend_skinning
from ...core.twist.checks import BindCheck, PoseCheck, check_pose, twist_findings
from ...core.twist.outputs import Scene, ScenePose
from ...core.version import __version__
from ..build import twist_rig
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


@dataclass(frozen=True)
class _BindPose:
    """The rig as built, read once: world-space bind vertices, matrices and influences."""

    vertices: F64  # (V, 3) world space
    triangles: NDArray[np.intp]  # (T, 3)
    mesh_world: F64  # (4, 4)
    names: tuple[str, ...]
    parents: tuple[int, ...]
    bind: F64  # (J, 4, 4)
    bind_inverse: F64  # (J, 4, 4)
    indices: NDArray[np.intp]  # (V, J)
    weights: F64  # (V, J)
    ring_of: NDArray[np.intp]  # (V,)
    child_weight: F64  # (V,)


def _read_bind_pose(rig: twist_rig.DemoRig) -> _BindPose:
    arm, mesh = rig.armature, rig.mesh
    mesh_world = read.matrix(mesh.matrix_world)
    vertices = apply_affine(mesh_world, read.mesh_positions(mesh.data))
    state = read.read_armature(arm)
    idx, w = _influences(mesh, state.names)
    segments = int(np.sum(np.isclose(vertices[:, 2], vertices[0, 2])))
    return _BindPose(
        vertices=vertices, triangles=read.mesh_triangles(mesh.data), mesh_world=mesh_world,
        names=state.names, parents=state.parents, bind=state.bind,
        bind_inverse=rigid_inverse(state.bind, "bind matrix", tolerances.ORTHONORMAL_FLOAT32),
        indices=idx, weights=w, ring_of=(np.arange(len(vertices)) // segments).astype(np.intp),
        child_weight=w[:, state.names.index(twist_rig.CHILD_BONE)],
    )


@contextmanager
def _pose_restored(rig: twist_rig.DemoRig, context: bpy.types.Context) -> Iterator[None]:
    """The child's rotation (every mode), the rest/pose switch and Preserve Volume, as they were."""
    arm = rig.armature
    child = arm.pose.bones[twist_rig.CHILD_BONE]
    saved = (child.rotation_mode, tuple(child.rotation_quaternion), tuple(child.rotation_euler),
             tuple(child.rotation_axis_angle), arm.data.pose_position,
             rig.modifier.use_deform_preserve_volume)
    try:
        yield
    finally:
        child.rotation_mode = saved[0]  # mode first: setting it converts the rotation
        child.rotation_quaternion = saved[1]
        child.rotation_euler = saved[2]
        child.rotation_axis_angle = saved[3]
        arm.data.pose_position = saved[4]
        rig.modifier.use_deform_preserve_volume = saved[5]
        context.view_layer.update()


def _bind_check(method: str, rig: twist_rig.DemoRig, bind: _BindPose, context: bpy.types.Context) -> BindCheck:
    """Blender with the armature at Rest Position; numpy with G = B."""
    rig.armature.data.pose_position = "REST"
    context.view_layer.update()
    blender_rest = apply_affine(bind.mesh_world, read.evaluated_positions(rig.mesh))
    rig.armature.data.pose_position = "POSE"
    numpy_rest = _skin(method, bind.vertices, bind.indices, bind.weights, bind.bind @ bind.bind_inverse)
    return BindCheck(method, float(np.abs(numpy_rest - bind.vertices).max()),
                     float(np.abs(blender_rest - bind.vertices).max()))


def _pose_at(method: str, angle: float, rig: twist_rig.DemoRig, bind: _BindPose,
             context: bpy.types.Context) -> tuple[ScenePose, PoseCheck]:
    """Twist the child in Blender, recompute from the armature's own matrices, compare."""
    twist_rig.set_twist(rig, angle)
    context.view_layer.update()
    current = read.read_armature(rig.armature).current
    skin = current @ bind.bind_inverse
    numpy_pos = _skin(method, bind.vertices, bind.indices, bind.weights, skin)
    blender_pos = apply_affine(bind.mesh_world, read.evaluated_positions(rig.mesh))
    pose = ScenePose(method, float(angle), current, skin, numpy_pos, blender_pos)
    check = check_pose(method, angle, bind.vertices, bind.triangles, bind.child_weight, bind.ring_of,
                       numpy_pos, blender_pos)
    return pose, check


def run_twist_experiment(
    angles_deg: Sequence[float],
    methods: Sequence[str] = ("lbs",),
    context: bpy.types.Context | None = None,
    rig: twist_rig.DemoRig | None = None,
) -> TwistRun:
    """Pose the demo rig at each angle for each method, and measure.

    Builds the rig when ``rig`` is None.  The rig's pose, rest/pose switch and
    Preserve Volume flag are restored afterwards.
    """
    context = context or bpy.context
    rig = rig or twist_rig.build_demo_rig(context)
    bind = _read_bind_pose(rig)
    binds, poses, checks = [], [], []
    with _pose_restored(rig, context):
        for method in methods:
            twist_rig.set_method(rig, method)
            binds.append(_bind_check(method, rig, bind, context))
            for angle in angles_deg:
                pose, check = _pose_at(method, angle, rig, bind, context)
                poses.append(pose)
                checks.append(check)
    scene = Scene(
        tool_version=__version__,
        blender_version=bpy.app.version_string,
        mesh_object=rig.mesh.name,
        armature_object=rig.armature.name,
        bone_names=bind.names,
        parents=bind.parents,
        bind_vertices=bind.vertices,
        triangles=bind.triangles,
        ring_of=bind.ring_of,
        indices=bind.indices,
        weights=bind.weights,
        bind=bind.bind,
        bind_inverse=bind.bind_inverse,
        poses=tuple(poses),
    )
    size = float(np.ptp(bind.vertices, axis=0).max())
    return TwistRun(scene, tuple(binds), tuple(checks), tuple(twist_findings(binds, checks, size)), size)
