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
from ...core.audit.shape_checks import SpotChecker
from ..sandbox import sandbox
from .arrays import stored_positions
from .extract import set_rest_channels, trim_after


def _axis_quaternion(axis: str, degrees: float) -> tuple[float, float, float, float]:
    half = math.radians(degrees) / 2.0
    q = [math.cos(half), 0.0, 0.0, 0.0]
    q[1 + "xyz".index(axis)] = math.sin(half)
    return (q[0], q[1], q[2], q[3])


def spot_checker(obj: bpy.types.Object, mod: bpy.types.ArmatureModifier) -> SpotChecker:
    """A function evaluating sweep poses of ``obj`` (deformed by ``mod``) in Blender.

    It returns per pose Blender's (V, 3) positions as Blender stores them, float32: the
    comparison with numpy widens them exactly, so no float64 copy of each pose is made here.
    """

    def check(poses: Sequence[SweepPose]) -> list[np.ndarray]:
        out = []
        with sandbox() as box:
            arm = box.copy_object(mod.object)
            arm.animation_data_clear()
            for pb in arm.pose.bones:
                for con in pb.constraints:
                    con.mute = True
            mesh = box.copy_object(obj)
            position = list(obj.modifiers).index(mod)
            trim_after(mesh, position, None)
            # Only this modifier takes the test pose: an Armature modifier before it (even on the
            # same armature) made the recomputation's input at the user's pose, and must again.
            mesh.modifiers[position].object = arm
            names = [b.name for b in mod.object.data.bones]
            for pose in poses:
                set_rest_channels(arm)
                pb = arm.pose.bones[names[pose.bone]]
                pb.rotation_mode = "QUATERNION"
                pb.rotation_quaternion = _axis_quaternion(pose.axis, pose.degrees)
                out.append(stored_positions(mesh.evaluated_get(box.depsgraph()).data))
        return out

    return check
