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
    """Skinning matrices of several poses that each turn ``bone`` alone, in one walk of its subtree.

    Pose ``p`` is ``posed_channels(bones, local)`` with ``local[bone] = rotations[p]`` and the identity
    elsewhere, walking only ``bone``'s subtree (the same products, batched over the poses); every
    other bone sits at rest and its channel is exactly the identity.

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
    parents = bones.parents
    # The subtree, parents first (depth first from the bone): a scan of every bone per call
    # cost more than the subtree's products on a large rig.
    children = _children_of(parents)
    subtree = []
    todo = [bone]
    while todo:
        j = todo.pop()
        subtree.append(j)
        todo.extend(children[j])
    out = np.broadcast_to(np.eye(4), (len(rotations), *rest.shape)).copy()
    local = bones.local_rest
    world: dict[int, F64] = {}  # the subtree's posed matrices; every other bone is at rest
    for j in subtree:
        p = parents[j]
        if p < 0:
            w = local[j]
        else:
            above = world.get(p)
            if above is None:  # (the turned bone's parent, at rest: the same product, pose by pose)
                above = np.repeat(rest[p][None], len(rotations), axis=0)
            w = above @ local[j]
        if j == bone:
            w = w @ rotations
            if p >= 0 and not inherits[j]:
                w[:, :3, :3] = (rest[j] @ rotations)[:, :3, :3]
        elif p >= 0 and not inherits[j]:
            w = w.copy()
            w[:, :3, :3] = rest[j, :3, :3]
        world[j] = w
        out[:, j] = w @ bones.rest_inverse[j]
    return out


#: Each bone's children, per tree (keyed by the parents tuple, which the posed copies of one
#: armature share); a few trees at most.
_CHILDREN: dict[tuple[int, ...], list[list[int]]] = {}


def _children_of(parents: tuple[int, ...]) -> list[list[int]]:
    """Each bone's children (a list per bone), built once per tree."""
    parents = tuple(parents)  # (a no-op on the tuple Bones holds; a list would not hash)
    hit = _CHILDREN.get(parents)
    if hit is None:
        if len(_CHILDREN) >= 8:
            _CHILDREN.clear()
        hit = [[] for _ in parents]
        for j, p in enumerate(parents):
            if p >= 0:
                hit[p].append(j)
        _CHILDREN[parents] = hit
    return hit


def standard_poses(bones: Bones, degrees: float, only: NDArray[np.bool_] | None = None) -> list[StressPose]:
    """Every bone (or those in ``only``) bent about X, twisted about Y, bent about Z by ``degrees``."""
    mask = bones.use_deform if only is None else only
    poses = []
    for name, axis in STANDARD_AXES:
        rot = np.broadcast_to(np.eye(4), bones.rest.shape).copy()
        rot[mask] = rotation(axis, np.radians(degrees))
        poses.append(StressPose(f"{name} {degrees:g}", posed_channels(bones, rot)))
    return poses
