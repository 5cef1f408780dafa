# SPDX-License-Identifier: GPL-3.0-or-later
"""Which bones a rig moves together: constraints and drivers that read other bones.

A rig that spreads twist over several bones (twist bones with Copy Rotation,
B-Bone roll driven by a neighbour, Rigify's DEF bones copying its tweak
controls) never moves those bones alone; the sweep, which turns one bone at a
time, says so with these links.
"""

from __future__ import annotations

import re

import bpy

#: The bone a data path belongs to: ``pose.bones["X"]...`` (object) or ``bones["X"]...`` (armature data).
_BONE_PATH = re.compile(r'^(?:pose\.)?bones\["((?:[^"\\]|\\.)*)"\]')
#: Transform channels a driver variable may read from a bone (a custom property is a setting, not a motion).
_MOTION = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(location|rotation_\w+|scale|matrix\w*|head|tail)')


def _unquote(name: str) -> str:
    return name.replace('\\"', '"').replace("\\\\", "\\")


def _constraint_targets(con: bpy.types.Constraint, arm: bpy.types.Object) -> list[str]:
    """Bones of ``arm`` a constraint reads (target, pole target, Armature constraint targets)."""
    out = []
    pairs = [(getattr(con, "target", None), getattr(con, "subtarget", "")),
             (getattr(con, "pole_target", None), getattr(con, "pole_subtarget", ""))]
    pairs += [(t.target, t.subtarget) for t in getattr(con, "targets", ())]
    for target, bone in pairs:
        if target is not None and target.original == arm and bone:
            out.append(bone)
    return out


def _driver_links(arm: bpy.types.Object) -> list[tuple[str, str]]:
    """(driven bone, bone read) for every driver of the armature object and its data."""
    out = []
    for owner in (arm, arm.data):
        anim = owner.animation_data
        if anim is None:
            continue
        for fc in anim.drivers:
            driven = _BONE_PATH.match(fc.data_path)
            if driven is None or fc.mute:
                continue
            for var in fc.driver.variables:
                for t in var.targets:
                    if t.id is None or getattr(t.id, "original", t.id) not in (arm, arm.data):
                        continue
                    if var.type in ("TRANSFORMS", "ROTATION_DIFF", "LOC_DIFF") and t.bone_target:
                        out.append((_unquote(driven.group(1)), t.bone_target))
                    elif var.type == "SINGLE_PROP":
                        read = _MOTION.match(t.data_path or "")
                        if read is not None:
                            out.append((_unquote(driven.group(1)), _unquote(read.group(1))))
    return out


def bone_links(arm_eval: bpy.types.Object, names: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Per bone (in ``names`` order), the other bones of the armature whose pose its enabled
    constraints or drivers read: the bones the rig moves it from."""
    arm = arm_eval.original
    links: dict[str, set[str]] = {n: set() for n in names}
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.mute:  # a driven influence may switch it on: only muted ones never act
                continue
            links[pb.name].update(b for b in _constraint_targets(con, arm) if b != pb.name)
    for driven, read in _driver_links(arm):
        if driven in links and read != driven and read in links:
            links[driven].add(read)
    return tuple(tuple(sorted(links[n])) for n in names)
