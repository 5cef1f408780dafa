# SPDX-License-Identifier: GPL-3.0-or-later
"""Animated rigs built in code: the twist experiment's cylinder whose child bone twists to a
known angle at a known frame, and an action whose keys carry the defects the animation audit
names (a zero scale key, an Euler flip, the armature object keyed, a channel for a bone that
does not exist)."""

from __future__ import annotations

import math
from pathlib import Path

import bpy

from skin_audit.blender.build.twist_rig import CHILD_BONE, ROOT_BONE, build_demo_rig, twist_quaternion

#: The twist action: the child's angle (degrees) at each keyed frame.
TWIST_KEYS = ((1, 0.0), (37, 170.0), (60, 0.0))
TWIST_PEAK_FRAME, TWIST_PEAK_DEGREES = 37, 170.0


def twist_action(arm: bpy.types.Object, name: str = "Twist") -> bpy.types.Action:
    """An action turning the child bone about its axis through ``TWIST_KEYS`` (quaternion keys)."""
    pb = arm.pose.bones[CHILD_BONE]
    pb.rotation_mode = "QUATERNION"
    action = bpy.data.actions.new(name)
    action.use_fake_user = True
    (arm.animation_data or arm.animation_data_create()).action = action
    for frame, degrees in TWIST_KEYS:
        pb.rotation_quaternion = twist_quaternion(degrees)
        pb.keyframe_insert("rotation_quaternion", frame=frame)
    pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    return action


def broken_action(arm: bpy.types.Object, name: str = "Broken") -> bpy.types.Action:
    """Keys a rigger would not want: Root scaled to zero at frame 10 (and left squashed to half its
    height at frame 20, its last key), Root's Z Euler angle
    jumping 340 degrees between frames 1 and 2, the armature object's location keyed, and a
    channel for a bone named 'Gone' that the armature does not have."""
    ad = arm.animation_data or arm.animation_data_create()
    playing = ad.action
    action = bpy.data.actions.new(name)
    action.use_fake_user = True
    ad.action = action
    root = arm.pose.bones[ROOT_BONE]
    root.rotation_mode = "XYZ"
    for frame, scale in ((1, (1.0, 1.0, 1.0)), (10, (0.0, 0.0, 0.0)), (20, (1.0, 1.0, 0.5))):
        root.scale = scale
        root.keyframe_insert("scale", frame=frame)
    for frame, degrees in ((1, 170.0), (2, -170.0), (20, -170.0)):
        root.rotation_euler = (0.0, 0.0, math.radians(degrees))
        root.keyframe_insert("rotation_euler", frame=frame, index=2)
    arm.keyframe_insert("location", frame=1)
    curves = _fcurves(action)
    curves.new('pose.bones["Gone"].location', index=0).keyframe_points.insert(1.0, 0.5)
    ad.action = playing
    root.scale = (1.0, 1.0, 1.0)
    root.rotation_euler = (0.0, 0.0, 0.0)
    return action


def _fcurves(action: bpy.types.Action):
    """The F-Curve collection new channels go in: the action's first channel bag (Blender 4.4+) or
    its legacy list."""
    layers = getattr(action, "layers", None)
    if layers:
        return layers[0].strips[0].channelbags[0].fcurves
    return action.fcurves


def save_animated_twist(path: Path, broken: bool = False) -> Path:
    """The twist rig with the twist action playing (and the broken one beside it), saved to ``path``."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    rig = build_demo_rig()
    twist_action(rig.armature)
    if broken:
        broken_action(rig.armature)
    bpy.context.scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path
