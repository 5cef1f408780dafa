# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's own evaluation of the sweep's test poses, on sandbox copies.

The armature copy has its animation, drivers and constraints switched off so
Blender evaluates plain forward kinematics, as the numpy sweep does; the
user's armature is never posed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import bpy
import numpy as np

from ...core.audit.pose_sweep import SweepPose
from ...core.audit.shape_checks import SpotChecker, SpotSample
from ..sandbox import Sandbox, sandbox
from .arrays import stored_positions
from .extract import follow_copy, modifier_position, set_rest_channels, trim_after


def _axis_quaternion(axis: str, degrees: float) -> tuple[float, float, float, float]:
    half = math.radians(degrees) / 2.0
    q = [math.cos(half), 0.0, 0.0, 0.0]
    q[1 + "xyz".index(axis)] = math.sin(half)
    return (q[0], q[1], q[2], q[3])


#: Vertex indices a Geometry Nodes float (float32) holds exactly: the sample's stride is taken there.
EXACT_FLOAT_INDEX = 2**24


def _int_inputs(compare: bpy.types.Node) -> tuple[bpy.types.NodeSocket, bpy.types.NodeSocket]:
    """The integer inputs A and B of a Compare node set to ``INT``.

    Up to Blender 5.0 the node has one pair of inputs per data type (``A_INT``, ``B_INT``, ...,
    the others disabled); from 5.1 on it has one pair, ``A`` and ``B``, typed by ``data_type``.
    Either way they are the inputs named A and B of type ``INT``."""
    found = {s.name: s for s in compare.inputs if s.type == "INT" and s.name in ("A", "B")}
    if len(found) != 2:
        raise RuntimeError(f"Blender {bpy.app.version_string}: no integer inputs A and B on the Compare node "
                           f"(inputs: {[(s.identifier, s.type) for s in compare.inputs]})")
    return found["A"], found["B"]


def _keep_sample(box: Sandbox, sample: SpotSample) -> bpy.types.GeometryNodeTree:
    """A node group deleting every vertex but the sample's: index % stride == 0 or one of ``include``.

    Vertex groups pass through Delete Geometry, so an Armature modifier after it deforms the
    kept vertices as it would in the whole mesh, in their order."""
    group = box.track(bpy.data.node_groups, bpy.data.node_groups.new("__skin_audit_sample", "GeometryNodeTree"))
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    index = nodes.new("GeometryNodeInputIndex").outputs[0]
    modulo = nodes.new("ShaderNodeMath")
    modulo.operation = "FLOORED_MODULO"
    modulo.inputs[1].default_value = float(sample.stride)
    links.new(index, modulo.inputs[0])

    def equals(value: bpy.types.NodeSocket, number: int) -> bpy.types.NodeSocket:
        compare = nodes.new("FunctionNodeCompare")
        compare.data_type = "INT"
        compare.operation = "EQUAL"
        a, b = _int_inputs(compare)
        links.new(value, a)
        b.default_value = number
        return compare.outputs[0]

    keep = equals(modulo.outputs[0], 0)
    for vertex in sample.include:
        either = nodes.new("FunctionNodeBooleanMath")
        either.operation = "OR"
        links.new(keep, either.inputs[0])
        links.new(equals(index, vertex), either.inputs[1])
        keep = either.outputs[0]
    drop = nodes.new("FunctionNodeBooleanMath")
    drop.operation = "NOT"
    links.new(keep, drop.inputs[0])
    delete = nodes.new("GeometryNodeDeleteGeometry")
    delete.domain = "POINT"
    links.new(nodes.new("NodeGroupInput").outputs[0], delete.inputs["Geometry"])
    links.new(drop.outputs[0], delete.inputs["Selection"])
    links.new(delete.outputs[0], nodes.new("NodeGroupOutput").inputs[0])
    return group


def _spot_copies(box: Sandbox, obj: bpy.types.Object, mod: bpy.types.ArmatureModifier,
                 own_data: bool) -> tuple[bpy.types.Object, bpy.types.Object, int]:
    """The armature copy (no animation, drivers or constraints) and the mesh copy it deforms
    through ``mod`` alone, in ``box``; and the modifier's position in the stack."""
    # The test poses are poses: a rig the user shows at Rest Position is posed on a copy of its data.
    own_data = own_data or mod.object.data.pose_position != "POSE"
    arm = box.copy_object(mod.object, copy_data=own_data)
    if own_data:
        arm.data.pose_position = "POSE"
    arm.animation_data_clear()
    for pb in arm.pose.bones:
        for con in pb.constraints:
            con.mute = True
    mesh = box.copy_object(obj)
    position = modifier_position(obj, mod)
    trim_after(mesh, position, None)
    # Only this modifier takes the test pose: an Armature modifier before it (even on the
    # same armature) made the recomputation's input at the user's pose, and must again.
    if position >= 0:
        mesh.modifiers[position].object = arm
    follow_copy(mesh, obj, mod.object, arm)
    return arm, mesh, position


def _evaluate_poses(box: Sandbox, arm: bpy.types.Object, mesh: bpy.types.Object, names: list[str],
                    poses: Sequence[SweepPose], take: np.ndarray | None) -> list[np.ndarray]:
    """Blender's positions of ``mesh`` at each pose (one bone turned from rest), float32."""
    out = []
    for pose in poses:
        set_rest_channels(arm)
        pb = arm.pose.bones[names[pose.bone]]
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = _axis_quaternion(pose.axis, pose.degrees)
        positions = stored_positions(mesh.evaluated_get(box.depsgraph()).data)
        out.append(positions if take is None else positions[take])
    return out


def spot_checker(obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, box: Sandbox | None = None
                 ) -> SpotChecker:
    """A function evaluating sweep poses of ``obj`` (deformed by ``mod``) in Blender.

    It returns per pose Blender's positions of the sampled vertices (all of them without a
    sample) as Blender stores them, float32: the comparison with numpy widens them exactly, so
    no float64 copy of each pose is made here.  A sample is cut by a Geometry Nodes modifier just
    before ``mod`` on the sandbox copy, so Blender deforms those vertices alone.

    With ``box``, a sandbox the caller evaluates next (the extraction's) and keeps open until
    the checks are done, the copies are made there now: Blender builds and evaluates them with
    the extraction's copies instead of in a sandbox of its own (about 40 ms of a 706-bone rig).
    The armature copy then owns its data, so posing it re-evaluates no other copy, and the
    extraction first shows these copies at Rest Position to measure the bind pose
    (``Sandbox.rest_views``).  A check with a sample still uses a sandbox of its own (the cut
    adds a node group).  The copies are posed at Pose Position even when the user shows the rig
    at Rest Position (a copy of its data is switched).
    """
    names = [b.name for b in mod.object.data.bones]
    ready = None
    if box is not None:
        arm, mesh, position = _spot_copies(box, obj, mod, own_data=True)
        ready = (box, arm, mesh)
        # With an earlier Armature modifier the bind pose needs every one at rest; these copies
        # retarget ``mod`` alone, so the extraction then makes copies of its own.
        if not any(m.type == "ARMATURE" for m in list(obj.modifiers)[:max(position, 0)]):
            box.rest_views[(obj.name, mod.name)] = (arm, mesh)

    def check(poses: Sequence[SweepPose], sample: SpotSample | None = None) -> list[np.ndarray]:
        if ready is not None and sample is None:
            return _evaluate_poses(*ready, names, poses, None)
        with sandbox() as own:
            arm, mesh, position = _spot_copies(own, obj, mod, own_data=False)
            take: np.ndarray | None = None
            if sample is not None:
                if sample.vertex_count < EXACT_FLOAT_INDEX:
                    cut = mesh.modifiers.new("__skin_audit_sample", "NODES")
                    cut.node_group = _keep_sample(own, sample)
                    # (after the hidden modifier of parent type Armature, which runs first: each
                    # kept vertex is deformed as in the whole mesh all the same)
                    if position >= 0:
                        mesh.modifiers.move(len(mesh.modifiers) - 1, position)
                else:
                    take = sample.indices()
            return _evaluate_poses(own, arm, mesh, names, poses, take)

    return check
