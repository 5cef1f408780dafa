# SPDX-License-Identifier: GPL-3.0-or-later
"""Standard stress (test) poses computed from the rest matrices and the hierarchy,
never by posing the user's armature: ``G_child = G_parent L_child``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .affine import rotation
from .rig_data import Bones

F64 = NDArray[np.float64]

#: Blender bones point along their local Y: twist is about Y, bends about X and Z.
STANDARD_AXES = (("bend-x", "x"), ("twist-y", "y"), ("bend-z", "z"))


@dataclass(frozen=True)
class StressPose:
    name: str
    channel: F64  # (J, 4, 4) skinning matrices of the pose, armature space


def parent_first_order(parents: tuple[int, ...]) -> list[int]:
    """Bone indices ordered so every parent comes before its children."""
    children: dict[int, list[int]] = {}
    for j, p in enumerate(parents):
        children.setdefault(p, []).append(j)
    order: list[int] = []
    stack = list(reversed(children.get(-1, [])))
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(children.get(j, [])))
    return order


def posed_channels(bones: Bones, local_rotations: F64) -> F64:
    """Skinning matrices when each bone turns by ``local_rotations[j]`` in its own rest frame.

    Parameters
    ----------
    bones : Bones
    local_rotations : (J, 4, 4) float64
        Rotation of each bone about its head, in its rest frame (identity = rest).

    Returns
    -------
    (J, 4, 4) float64, ``G_j B_j^-1``
    """
    rest = bones.rest
    world = np.empty_like(rest)
    inherits = bones.inherit_rotation if len(bones.inherit_rotation) else np.ones(len(rest), dtype=bool)
    local = bones.local_rest
    for j in parent_first_order(bones.parents):
        p = bones.parents[j]
        parent_world = np.eye(4) if p < 0 else world[p]
        world[j] = parent_world @ local[j] @ local_rotations[j]
        if p >= 0 and not inherits[j]:
            # Inherit Rotation off: the head still follows the parent, the frame keeps its rest orientation.
            world[j][:3, :3] = (rest[j] @ local_rotations[j])[:3, :3]
    out: F64 = world @ bones.rest_inverse
    return out


def standard_poses(bones: Bones, degrees: float, only: NDArray[np.bool_] | None = None) -> list[StressPose]:
    """Every bone (or those in ``only``) bent about X, twisted about Y, bent about Z by ``degrees``."""
    mask = bones.use_deform if only is None else only
    poses = []
    for name, axis in STANDARD_AXES:
        rot = np.broadcast_to(np.eye(4), bones.rest.shape).copy()
        rot[mask] = rotation(axis, np.radians(degrees))
        poses.append(StressPose(f"{name} {degrees:g}", posed_channels(bones, rot)))
    return poses
