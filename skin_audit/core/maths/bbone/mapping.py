# SPDX-License-Identifier: GPL-3.0-or-later
"""Which segment(s) of a B-Bone each vertex follows, and with what blend: Blender's
b_bone_deform mapping (STRAIGHT: along the bone's axis; CURVED: the BSP over the joints'
planes, smoothed), and the per-vertex matrix of linear blending.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import ShapeError
from ..affine import affine_inverse, apply_affine
from .spline import CURVED, STRAIGHT, BBoneSpline, _matrix, _segments

F64 = NDArray[np.float64]

#: compute_bbone_segment_boundaries / find_bbone_segment_index_curved tuning constants.
_CURVED_TUNING = 0.222
_CURVED_SLOPE_TUNE = 3.0
_CURVED_DIST_TUNE = 7.0


def _clamp_segment_index(head_tail: F64, segments: int) -> tuple[NDArray[np.intp], F64]:
    """Blender's BKE_pchan_bbone_deform_clamp_segment_index."""
    pre = np.clip(head_tail, 0.0, 1.0) * segments
    idx = np.clip(np.floor(pre), 0, segments - 1).astype(np.intp)
    blend: F64 = np.clip(pre - idx, 0.0, 1.0)
    return idx, blend


def segment_index_and_blend(co_bone: ArrayLike, length: float, rest_segments: ArrayLike,
                            mapping_mode: str = STRAIGHT) -> tuple[NDArray[np.intp], F64]:
    """Segment of each point and its blend toward the next (Blender's b_bone_deform mapping).

    Parameters
    ----------
    co_bone : (V, 3) float64 points in the bone's rest frame (``inv(matrix_local) @ co``)
    length : the bone's rest length
    rest_segments : (S + 1, 4, 4) float64 rest joint matrices in bone space (used by CURVED)
    mapping_mode : ``"STRAIGHT"`` (projection on the bone's Y axis) or ``"CURVED"``
        (Blender's BSP over the joints' planes, smoothed).

    Returns
    -------
    index : (V,) intp, in [0, S - 1]; the point blends joints ``index`` and ``index + 1``
    blend : (V,) float64 in [0, 1], the weight of joint ``index + 1``
    """
    co = np.asarray(co_bone, dtype=np.float64)
    if co.ndim != 2 or co.shape[1] != 3:
        raise ShapeError(f"co_bone must be (V, 3), got shape {co.shape}")
    rest = _segments(rest_segments, "rest_segments")
    segments = rest.shape[0] - 1
    if mapping_mode == STRAIGHT:
        return _clamp_segment_index(co[:, 1] / length, segments)
    if mapping_mode != CURVED:
        raise ShapeError(f"mapping_mode must be {STRAIGHT!r} or {CURVED!r}, got {mapping_mode!r}")
    return _clamp_segment_index(_curved_head_tail(co, rest), segments)


def _curved_head_tail(co: F64, rest: F64) -> F64:
    """Blender's find_bbone_segment_index_curved up to the clamp, vectorised over points."""
    segments = rest.shape[0] - 1
    # compute_bbone_segment_boundaries.
    point = rest[:, :3, 3]
    normal = rest[:, :3, 1] / np.linalg.norm(rest[:, :3, 1], axis=1)[:, None]
    offset = np.einsum("bi,bi->b", point, normal)  # bi,bi->b: each plane's offset
    arc = float(np.linalg.norm(np.diff(point, axis=0), axis=1).sum())
    bsp_depth = int(np.ceil(np.log2(segments + 2)))
    straight = float(np.linalg.norm(point[-1] - point[0]))
    max_depth_scale = segments * (straight / arc) * _CURVED_TUNING
    scale_factor = max(max_depth_scale, 1.0) ** (1.0 / (bsp_depth - 1))
    depth_scale = (segments / max_depth_scale) * scale_factor ** np.arange(bsp_depth)

    v = len(co)
    rows = np.arange(v)
    # vi,bi->vb: signed distance of every point to every joint plane.
    dist_all = co @ normal.T - offset
    start = np.full(v, -1)
    end = np.full(v, segments + 1)
    bias = np.zeros(v, dtype=np.intp)
    stack = np.zeros((v, segments + 2), dtype=np.intp)
    depth = np.zeros(v, dtype=np.intp)
    for _ in range(segments + 2):
        active = end - start > 1
        if not active.any():
            break
        mid = (start + end + bias) // 2
        mid_safe = np.where(active, mid, 0)
        d = dist_all[rows, mid_safe]
        stack[rows[active], depth[active]] = mid[active]
        depth = depth + active
        below = active & (d < 0)
        above = active & ~(d < 0)
        end = np.where(below, mid, end)
        start = np.where(above, mid, start)
        bias = np.where(below, 1, np.where(above, 0, bias))

    size = 1.0 / segments
    inner = (end > 0) & (start < segments)
    s_idx = np.clip(start, 0, segments)
    e_idx = np.clip(end, 0, segments)
    d1 = np.abs(dist_all[rows, s_idx])
    d2 = np.abs(dist_all[rows, e_idx])
    total = d1 + d2
    t = np.divide(d1, total, out=np.zeros(v), where=total > 0)
    head_tail = np.where(end <= 0, 0.0, np.where(start >= segments, 1.0, size * (s_idx + t)))
    head_tail = np.where(inner | (end <= 0) | (start >= segments), head_tail, 0.0)

    # Smoothing pass up the BSP stack (see Blender PR #110758).
    arc_reciprocal = 1.0 / arc
    for i in range(stack.shape[1] - 1, -1, -1):
        on = i < depth
        if not on.any():
            continue
        b_idx = stack[:, i]
        b_pos = b_idx * size
        point_dist = dist_all[rows, b_idx] * arc_reciprocal
        pd_abs = np.abs(point_dist)
        slope_gap = np.abs(head_tail - b_pos) - pd_abs
        dist_coeff = 1.0 - pd_abs * (depth_scale[i] if i < bsp_depth else np.inf)
        apply = on & (slope_gap > 0) & (dist_coeff > 0)
        if not apply.any():
            continue
        scaled_gap = slope_gap * _CURVED_SLOPE_TUNE
        slope_coeff = np.divide(scaled_gap, scaled_gap + pd_abs, out=np.zeros(v), where=apply)
        smooth = dist_coeff * dist_coeff * (_CURVED_DIST_TUNE + 1.0) / (_CURVED_DIST_TUNE * dist_coeff + 1.0)
        f = slope_coeff * smooth
        head_tail = np.where(apply, f * (b_pos + point_dist) + (1.0 - f) * head_tail, head_tail)
    out: F64 = head_tail
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
    co_bone = apply_affine(affine_inverse(_matrix(bone.rest, "rest")), co)
    return segment_index_and_blend(co_bone, bone.length, rest_segments, bone.mapping_mode)



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
    d = _segments(deform, "deform")
    out: F64 = (1.0 - b) * d[i] + b * d[i + 1]
    return out

