# SPDX-License-Identifier: GPL-3.0-or-later
"""Standard stress (test) poses computed from the rest matrices and the hierarchy,
never by posing the user's armature: ``G_child = G_parent L_child``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..maths.affine import evaluate_hierarchy, rotation
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
    walk = bones.walk
    order = walk.order
    # Inherit Rotation off: the head still follows the parent, the frame keeps its rest orientation.
    fixed = np.full((len(rest), 3, 3), np.nan)
    fixed[walk.own_rotation] = (rest[order] @ local_rotations[order])[walk.own_rotation, :3, :3]
    world = np.empty_like(rest)
    world[order] = evaluate_hierarchy(bones.local_rest[order] @ local_rotations[order], walk.parents, fixed,
                                      walk.levels)
    out: F64 = world @ bones.rest_inverse
    return out


def turned_channels(bones: Bones, bone: int, rotations: F64) -> F64:
    """Skinning matrices of several poses that each turn ``bone`` alone, in closed form.

    Pose ``p`` is ``posed_channels(bones, local)`` with ``local[bone] = rotations[p]`` and the identity
    elsewhere.  Every bone outside ``bone``'s subtree sits at rest: its channel is exactly the
    identity.  Inside it the walk's products telescope (``G_j = G_parent B_parent^-1 B_j``), so:

    - ``bone`` and every bone that inherits rotation from it all the way down share one channel,
      ``C = B_bone R B_bone^-1``, the turn about its head;
    - a bone below it that does not inherit rotation keeps its rest orientation and follows its
      parent's head: its channel is the translation ``C h - h`` of its head ``h``, and every bone
      under it shares that translation (a translation moves all heads alike).

    No walk of the subtree: a long chain swept bone by bone costs linear, not quadratic, time.

    Parameters
    ----------
    bones : Bones
    bone : the turned bone's index
    rotations : (P, 4, 4) float64, its rotation about its head in its rest frame, per pose

    Returns
    -------
    (P, J, 4, 4) float64, ``G_j B_j^-1`` per pose; the identity outside ``bone``'s subtree
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    rest = bones.rest
    inherits = bones.inherit_rotation if len(bones.inherit_rotation) else np.ones(len(rest), dtype=bool)
    order, tin, tout = bones.depth_first
    out = np.broadcast_to(np.eye(4), (len(rotations), *rest.shape)).copy()
    turn = rest[bone] @ rotations @ bones.rest_inverse[bone]  # (P, 4, 4)
    subtree = order[tin[bone]:tout[bone]]
    out[:, subtree] = turn[:, None]
    below = subtree[1:]  # (depth first: the bone itself comes first)
    fixed = below[~inherits[below]]
    if fixed.size:
        # The topmost ones (depth-first intervals nest: one inside an earlier one is below it).
        reach = np.maximum.accumulate(tout[fixed])
        topmost = fixed[np.concatenate([[True], tin[fixed][1:] >= reach[:-1]])]
        for k in topmost.tolist():
            head = rest[k, :3, 3]
            under = order[tin[k]:tout[k]]
            moved = np.broadcast_to(np.eye(4), (len(rotations), len(under), 4, 4)).copy()
            moved[:, :, :3, 3] = ((turn[:, :3, :3] @ head + turn[:, :3, 3]) - head)[:, None]
            out[:, under] = moved
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
