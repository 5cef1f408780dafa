# SPDX-License-Identifier: GPL-3.0-or-later
"""The contact test's pieces put together for tests: every pair of triangles that intersect (the
product tests candidate pairs inside its contact test), and a character's vertices at one pose as
the contact test deforms them, to compare with Blender's evaluated mesh."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from skin_audit.core.audit.interpenetration import _character, _displacement, _moved_bones
from skin_audit.core.audit.pose_sweep import SweepPose
from skin_audit.core.audit.skinned_mesh import SkinnedMesh
from skin_audit.core.audit.stress_poses import turned_channels
from skin_audit.core.maths.affine import rotation
from skin_audit.core.maths.tri_intersect import candidate_pairs, triangles_intersect

F64 = NDArray[np.float64]
IntP = NDArray[np.intp]


def intersecting_pairs(points: F64, triangles: IntP, side: NDArray[np.int8] | None = None
                       ) -> tuple[IntP, IntP]:
    """Pairs of triangles of ``points`` that intersect, sharing no vertex.

    Parameters
    ----------
    points : (V, 3) float64
    triangles : (T, 3) intp, vertex indices (weld coincident vertices first for seams)
    side : (T,) int8, optional; see ``candidate_pairs``

    Returns
    -------
    two (m,) intp arrays of triangle indices, ``i < j``
    """
    points = np.asarray(points, dtype=np.float64)
    triangles = np.asarray(triangles, dtype=np.intp)
    corners = points[triangles]  # (T, 3, 3)
    i, j = candidate_pairs(corners.min(axis=1), corners.max(axis=1), side)
    ti, tj = triangles[i], triangles[j]
    shared = (ti[:, :, None] == tj[:, None, :]).any(axis=(1, 2))
    i, j = i[~shared], j[~shared]
    hit = triangles_intersect(corners[i], corners[j])
    return i[hit], j[hit]


def contact_positions(meshes: Sequence[SkinnedMesh], pose: SweepPose) -> F64:
    """(V, 3) every mesh's vertices (end to end, armature space) at ``pose`` as the contact test
    deforms them."""
    char = _character(meshes)
    if char is None:
        return np.zeros((0, 3))
    bones = meshes[0].bones  # (a test pose: B-Bone pose properties at rest)
    channel = turned_channels(bones, pose.bone, rotation(pose.axis, np.radians(pose.degrees))[None])[0]
    moved = _moved_bones(char, bones, channel[None])
    local = np.arange(len(char.points), dtype=np.intp)
    out: F64 = char.points + _displacement(char, channel, moved, local, len(char.points), bones)
    return out
