# SPDX-License-Identifier: GPL-3.0-or-later
"""A rig's actions as Blender plays them, frame by frame, on sandbox copies.

Which actions animate an armature: every action with a channel naming one of its bones
(``pose.bones["..."]``), of every slot (Blender 4.4+ layered actions) or in the legacy list,
plus the one the armature plays.  Each is played alone on a copy of the armature (NLA off,
constraints and drivers on and pointed at the copy where they pointed at the original), so
the user's scene, pose, frame and action never change; the copy's bone matrices are read
at every frame in batches, never all frames at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import bpy
import numpy as np

from ...core.audit.animation_data import ActionData, Channel, EulerSamples, bone_channel
from ..actions import action_fcurves
from ..sandbox import Sandbox
from .arrays import pose_matrices, stored_positions
from .extract import follow_copy, trim_after

#: Frames read from Blender before the numpy side measures them (it splits them by memory).
BATCH_FRAMES = 64


def armature_actions(arm: bpy.types.Object, names: Sequence[str] = ()) -> list[bpy.types.Action]:
    """The actions that animate ``arm``'s bones (and the one it plays), named ones only when given."""
    bones = set(arm.data.bones.keys())
    playing = arm.animation_data.action if arm.animation_data is not None else None
    out = []
    for action in bpy.data.actions:
        if names and action.name not in names:
            continue
        paths = {p[0] for fc in action_fcurves(action) if (p := bone_channel(fc.data_path)) is not None}
        if action == playing or paths & bones:
            out.append(action)
    return out


def frame_range(action: bpy.types.Action) -> tuple[float, float]:
    """The frames an action plays: its manual range when set, else its keys' (Blender's own)."""
    start, end = action.frame_range
    return float(start), float(end)


def _keys(fc: Any) -> np.ndarray:
    """(K, 2) float64 an F-Curve's keys (frame, value), one ``foreach_get``."""
    flat = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
    fc.keyframe_points.foreach_get("co", flat)
    return flat.reshape(-1, 2).astype(np.float64)


def action_frames(action: bpy.types.Action, step: float, limits: tuple[float, float] | None) -> list[float]:
    """The frames to evaluate: the action's range (or ``limits``) every ``step`` frames, both ends in."""
    start, end = limits if limits is not None else frame_range(action)
    if end < start:
        return []
    count = int(math.floor((end - start) / step + 1e-9))
    frames = [start + k * step for k in range(count + 1)]
    if end - frames[-1] > 1e-6:
        frames.append(end)
    return frames


def read_action_data(action: bpy.types.Action, arm: bpy.types.Object, frames: Sequence[float]) -> ActionData:
    """The keys of ``action`` and its bones' Euler channels sampled at ``frames``."""
    channels = []
    euler = []
    for fc in action_fcurves(action):
        channels.append(Channel(fc.data_path, int(fc.array_index), _keys(fc)))
        parsed = bone_channel(fc.data_path)
        if parsed is not None and parsed[1] == "rotation_euler" and parsed[0] in arm.pose.bones:
            if arm.pose.bones[parsed[0]].rotation_mode in ("QUATERNION", "AXIS_ANGLE"):
                continue  # keyed but not played: the bone turns by another channel
            euler.append(EulerSamples(parsed[0], int(fc.array_index), tuple(frames),
                                      tuple(float(fc.evaluate(f)) for f in frames)))
    # A manual frame range is the range the action plays; without one Blender's range is its keys'.
    manual = bool(getattr(action, "use_frame_range", False))
    keyed = [c.keys[:, 0] for c in channels if len(c.keys)]
    keys = (float(min(k.min() for k in keyed)), float(max(k.max() for k in keyed))) if keyed else None
    played = frame_range(action) if manual or keys is None else keys
    return ActionData(action.name, played, tuple(channels), tuple(euler))


def _point_at_copy(copy: bpy.types.Object, original: bpy.types.Object) -> None:
    """Constraints and drivers of ``copy`` that read ``original`` read ``copy`` instead (a rig's
    controls and mechanism bones are its own)."""
    for pb in copy.pose.bones:
        for con in pb.constraints:
            for attr in ("target", "pole_target"):
                if getattr(con, attr, None) == original:
                    setattr(con, attr, copy)
            for t in getattr(con, "targets", ()):  # the Armature constraint
                if getattr(t, "target", None) == original:
                    t.target = copy
    ad = copy.animation_data
    if ad is not None:
        for fc in ad.drivers:
            for var in fc.driver.variables:
                for t in var.targets:
                    if t.id == original:
                        t.id = copy


#: Pose channels a clip may key, put back to the user's values before each action plays (a channel
#: one action keys and the next does not would otherwise keep the first action's last value).
POSE_CHANNELS = (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3), ("rotation_axis_angle", 4),
                 ("scale", 3))


def _reset_channels(copy: bpy.types.Object, original: bpy.types.Object) -> None:
    """The copy's pose channels set to the original's, one ``foreach_get``/``foreach_set`` each."""
    n = len(original.pose.bones)
    for prop, width in POSE_CHANNELS:
        values = np.empty(n * width, dtype=np.float32)
        original.pose.bones.foreach_get(prop, values)
        copy.pose.bones.foreach_set(prop, values)
    copy.update_tag()


def _assign(copy: bpy.types.Object, action: bpy.types.Action) -> None:
    ad = copy.animation_data or copy.animation_data_create()
    ad.use_nla = False  # the action alone, as its own clip
    ad.action = action
    slots = [s for s in getattr(action, "slots", ())
             if getattr(s, "target_id_type", "OBJECT") in ("OBJECT", "UNSPECIFIED")]
    if hasattr(ad, "action_slot") and ad.action_slot is None and slots:
        ad.action_slot = slots[0]


class ActionPlayer:
    """One armature copy in ``box`` that plays an action and reports its bones' matrices."""

    def __init__(self, box: Sandbox, arm: bpy.types.Object, names: tuple[str, ...]) -> None:
        self.box = box
        self.original = arm
        self.names = names
        self.copy = box.copy_object(arm)
        _point_at_copy(self.copy, arm)
        self.meshes: dict[tuple[str, str], bpy.types.Object] = {}

    def spot_copy(self, obj: bpy.types.Object, mod: bpy.types.ArmatureModifier) -> None:
        """A copy of ``obj`` that the armature copy deforms through ``mod`` (modifiers after it dropped)."""
        mesh = self.box.copy_object(obj)
        position = list(obj.modifiers).index(mod)
        trim_after(mesh, position, None)
        mesh.modifiers[position].object = self.copy
        follow_copy(mesh, obj, self.original, self.copy)
        self.meshes[(obj.name, mod.name)] = mesh

    def play(self, action: bpy.types.Action, frames: Sequence[float]) -> Iterator[tuple[list[float], np.ndarray]]:
        """(frames, (P, J, 4, 4) matrix_channel) batch by batch."""
        _reset_channels(self.copy, self.original)
        _assign(self.copy, action)
        # The spot checks' meshes sit out while the action plays: Blender would deform them at
        # every frame for nothing (``at_frame`` brings them back).
        self._show_meshes(False)
        depsgraph = self.box.depsgraph()
        scene = self.box.scene
        for lo in range(0, len(frames), BATCH_FRAMES):
            batch = list(frames[lo:lo + BATCH_FRAMES])
            channels = np.empty((len(batch), len(self.names), 4, 4))
            for p, frame in enumerate(batch):
                whole = math.floor(frame)
                scene.frame_set(int(whole), subframe=float(frame - whole))
                channels[p] = pose_matrices(self.copy.evaluated_get(depsgraph), self.names, "matrix_channel")
            yield batch, channels

    def at_frame(self, key: tuple[str, str], frame: float) -> tuple[np.ndarray, np.ndarray]:
        """Blender's evaluated positions of a spot copy at ``frame`` (float32, as stored) and the
        bones' ``matrix_channel`` there (J, 4, 4), of the action last played."""
        self._show_meshes(True)
        whole = math.floor(frame)
        self.box.scene.frame_set(int(whole), subframe=float(frame - whole))
        depsgraph = self.box.depsgraph()
        positions = stored_positions(self.meshes[key].evaluated_get(depsgraph).data)
        return positions, pose_matrices(self.copy.evaluated_get(depsgraph), self.names, "matrix_channel")

    def _show_meshes(self, show: bool) -> None:
        for mesh in self.meshes.values():
            if mesh.hide_viewport == show:
                mesh.hide_viewport = not show
