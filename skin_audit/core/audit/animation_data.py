# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of a rig's animation data (keys, not deformation).  numpy only.

What an exporter or engine trips over in the keys themselves: zero, negative or
non-uniform scale keys on deform bones, keys on the armature object, Euler channels that
flip between consecutive frames, channels naming bones that do not exist, keys on helper
bones that move deform bones only through constraints, and actions whose frame range runs
past their keys.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding
from .skinned_mesh import Bones

#: The codes this module reports (part of mesh_audit.RULE_CODES).
ANIMATION_DATA_CODES = frozenset({"animation-scale-keys", "armature-object-keys", "animation-euler-flip",
                                  "animation-missing-bone", "animation-helper-keys", "action-range-beyond-keys"})
_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(\w+)$')
_OBJECT_TRANSFORM = {"location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                     "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale"}
NAMES_SHOWN = 5


@dataclass(frozen=True)
class Channel:
    """One F-Curve: its data path, array index and keys, (K, 2) float64 (frame, value)."""

    data_path: str
    index: int
    keys: NDArray[np.float64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", np.asarray(self.keys, dtype=np.float64).reshape(-1, 2))


@dataclass(frozen=True)
class EulerSamples:
    """A bone's ``rotation_euler`` channel sampled at every frame of the action's range."""

    bone: str
    index: int
    frames: tuple[float, ...]
    values: tuple[float, ...]  # radians


@dataclass(frozen=True)
class ActionData:
    name: str
    frame_range: tuple[float, float]
    channels: tuple[Channel, ...]
    euler: tuple[EulerSamples, ...] = ()


def bone_channel(path: str) -> tuple[str, str] | None:
    """(bone name, property) of a ``pose.bones["name"].prop`` path, else None."""
    m = _BONE_PATH.match(path)
    if m is None:
        return None
    return m.group(1).replace('\\"', '"').replace("\\\\", "\\"), m.group(2)


def _few(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names[:NAMES_SHOWN]) + (" ..." if len(names) > NAMES_SHOWN else "")


def animation_data_findings(armature: str, bones: Bones, actions: Sequence[ActionData]) -> list[Finding]:
    """Findings on the keys of every action the armature plays."""
    out: list[Finding] = []
    index = bones.index()
    for action in actions:
        out += _action_findings(armature, bones, index, action)
    return out


def _scale_keys(action: ActionData, bones: Bones, index: dict[str, int]) -> dict[str, list[str]]:
    """Deform bones whose scale keys are zero, negative or non-uniform, by kind."""
    per_bone: dict[str, dict[int, NDArray[np.float64]]] = {}
    for ch in action.channels:
        parsed = bone_channel(ch.data_path)
        if parsed is None or parsed[1] != "scale" or parsed[0] not in index:
            continue
        if bones.use_deform[index[parsed[0]]]:
            per_bone.setdefault(parsed[0], {})[ch.index] = ch.keys
    kinds: dict[str, list[str]] = {"zero": [], "negative": [], "non-uniform": []}
    for bone, axes in per_bone.items():
        values = np.concatenate([k[:, 1] for k in axes.values()])
        if (np.abs(values) <= tolerances.SCALE_KEY_ZERO).any():
            kinds["zero"].append(bone)
        elif (values < 0).any():
            kinds["negative"].append(bone)
        elif len(axes) == 3 and _uneven(list(axes.values())):
            kinds["non-uniform"].append(bone)
    return kinds


def _uneven(axes: list[NDArray[np.float64]]) -> bool:
    """Whether three scale channels differ at a frame all three key (their common key frames)."""
    common = np.intersect1d(np.intersect1d(axes[0][:, 0], axes[1][:, 0]), axes[2][:, 0])
    if not common.size:
        return False
    at = np.stack([k[np.searchsorted(k[:, 0], common), 1] for k in axes])  # (3, F); keys sorted by frame
    spread = np.ptp(at, axis=0)
    return bool((spread > tolerances.NON_UNIFORM_SCALE_RELATIVE * np.abs(at).max(axis=0)).any())


def _action_findings(armature: str, bones: Bones, index: dict[str, int], action: ActionData) -> list[Finding]:
    out: list[Finding] = []
    name = action.name
    kinds = _scale_keys(action, bones, index)
    if kinds["zero"] or kinds["negative"]:
        bad = kinds["zero"] + kinds["negative"]
        out.append(Finding(
            "animation-scale-keys", "WARNING",
            f"action '{name}' keys {len(kinds['zero'])} deform bones at zero scale and {len(kinds['negative'])} at "
            f"negative scale ({_few(bad)}): at zero their vertices collapse to a point and the bone's matrix has no "
            "inverse (IK, retargeting and exporters that decompose matrices fail there); a negative scale turns "
            "the skin inside out", len(bad), bones=tuple(bad),
            details={"action": name, "zero": kinds["zero"], "negative": kinds["negative"]}))
    if kinds["non-uniform"]:
        out.append(Finding(
            "animation-scale-keys", "INFO",
            f"action '{name}' keys non-uniform scale on {len(kinds['non-uniform'])} deform bones "
            f"({_few(kinds['non-uniform'])}): their children inherit it as a shear, which engines reproduce only "
            "where they multiply full matrices (three.js, Blender's glTF importer) and not where they keep "
            "translation, rotation and scale apart", len(kinds["non-uniform"]), bones=tuple(kinds["non-uniform"]),
            details={"action": name, "non_uniform": kinds["non-uniform"]}))
    object_paths = sorted({ch.data_path for ch in action.channels if ch.data_path in _OBJECT_TRANSFORM})
    if object_paths:
        out.append(Finding(
            "armature-object-keys", "INFO",
            f"action '{name}' keys the armature object '{armature}' itself ({', '.join(object_paths)}): exporters "
            "write it as the armature node's animation, which character importers often take as root motion "
            "or drop; key a root bone instead if the motion belongs to the character",
            len(object_paths), details={"action": name, "paths": object_paths}))
    missing = sorted({p[0] for ch in action.channels if (p := bone_channel(ch.data_path)) is not None
                      and p[0] not in index})
    if missing:
        out.append(Finding(
            "animation-missing-bone", "WARNING",
            f"action '{name}' has channels for {len(missing)} bones '{armature}' does not have ({_few(missing)}): "
            "they move nothing (a renamed or deleted bone), in Blender and in every export",
            len(missing), bones=tuple(missing), details={"action": name, "bones": missing}))
    flips = []
    for s in action.euler:
        values = np.asarray(s.values, dtype=np.float64)
        if values.size < 2:
            continue
        jumps = np.abs(np.diff(values))
        k = int(np.argmax(jumps))
        if jumps[k] > math.pi:
            flips.append((s.bone, s.index, s.frames[k], s.frames[k + 1], math.degrees(float(jumps[k]))))
    if flips:
        worst = max(flips, key=lambda t: t[4])
        bones_flipped = tuple(dict.fromkeys(f[0] for f in flips))
        out.append(Finding(
            "animation-euler-flip", "WARNING",
            f"action '{name}': {len(flips)} Euler rotation channels jump by more than 180 deg between consecutive "
            f"frames; worst '{worst[0]}' rotation_euler[{worst[1]}] by {worst[4]:.0f} deg between frames "
            f"{worst[2]:g} and {worst[3]:g}. Blender interpolates the angle through the jump (a spin between "
            "those frames); exporters sample rotations as quaternions, which engines interpolate the short way, "
            "so Blender and the engine disagree there (Graph Editor: Key > Discontinuity (Euler) Filter)",
            len(flips), bones=bones_flipped,
            details={"action": name, "bone": worst[0], "index": worst[1], "frame": worst[2],
                     "jump_degrees": worst[4]}))
    keyed = {p[0] for ch in action.channels if (p := bone_channel(ch.data_path)) is not None and p[0] in index}
    helpers = sorted(b for b in keyed if not bones.use_deform[index[b]] and bones.followers(index[b]))
    if helpers:
        moved = sorted({f for b in helpers for f in bones.followers(index[b])})
        out.append(Finding(
            "animation-helper-keys", "INFO",
            f"action '{name}' keys {len(helpers)} helper bones ({_few(helpers)}) that move {len(moved)} deform bones "
            f"only through constraints or drivers ({_few(moved)}): an exporter writing deform bones must bake "
            "their motion (Blender's glTF exporter samples it)", len(helpers), bones=tuple(helpers),
            details={"action": name, "deform_bones_moved": moved[:50]}))
    key_frames = [ch.keys[:, 0] for ch in action.channels if len(ch.keys)]
    if key_frames:
        first, last = float(min(k.min() for k in key_frames)), float(max(k.max() for k in key_frames))
        start, end = action.frame_range
        if start < first - tolerances.FRAME_EPSILON or end > last + tolerances.FRAME_EPSILON:
            out.append(Finding(
                "action-range-beyond-keys", "INFO",
                f"action '{name}' plays frames {start:g}-{end:g} but its keys span {first:g}-{last:g}: it holds "
                "a pose for the rest (exporters and engines play the whole range)",
                details={"action": name, "frame_range": [start, end], "keys": [first, last]}))
    return out
