# SPDX-License-Identifier: GPL-3.0-or-later
"""Standard stress (test) poses computed from the rest matrices and the hierarchy,
never by posing the user's armature: ``G_child = G_parent L_child``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..maths.affine import evaluate_hierarchy, parent_first_order, rotation
from .skinned_mesh import Bones

F64 = NDArray[np.float64]

#: Blender bones point along their local Y: twist is about Y, bends about X and Z.
STANDARD_AXES = (("bend-x", "x"), ("twist-y", "y"), ("bend-z", "z"))


@dataclass(frozen=True)
class StressPose:
    name: str
    channel: F64  # (J, 4, 4) skinning matrices of the pose, armature space


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
    inherits = bones.inherit_rotation if len(bones.inherit_rotation) else np.ones(len(rest), dtype=bool)
    order = parent_first_order(bones.parents)
    position = np.empty(len(rest), dtype=np.intp)
    position[order] = np.arange(len(order))
    parents = [-1 if bones.parents[j] < 0 else int(position[bones.parents[j]]) for j in order]
    # Inherit Rotation off: the head still follows the parent, the frame keeps its rest orientation.
    fixed = np.full((len(rest), 3, 3), np.nan)
    own = np.array([bones.parents[j] >= 0 and not inherits[j] for j in order], dtype=bool)
    fixed[own] = (rest[order] @ local_rotations[order])[own, :3, :3]
    world = np.empty_like(rest)
    world[order] = evaluate_hierarchy(bones.local_rest[order] @ local_rotations[order], parents, fixed)
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
