# SPDX-License-Identifier: GPL-3.0-or-later
"""Put a sweep test pose on the user's armature: only when the rigger asks
(one undo step), never as part of an audit."""

from __future__ import annotations

import math

import bpy
from mathutils import Quaternion, Vector

from ...core.errors import InputError
from ..read.extract import set_rest_channels


def apply_test_pose(armature: bpy.types.Object, bone: str, axis: str, degrees: float) -> None:
    """Every pose channel to rest, then ``bone`` turned about its own ``axis`` by ``degrees``.

    The rotation is written in the bone's own rotation mode, so it shows in the
    usual fields of the Bone tab.
    """
    if armature.type != "ARMATURE":
        raise InputError(f"'{armature.name}' is not an armature")
    pb = armature.pose.bones.get(bone)
    if pb is None:
        raise InputError(f"'{armature.name}' has no bone '{bone}' (renamed?): run the audit again")
    if axis not in ("x", "y", "z"):
        raise InputError(f"unknown axis {axis!r}")
    set_rest_channels(armature)
    direction = Vector([1.0 if a == axis else 0.0 for a in "xyz"])
    turn = Quaternion(direction, math.radians(degrees))
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = turn
    elif pb.rotation_mode == "AXIS_ANGLE":
        pb.rotation_axis_angle = (math.radians(degrees), *direction)
    else:
        pb.rotation_euler = turn.to_euler(pb.rotation_mode)
