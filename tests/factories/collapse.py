# SPDX-License-Identifier: GPL-3.0-or-later
"""How LBS squashes each vertex's neighbourhood.

Blender blends ``M_v = sum_j w_j C_j / sum_j w_j``.  The 3x3 part of ``M_v`` maps
a small neighbourhood of the vertex; its smallest singular value generalises
the twisted cylinder's ``r'/r`` (for ``(1-w) I + w Rz(theta)`` it is exactly
``sqrt(1 - 4 w (1-w) sin^2(theta/2))``) and its determinant is the local
volume ratio.  Dual quaternion blending yields a rotation, so its measures
are those of the blended rotation (1 for rigid bones).

The tests' own measure of a blend, written from its definition (the audit never calls it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from skin_audit.core import tolerances
from skin_audit.core.maths.quaternions import scaled_rotation_matrix

F64 = NDArray[np.float64]
Columns = list[tuple[int, NDArray[np.intp], F64]]


@dataclass(frozen=True)
class Squash:
    """Per-vertex measures of one pose (vertices in ``index`` only)."""

    index: NDArray[np.intp]  # (N,) vertex indices
    smallest: F64  # (N,) smallest singular value of the blended 3x3
    det: F64  # (N,) determinant of the blended 3x3


def blended_linear(columns: Columns, channel: F64, vertex_count: int) -> tuple[F64, F64]:
    """Sum of ``w_j * C_j[:3, :3]`` and of ``w_j`` per vertex.

    Parameters
    ----------
    columns : per deform group (bone, vertex indices, weights)
    channel : (J, 4, 4) float64
    vertex_count : V

    Returns
    -------
    linear : (V, 3, 3) float64, not yet divided by the weight sum
    contrib : (V,) float64
    """
    linear = np.zeros((vertex_count, 3, 3))
    contrib = np.zeros(vertex_count)
    for bone, idx, w in columns:
        linear[idx] += w[:, None, None] * channel[bone, :3, :3]
        contrib[idx] += w
    return linear, contrib


def squash_measures(linear: F64, contrib: F64) -> tuple[F64, F64]:
    """(smallest singular value, determinant) of ``linear / contrib`` per vertex.

    Vertices Blender does not move (sum <= 1e-4) keep their shape: (1, 1).
    """
    moved = contrib > tolerances.BLENDER_MIN_CONTRIB
    a = linear[moved] / contrib[moved, None, None]
    smallest = np.ones(len(contrib))
    det = np.ones(len(contrib))
    if a.size:
        # SVD rather than sqrt(eig(A^T A)): exact to 1e-16 near a collapse, not 1e-8.
        smallest[moved] = np.linalg.svd(a, compute_uv=False)[:, -1]
        det[moved] = np.linalg.det(a)
    return smallest, det


def dqs_rotation_measures(real: F64) -> tuple[F64, F64]:
    """Measures of the rotation a blended (unnormalised) dual quaternion applies: (smallest sv, det).

    ``real`` is (N, 4); the blended map is ``q p q* / |q|^2``, a rotation, so both
    are 1 up to rounding; computed rather than assumed so a broken blend shows.
    """
    n = np.sum(real * real, axis=1)
    rot = scaled_rotation_matrix(real) / n[:, None, None]
    if not len(rot):
        return np.ones(0), np.ones(0)
    return np.linalg.svd(rot, compute_uv=False)[:, -1], np.linalg.det(rot)
