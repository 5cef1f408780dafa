# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bone deformations written out for the tests (no audit path needs them): one B-Bone's
per-vertex matrices for linear blending from the product's segment maths, and Blender's dual
quaternion transform of summed dual quaternions."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.core.errors import ShapeError
from skin_audit.core.maths.affine import affine_inverse, apply_affine
from skin_audit.core.maths.bbone import BBoneSpline, bbone_deform_matrices, segment_index_and_blend

F64 = NDArray[np.float64]


def dual_transform(co: ArrayLike, real: ArrayLike, dual: ArrayLike, contrib: ArrayLike) -> F64:
    """Blender's normalize_dq + mul_v3m3_dq: points moved by their summed dual quaternions.

    Parameters
    ----------
    co : (V, 3) float64 armature-space rest points
    real, dual : (V, 4) float64 summed dual quaternions
    contrib : (V,) float64 summed weights (Blender divides by it; a unit quaternion
        would not need it, the blended one keeps it for the length ratio)
    """
    p = np.asarray(co, dtype=np.float64)
    c = np.asarray(contrib, dtype=np.float64)[:, None]
    q = np.asarray(real, dtype=np.float64) / c
    t = np.asarray(dual, dtype=np.float64) / c
    w, x, y, z = q.T
    t0, t1, t2, t3 = t.T
    rot = np.stack([
        np.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), w * w + y * y - x * x - z * z, 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w + z * z - x * x - y * y], -1),
    ], -2)
    tr = 2.0 * np.column_stack([-t0 * x + w * t1 - t2 * z + y * t3,
                                -t0 * y + t1 * z - x * t3 + w * t2,
                                -t0 * z + x * t2 + w * t3 - t1 * y])
    # vij,vj->vi: the blended (unnormalised) rotation applied to each point.
    out: F64 = (np.einsum("vij,vj->vi", rot, p) + tr) / np.sum(q * q, axis=1)[:, None]
    return out


def vertex_matrices(co_armature: ArrayLike, bone: BBoneSpline, channel: ArrayLike,
                    rest_segments: ArrayLike, pose_segments: ArrayLike) -> F64:
    """(V, 4, 4) armature-space matrix moving each point as this B-Bone does (linear blending).

    The bone's term in the Armature modifier is ``w (M_v co - co)`` with this ``M_v``;
    a plain bone's would be ``w (channel co - co)``.

    Parameters
    ----------
    co_armature : (V, 3) float64 rest points in armature space
    bone : the B-Bone's inputs (``rest``, ``length``, ``mapping_mode`` are read)
    channel : (4, 4) float64 ``PoseBone.matrix @ inv(Bone.matrix_local)``
    rest_segments, pose_segments : (S + 1, 4, 4) float64 joint matrices in bone space
        (``bbone_segment_matrix`` or ``bbone_segment_matrices``)
    """
    index, blend = vertex_segments(co_armature, bone, rest_segments)
    deform = bbone_deform_matrices(bone.rest, channel, rest_segments, pose_segments)
    return blended_segment_matrices(index, blend, deform)


def blended_segment_matrices(index: ArrayLike, blend: ArrayLike, deform: ArrayLike) -> F64:
    """(V, 4, 4) per-point B-Bone matrix for linear blending: ``(1 - b) D[i] + b D[i + 1]``.

    A B-Bone adds ``w (M_v co - co)`` to a vertex with this ``M_v`` (linear in the
    matrices, so the two segment terms of ``b_bone_deform`` fold into one).

    Parameters
    ----------
    index : (V,) int, blend : (V,) float64 from ``segment_index_and_blend``
    deform : (S + 1, 4, 4) float64 from ``bbone_deform_matrices``
    """
    i = np.asarray(index, dtype=np.intp)
    b = np.asarray(blend, dtype=np.float64)[:, None, None]
    d = np.asarray(deform, dtype=np.float64)
    out: F64 = (1.0 - b) * d[i] + b * d[i + 1]
    return out


def vertex_segments(co_armature: ArrayLike, bone: BBoneSpline, rest_segments: ArrayLike
                    ) -> tuple[NDArray[np.intp], F64]:
    """Segment and blend of each point (``segment_index_and_blend``) from armature-space points.

    They depend on rest data only: callers that pose the same B-Bone many times keep them.

    Parameters
    ----------
    co_armature : (V, 3) float64 rest points in armature space
    bone : the B-Bone's inputs (``rest``, ``length``, ``mapping_mode`` are read)
    rest_segments : (S + 1, 4, 4) float64 rest joint matrices in bone space
    """
    co = np.asarray(co_armature, dtype=np.float64)
    if co.ndim != 2 or co.shape[1] != 3:
        raise ShapeError(f"co_armature must be (V, 3), got shape {co.shape}")
    co_bone = apply_affine(affine_inverse(np.asarray(bone.rest, dtype=np.float64)), co)
    return segment_index_and_blend(co_bone, bone.length, rest_segments, bone.mapping_mode)
