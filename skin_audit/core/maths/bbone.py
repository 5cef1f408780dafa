# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bone (bendy bone) deformation recomputed in numpy, the way Blender's
Armature modifier does it (Blender 4.2 - 5.0).

Sources followed (blender/blender):

- ``source/blender/blenkernel/intern/armature.cc``: ``BKE_pchan_bbone_spline_params_get``,
  ``BKE_pchan_bbone_handles_compute``, ``BKE_pchan_bbone_spline_compute`` (``for_deform``),
  ``equalize_cubic_bezier``, ``evaluate_cubic_bezier``, ``ease_handle_axis``,
  ``make_bbone_spline_matrix``, ``BKE_pchan_bbone_segments_cache_compute``,
  ``compute_bbone_segment_boundaries``, ``find_bbone_segment_index_straight`` /
  ``_curved``, ``BKE_pchan_bbone_deform_clamp_segment_index``, ``vec_roll_to_mat3_normalized``,
  ``mat3_vec_to_roll``.
- ``source/blender/blenkernel/intern/armature_deform.cc``: ``b_bone_deform`` and
  ``pchan_deform_accumulate`` (segment ``i`` with weight ``w (1 - blend)``, segment
  ``i + 1`` with ``w blend``; LBS adds ``w (M co - co)``, Preserve Volume adds the
  segment's dual quaternion pivoted at the vertex).
- ``source/blender/blenlib/intern/math_geom.cc``: ``cubic_tangent_factor_circle_v3``;
  ``math_rotation.cc``: ``mat4_to_dquat``, ``add_weighted_dq_dq_pivot``, ``mul_v3m3_dq``.

Conventions.  Matrices are (4, 4) column-vector affines (``p' = M @ p``), as
``bpy`` shows them.  "Bone space" is the bone's rest frame (``Bone.matrix_local``,
Blender's ``arm_mat``); "armature space" is the armature object's space.  A B-Bone
with ``S`` segments has ``S + 1`` spline matrices, one per joint between segments,
in bone space: these are what ``PoseBone.bbone_segment_matrix(i, rest=...)`` returns.
The deform matrix of joint ``a`` in armature space is
``channel @ arm @ pose_seg[a] @ inv(rest_seg[a]) @ inv(arm)`` with
``channel = pose_bone.matrix @ inv(bone.matrix_local)``.

Everything here is stateless and works on arrays; ``BBoneSpline`` and
``BBoneHandle`` are frozen records of one bone's inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from .affine import affine_inverse, cross

F64 = NDArray[np.float64]

#: Blender's MAX_BBONE_SUBDIV: segments are clamped to this, and the curve is
#: sampled at this many steps to equalise segment lengths.
MAX_BBONE_SUBDIV = 32

#: ``bbone_mapping_mode`` values.
STRAIGHT = "STRAIGHT"
CURVED = "CURVED"

# Blender's own thresholds, kept as they are in the C source so the same branch is taken.
#: Non-uniform pose scale switches the spline to scaled space above this (armature.cc).
_NONUNIFORM_SCALE = 1e-6
#: A handle shorter than this fraction of the bone length falls back to the bone axis.
_HANDLE_EPSILON = 1e-5
#: cubic_tangent_factor_circle_v3: tangents this close to (anti)parallel use the fallback.
_TANGENT_DOT_EPSILON = 1e-7
#: ease_handle_axis: fade to the second derivative below this handle/derivative ratio.
_EASE_GAP = 0.1
#: Lengthwise segment scale is clamped here before its logarithm.
_MIN_SEGMENT_SCALE = 1e-4
#: mat4_to_dquat treats a matrix as scaled when its axis lengths differ from 1 by this.
_DQ_SCALE = 1e-4
#: ... or when it is not orthonormal to this (Blender: 1.5 * FLT_EPSILON on dot products).
_DQ_ORTHONORMAL = 1.5 * float(np.finfo(np.float32).eps)
#: compute_bbone_segment_boundaries / find_bbone_segment_index_curved tuning constants.
_CURVED_TUNING = 0.222
_CURVED_SLOPE_TUNE = 3.0
_CURVED_DIST_TUNE = 7.0


@dataclass(frozen=True)
class BBoneShape:
    """B-Bone shape properties: the Bone's (rest) or the PoseBone's (animated) values.

    At the pose, ease/roll/curve add to the Bone's values and scale multiplies.
    The defaults are a new Bone's (ease 1); a PoseBone's defaults are ``NO_POSE_SHAPE``.
    """

    ease_in: float = 1.0  # bbone_easein
    ease_out: float = 1.0  # bbone_easeout
    roll_in: float = 0.0  # bbone_rollin
    roll_out: float = 0.0  # bbone_rollout
    curve_in_x: float = 0.0  # bbone_curveinx
    curve_in_z: float = 0.0  # bbone_curveinz
    curve_out_x: float = 0.0  # bbone_curveoutx
    curve_out_z: float = 0.0  # bbone_curveoutz
    scale_in: tuple[float, float, float] = (1.0, 1.0, 1.0)  # bbone_scalein
    scale_out: tuple[float, float, float] = (1.0, 1.0, 1.0)  # bbone_scaleout


#: A PoseBone with nothing animated (adds zero, multiplies by one).
NO_POSE_SHAPE = BBoneShape(ease_in=0.0, ease_out=0.0)


@dataclass(frozen=True)
class BBoneHandle:
    """A bone serving as the start (prev) or end (next) handle of a B-Bone.

    ``rest`` and ``pose`` are its ``Bone.matrix_local`` and ``PoseBone.matrix``
    (4, 4); ``local_scale`` is the scale of its pose in its own local space
    (Blender's ``BKE_armature_mat_pose_to_bone``; ``PoseBone.matrix_basis`` scale
    for a bone without constraints), read only when the B-Bone uses handle scale.
    ``roll_out_rest`` / ``roll_out_pose`` are its Bone / PoseBone ``bbone_rollout``,
    read only with ``use_endroll_as_inroll``.
    """

    rest: F64
    pose: F64
    length: float
    segments: int
    local_scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    roll_out_rest: float = 0.0
    roll_out_pose: float = 0.0


@dataclass(frozen=True)
class BBoneSpline:
    """One B-Bone's inputs (Bone properties and its handle bones)."""

    rest: F64  # (4, 4) Bone.matrix_local
    length: float
    segments: int
    shape: BBoneShape = field(default_factory=BBoneShape)  # the Bone's own values
    handle_type_start: str = "AUTO"
    handle_type_end: str = "AUTO"
    prev: BBoneHandle | None = None  # resolved start handle (None: no handle)
    next: BBoneHandle | None = None  # resolved end handle
    use_scale_start: tuple[bool, bool, bool] = (False, False, False)  # bbone_handle_use_scale_start
    use_scale_end: tuple[bool, bool, bool] = (False, False, False)
    use_ease_start: bool = False  # bbone_handle_use_ease_start
    use_ease_end: bool = False
    use_endroll_as_inroll: bool = False
    use_scale_easing: bool = False
    mapping_mode: str = STRAIGHT


@dataclass(frozen=True)
class SplineParameters:
    """Blender's BBoneSplineParameters, in the bone's (rest or posed) frame."""

    segments: int
    length: float
    do_scale: bool
    scale: F64  # (3,)
    prev_h: F64 | None  # (3,) start handle point, None without a start handle
    next_h: F64 | None
    prev_bbone: bool
    next_bbone: bool
    prev_mat: F64 | None  # (4, 4) start handle bone in this bone's frame (for its roll)
    next_mat: F64 | None
    ease1: float
    ease2: float
    roll1: float
    roll2: float
    scale_in: F64  # (3,)
    scale_out: F64  # (3,)
    curve_in_x: float
    curve_in_z: float
    curve_out_x: float
    curve_out_z: float


# -- small Blender maths --------------------------------------------------------------


def _matrix(m: ArrayLike, name: str) -> F64:
    a = np.asarray(m, dtype=np.float64)
    if a.shape != (4, 4):
        raise ShapeError(f"B-Bone input {name!r} must be a (4, 4) matrix, got shape {a.shape}")
    return a


def _norm(a: F64, axis: int) -> F64:
    """``np.linalg.norm(a, axis=axis)`` for real arrays (the same sum of squares), without its checks."""
    out: F64 = np.sqrt(np.add.reduce(a * a, axis=axis))
    return out


def _apply(m: F64, p: F64) -> F64:
    out: F64 = m[:3, :3] @ p + m[:3, 3]
    return out


def vec_roll_to_mat3(vec: ArrayLike, roll: float) -> F64:
    """(3, 3) rotation taking +Y to ``vec`` (normalised), then rolled about it (Blender's own)."""
    out: F64 = _vec_roll_to_mat3s(np.asarray(vec, dtype=np.float64)[None], np.array([float(roll)]))[0]
    return out


def _vec_roll_to_mat3s(vec: F64, roll: F64) -> F64:
    """(N, 3, 3) ``vec_roll_to_mat3`` over (N, 3) directions and (N,) rolls, Blender's branches."""
    v = vec / np.sqrt(np.sum(vec * vec, axis=1))[:, None]
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    safe, critical = 6.1e-3, 2.5e-4
    theta = 1.0 + y
    theta_alt = x * x + z * z
    general = (theta > safe) | (theta_alt > critical * critical)
    # Close to -Y, 1 + y loses precision; use the series of sqrt in x and z.
    theta = np.where(theta <= safe, theta_alt * 0.5 + theta_alt * theta_alt * 0.125, theta)
    theta = np.where(general, theta, 1.0)  # (the other branch does not divide)
    b = np.empty((len(v), 3, 3))
    b[:, 0, 0], b[:, 0, 1], b[:, 0, 2] = 1.0 - x * x / theta, x, -x * z / theta
    b[:, 1, 0], b[:, 1, 1], b[:, 1, 2] = -x, y, -z
    b[:, 2, 0], b[:, 2, 1], b[:, 2, 2] = -x * z / theta, z, 1.0 - z * z / theta
    b[~general] = np.diag([-1.0, -1.0, 1.0])
    # Roll about the direction (Rodrigues): c I + s [n]x + (1 - c) n n^T.
    c, s = np.cos(roll), np.sin(roll)
    rot = (1.0 - c)[:, None, None] * v[:, :, None] * v[:, None, :]
    rot[:, 0, 0] += c
    rot[:, 1, 1] += c
    rot[:, 2, 2] += c
    rot[:, 0, 1] -= s * z
    rot[:, 0, 2] += s * y
    rot[:, 1, 0] += s * z
    rot[:, 1, 2] -= s * x
    rot[:, 2, 0] -= s * y
    rot[:, 2, 1] += s * x
    out: F64 = rot @ b
    return out


def mat3_vec_to_roll(mat: ArrayLike, vec: ArrayLike) -> float:
    """Roll of ``mat`` about ``vec``: the twist about Y of ``inv(vec_roll_to_mat3(vec, 0)) @ mat``."""
    m = np.asarray(mat, dtype=np.float64)[:3, :3]
    # vec_roll_to_mat3(vec, 0) is a rotation: its inverse is its transpose.
    rollmat = _vec_to_mat3(vec).T @ m
    return _roll_of(rollmat)


def _vec_to_mat3(vec: ArrayLike) -> F64:
    """``vec_roll_to_mat3(vec, 0)`` for one direction, in scalars (the same branches)."""
    x, y, z = (float(c) for c in np.asarray(vec, dtype=np.float64))
    n = math.sqrt(x * x + y * y + z * z)
    x, y, z = x / n, y / n, z / n
    safe, critical = 6.1e-3, 2.5e-4
    theta = 1.0 + y
    theta_alt = x * x + z * z
    if theta > safe or theta_alt > critical * critical:
        if theta <= safe:
            theta = theta_alt * 0.5 + theta_alt * theta_alt * 0.125
        return np.array([[1.0 - x * x / theta, x, -x * z / theta], [-x, y, -z],
                         [-x * z / theta, z, 1.0 - z * z / theta]])
    return np.diag([-1.0, -1.0, 1.0])


def _roll_of(m: F64) -> float:
    """``2 atan2(q_y, q_w)`` of Blender's mat3_to_quat(m), for one (3, 3) matrix, in scalars
    (numpy's per-call cost on 3-vectors dominated the B-Bone curve)."""
    cols = [[float(m[0, c]), float(m[1, c]), float(m[2, c])] for c in range(3)]
    for col in cols:
        n = math.sqrt(col[0] * col[0] + col[1] * col[1] + col[2] * col[2])
        col[0], col[1], col[2] = col[0] / n, col[1] / n, col[2] / n
    (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = cols
    if a0 * (b1 * c2 - b2 * c1) + a1 * (b2 * c0 - b0 * c2) + a2 * (b0 * c1 - b1 * c0) < 0.0:
        cols = [[-e for e in col] for col in cols]

    def e(c: int, r: int) -> float:  # Blender's mat[col][row]
        return cols[c][r]

    # Blender's mat3_normalized_to_quat_fast, the same branches (see _normalized_to_quats).
    xx, yy, zz = e(0, 0), e(1, 1), e(2, 2)
    q = [0.0, 0.0, 0.0, 0.0]
    if zz < 0.0:
        if xx > yy:
            sq = 2.0 * math.sqrt(max(1.0 + xx - yy - zz, 0.0))
            sq = -sq if e(1, 2) < e(2, 1) else sq
            q = [(e(1, 2) - e(2, 1)) / sq, 0.25 * sq, (e(0, 1) + e(1, 0)) / sq, (e(2, 0) + e(0, 2)) / sq]
        else:
            sq = 2.0 * math.sqrt(max(1.0 - xx + yy - zz, 0.0))
            sq = -sq if e(2, 0) < e(0, 2) else sq
            q = [(e(2, 0) - e(0, 2)) / sq, (e(0, 1) + e(1, 0)) / sq, 0.25 * sq, (e(1, 2) + e(2, 1)) / sq]
    elif xx < -yy:
        sq = 2.0 * math.sqrt(max(1.0 - xx - yy + zz, 0.0))
        sq = -sq if e(0, 1) < e(1, 0) else sq
        q = [(e(0, 1) - e(1, 0)) / sq, (e(2, 0) + e(0, 2)) / sq, (e(1, 2) + e(2, 1)) / sq, 0.25 * sq]
    else:
        sq = 2.0 * math.sqrt(max(1.0 + xx + yy + zz, 0.0))
        q = [0.25 * sq, (e(1, 2) - e(2, 1)) / sq, (e(2, 0) - e(0, 2)) / sq, (e(0, 1) - e(1, 0)) / sq]
    # Normalised with w >= 0 (the roll only needs the ratio and the sign of w).
    if q[0] < 0.0:
        q = [-c for c in q]
    return 2.0 * math.atan2(q[2], q[0])


def _circle_tangent_factor(tan_l: F64, tan_r: F64) -> float:
    """Blender's cubic_tangent_factor_circle_v3 (unit tangents)."""
    dot = float(tan_l @ tan_r)
    if dot > 1.0 - _TANGENT_DOT_EPSILON:
        return (1.0 / 3.0) * 0.75
    if dot < -1.0 + _TANGENT_DOT_EPSILON:
        return 0.5
    angle = np.arccos(dot) / 2.0
    s, c = np.sin(angle), np.cos(angle)
    return float(((1.0 - c) / (s * 2.0)) / s)


def _size(m: F64) -> F64:
    out: F64 = np.linalg.norm(m[:3, :3], axis=0)
    return out


def _normalize_axes(m: F64) -> F64:
    out = m.copy()
    out[:3, :3] = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
    return out


def _head_tail(m: F64, length: float) -> tuple[F64, F64]:
    head = m[:3, 3].copy()
    tail: F64 = head + m[:3, 1] * length
    return head, tail


# -- spline parameters and matrices -----------------------------------------------------


def spline_parameters(
    bone: BBoneSpline,
    rest: bool,
    pose: ArrayLike | None = None,
    pose_shape: BBoneShape = NO_POSE_SHAPE,
) -> SplineParameters:
    """Blender's BKE_pchan_bbone_spline_params_get for one B-Bone.

    Parameters
    ----------
    bone : the bone's inputs (rest matrix, properties, resolved handle bones).
    rest : True for the rest shape (handles at rest, Bone values only).
    pose : (4, 4) float64 ``PoseBone.matrix``; required when ``rest`` is False.
    pose_shape : the PoseBone's animated B-Bone values (added / multiplied).
    """
    arm = _matrix(bone.rest, "rest")
    length = float(bone.length)
    do_scale = False
    scale = np.ones(3)
    if rest:
        imat = affine_inverse(arm)
        pose_mat = arm
    else:
        if pose is None:
            raise ShapeError("spline_parameters(rest=False) needs the pose matrix (PoseBone.matrix)")
        pose_mat = _matrix(pose, "pose")
        s = _size(pose_mat)
        if abs(s[0] - s[1]) > _NONUNIFORM_SCALE or abs(s[1] - s[2]) > _NONUNIFORM_SCALE:
            do_scale, scale = True, s
        imat = affine_inverse(_normalize_axes(pose_mat) if do_scale else pose_mat)
    head, tail = _head_tail(pose_mat, length)

    prev_h = next_h = prev_mat = next_mat = None
    prev_bbone = next_bbone = False
    prev_scale = np.ones(3)
    next_scale = np.ones(3)
    start_flags = (*bone.use_scale_start, bone.use_ease_start)
    end_flags = (*bone.use_scale_end, bone.use_ease_end)

    if bone.prev is not None:
        p = bone.prev
        p_rest, p_pose = _matrix(p.rest, "prev.rest"), _matrix(p.pose, "prev.pose")
        p_arm_head, p_arm_tail = _head_tail(p_rest, p.length)
        p_head, p_tail = _head_tail(p_pose, p.length)
        kind = bone.handle_type_start
        if kind == "RELATIVE":
            # Delta movement of the handle's head from its rest, applied at this head.
            prev_h = np.zeros(3) if rest else _apply(imat, head - (p_head - p_arm_head))
        elif kind == "TANGENT":
            h1 = head - ((p_arm_tail - p_arm_head) if rest else (p_tail - p_head))
            prev_h = _apply(imat, h1)
        else:
            prev_bbone = p.segments > 1
            prev_h = _apply(imat, p_arm_head if rest else p_head)
        if not prev_bbone:
            prev_mat = imat @ (p_rest if rest else p_pose)
            if any(start_flags) and not rest:
                prev_scale = np.asarray(p.local_scale, dtype=np.float64)

    if bone.next is not None:
        n = bone.next
        n_rest, n_pose = _matrix(n.rest, "next.rest"), _matrix(n.pose, "next.pose")
        n_arm_head, n_arm_tail = _head_tail(n_rest, n.length)
        n_head, n_tail = _head_tail(n_pose, n.length)
        kind = bone.handle_type_end
        if kind == "RELATIVE":
            next_h = np.array([0.0, length, 0.0]) if rest else _apply(imat, tail + (n_head - n_arm_head))
        elif kind == "TANGENT":
            next_h = _apply(imat, tail + ((n_arm_tail - n_arm_head) if rest else (n_tail - n_head)))
        else:
            next_bbone = n.segments > 1
            next_h = _apply(imat, n_arm_tail if rest else n_tail)
        next_mat = imat @ (n_rest if rest else n_pose)
        if any(end_flags) and not rest:
            next_scale = np.asarray(n.local_scale, dtype=np.float64)

    b, ps = bone.shape, pose_shape
    animated = 0.0 if rest else 1.0
    ease1 = b.ease_in + animated * ps.ease_in
    ease2 = b.ease_out + animated * ps.ease_out
    roll1 = b.roll_in + animated * ps.roll_in
    roll2 = b.roll_out + animated * ps.roll_out
    if bone.use_endroll_as_inroll and bone.prev is not None:
        roll1 += bone.prev.roll_out_rest + animated * bone.prev.roll_out_pose
    scale_in = np.asarray(b.scale_in, dtype=np.float64).copy()
    scale_out = np.asarray(b.scale_out, dtype=np.float64).copy()
    if not rest:
        scale_in *= np.asarray(ps.scale_in, dtype=np.float64)
        scale_out *= np.asarray(ps.scale_out, dtype=np.float64)
    cix = b.curve_in_x + animated * ps.curve_in_x
    ciz = b.curve_in_z + animated * ps.curve_in_z
    cox = b.curve_out_x + animated * ps.curve_out_x
    coz = b.curve_out_z + animated * ps.curve_out_z
    if bone.use_scale_easing:
        ease1, cix, ciz = ease1 * scale_in[1], cix * scale_in[1], ciz * scale_in[1]
        ease2, cox, coz = ease2 * scale_out[1], cox * scale_out[1], coz * scale_out[1]
    for axis in range(3):
        if bone.use_scale_start[axis]:
            scale_in[axis] *= prev_scale[axis]
        if bone.use_scale_end[axis]:
            scale_out[axis] *= next_scale[axis]
    if bone.use_ease_start:
        ease1, cix, ciz = ease1 * prev_scale[1], cix * prev_scale[1], ciz * prev_scale[1]
    if bone.use_ease_end:
        ease2, cox, coz = ease2 * next_scale[1], cox * next_scale[1], coz * next_scale[1]

    return SplineParameters(
        segments=min(int(bone.segments), MAX_BBONE_SUBDIV), length=length, do_scale=do_scale, scale=scale,
        prev_h=prev_h, next_h=next_h, prev_bbone=prev_bbone, next_bbone=next_bbone,
        prev_mat=prev_mat, next_mat=next_mat, ease1=ease1, ease2=ease2, roll1=roll1, roll2=roll2,
        scale_in=scale_in, scale_out=scale_out, curve_in_x=cix, curve_in_z=ciz, curve_out_x=cox,
        curve_out_z=coz,
    )


def spline_handles(params: SplineParameters) -> tuple[F64, float, F64, float]:
    """Blender's BKE_pchan_bbone_handles_compute (ease and offsets on): ``h1, roll1, h2, roll2``."""
    length = params.length
    epsilon = _HANDLE_EPSILON * length
    if params.do_scale:
        length *= params.scale[1]
    roll1 = roll2 = 0.0
    if params.prev_h is not None:
        h1 = params.prev_h.copy()
        if params.prev_bbone:
            # Both bones bendy: aim along the average direction (prev head to this tail).
            h1[1] -= length
        norm = np.linalg.norm(h1)
        h1 = np.array([0.0, -1.0, 0.0]) if norm < epsilon else h1 / norm
        h1 = -h1
        if not params.prev_bbone and params.prev_mat is not None:
            roll1 = mat3_vec_to_roll(params.prev_mat[:3, :3], h1)
    else:
        h1 = np.array([0.0, 1.0, 0.0])
    if params.next_h is not None:
        h2 = params.next_h.copy()
        if not params.next_bbone:
            h2[1] -= length
        norm = np.linalg.norm(h2)
        h2 = np.array([0.0, 1.0, 0.0]) if norm < epsilon else h2 / norm
        assert params.next_mat is not None
        roll2 = mat3_vec_to_roll(params.next_mat[:3, :3], h2)
    else:
        h2 = np.array([0.0, 1.0, 0.0])

    circle = length * (_circle_tangent_factor(h1, h2) / 0.75)
    h1 = h1 * (params.ease1 * circle)
    h2 = h2 * (-params.ease2 * circle)

    roll1 += params.roll1
    roll2 += params.roll2
    # Blender's correction for the curve offsets in non-uniformly scaled space.
    xs = params.scale[0] if params.do_scale else 1.0
    zs = params.scale[2] if params.do_scale else 1.0
    h1[0] += params.curve_in_x * xs
    h1[2] += params.curve_in_z * zs
    h2[0] += params.curve_out_x * xs
    h2[2] += params.curve_out_z * zs
    return h1, roll1, h2, roll2


def _bezier(control: F64, t: F64) -> tuple[F64, F64]:
    """Positions and de Casteljau tangents (last layer difference) of a cubic at (N,) params."""
    t = t[:, None]
    l1 = [control[i] + (control[i + 1] - control[i]) * t for i in range(3)]
    l2 = [l1[i] + (l1[i + 1] - l1[i]) * t for i in range(2)]
    tangent = l2[1] - l2[0]
    return l2[0] + tangent * t, tangent


def _equalize(control: F64, segment_scales: F64) -> F64:
    """Blender's equalize_cubic_bezier: (S + 1,) curve parameters spaced by arc length."""
    steps = MAX_BBONE_SUBDIV
    coords, _ = _bezier(control, np.arange(steps + 1) / steps)
    pdist = np.concatenate([[0.0], np.cumsum(_norm(np.diff(coords, axis=0), 1))])
    # Target arc lengths of the joints; each is located on the sampled polyline.
    dist = np.cumsum(segment_scales) * (pdist[-1] / segment_scales.sum())
    nr = np.clip(np.searchsorted(pdist, dist, side="right"), 1, steps)
    span = pdist[nr] - pdist[nr - 1]
    fac = np.divide(pdist[nr] - dist, span, out=np.zeros_like(dist), where=span > 0)
    t: F64 = np.concatenate([[0.0], (nr - fac) / steps])
    t[-1] = 1.0
    return t


def _ease_axis(d1: F64, d2: F64) -> F64:
    len2 = float(d2 @ d2)
    if len2 == 0.0:
        return d1
    ratio = float(d1 @ d1) / len2
    if ratio < _EASE_GAP * _EASE_GAP:
        eased: F64 = d1 + d2 * (_EASE_GAP - np.sqrt(ratio))
        return eased
    return d1


def _segment_matrices(params: SplineParameters, pos: F64, axis: F64, roll: F64, sx: F64, sz: F64) -> F64:
    """(N, 4, 4) joint matrices from (N, 3) positions and axes, (N,) rolls and X / Z scales."""
    m = np.zeros((len(pos), 4, 4))
    m[:, :3, :3] = _vec_roll_to_mat3s(axis, roll)
    m[:, :3, 3] = pos
    m[:, 3, 3] = 1.0
    if params.do_scale:
        # The curve was built in scaled space; bring the matrices back to bone space.
        m = np.diag([*(1.0 / params.scale), 1.0]) @ m @ np.diag([*params.scale, 1.0])
    m[:, :3, 0] *= sx[:, None]
    m[:, :3, 2] *= sz[:, None]
    return m


def spline_matrices(params: SplineParameters) -> F64:
    """Blender's BKE_pchan_bbone_spline_compute with ``for_deform``.

    Returns
    -------
    (S + 1, 4, 4) float64 joint matrices in bone space (``bbone_segment_matrix``).
    """
    segments = params.segments
    length = params.length * (params.scale[1] if params.do_scale else 1.0)
    h1, roll1, h2, roll2 = spline_handles(params)
    end = np.array([0.0, length, 0.0])
    control = np.array([np.zeros(3), h1, end + h2, end])

    log_in = np.log(max(params.scale_in[1], _MIN_SEGMENT_SCALE))
    log_out = np.log(max(params.scale_out[1], _MIN_SEGMENT_SCALE))
    # One segment has no in/out gradient (Blender never deforms with it; kept finite here).
    fac = np.arange(segments) / max(segments - 1, 1)
    segment_scales = np.exp(fac * log_out + (1.0 - fac) * log_in)
    t = _equalize(control, segment_scales)

    d1 = np.diff(control, axis=0)
    d2 = np.diff(d1, axis=0)
    # Joint a of S sits at curve parameter t[a]; the end joints use the eased end tangents.
    pos, tangent = _bezier(control, t[1:segments])
    f = np.arange(segments + 1) / segments
    axis = np.concatenate([_ease_axis(d1[0], d2[0])[None], tangent, _ease_axis(d1[2], -d2[1])[None]])
    pos = np.concatenate([control[:1], pos, control[3:]])
    roll = f * roll2 + (1.0 - f) * roll1
    roll[0], roll[-1] = roll1, roll2
    sx = f * params.scale_out[0] + (1.0 - f) * params.scale_in[0]
    sz = f * params.scale_out[2] + (1.0 - f) * params.scale_in[2]
    sx[0], sz[0], sx[-1], sz[-1] = params.scale_in[0], params.scale_in[2], params.scale_out[0], params.scale_out[2]
    return _segment_matrices(params, pos, axis, roll, sx, sz)


def bbone_segment_matrices(
    bone: BBoneSpline, pose: ArrayLike | None = None, pose_shape: BBoneShape = NO_POSE_SHAPE
) -> tuple[F64, F64]:
    """Rest and posed joint matrices of one B-Bone, in bone space.

    Parameters
    ----------
    bone : the bone's inputs; its handles' ``pose`` matrices are read for the posed curve.
    pose : (4, 4) float64 ``PoseBone.matrix`` (None: the rest pose, ``bone.rest``).
    pose_shape : the PoseBone's animated B-Bone values.

    Returns
    -------
    rest : (S + 1, 4, 4) float64, ``bbone_segment_matrix(i, rest=True)``
    posed : (S + 1, 4, 4) float64, ``bbone_segment_matrix(i, rest=False)``
    """
    pose_mat = bone.rest if pose is None else pose
    return (spline_matrices(spline_parameters(bone, rest=True)),
            spline_matrices(spline_parameters(bone, rest=False, pose=pose_mat, pose_shape=pose_shape)))


def bbone_deform_matrices(rest_bone: ArrayLike, channel: ArrayLike, rest_segments: ArrayLike,
                          pose_segments: ArrayLike) -> F64:
    """Armature-space deform matrix of each joint (Blender's ``bbone_deform_mats[1:]``).

    Parameters
    ----------
    rest_bone : (4, 4) float64 ``Bone.matrix_local``
    channel : (4, 4) float64 ``PoseBone.matrix @ inv(Bone.matrix_local)``
    rest_segments, pose_segments : (S + 1, 4, 4) float64 joint matrices in bone space

    Returns
    -------
    (S + 1, 4, 4) float64 ``channel @ arm @ pose_seg @ inv(rest_seg) @ inv(arm)``
    """
    arm = _matrix(rest_bone, "rest_bone")
    chan = _matrix(channel, "channel")
    rest_s = _segments(rest_segments, "rest_segments")
    pose_s = _segments(pose_segments, "pose_segments")
    if rest_s.shape != pose_s.shape:
        raise ShapeError(f"rest_segments {rest_s.shape} and pose_segments {pose_s.shape} differ")
    # sij,sjk->sik: each joint's pose times the inverse of its rest.
    local = np.einsum("sij,sjk->sik", pose_s, affine_inverse(rest_s))
    out: F64 = (chan @ arm) @ local @ affine_inverse(arm)
    return out


def bbone_deform_matrices_many(rest_bone: ArrayLike, channels: ArrayLike, rest_segments: ArrayLike,
                               pose_segments: ArrayLike) -> F64:
    """``bbone_deform_matrices`` at P poses: (P, 4, 4) channels, (P, S + 1, 4, 4) posed joints.

    Returns
    -------
    (P, S + 1, 4, 4) float64 ``channel @ arm @ pose_seg @ inv(rest_seg) @ inv(arm)`` per pose
    """
    arm = _matrix(rest_bone, "rest_bone")
    chan = np.asarray(channels, dtype=np.float64)
    rest_s = _segments(rest_segments, "rest_segments")
    pose_s = np.asarray(pose_segments, dtype=np.float64)
    if pose_s.shape[1:] != rest_s.shape or chan.shape != (len(pose_s), 4, 4):
        raise ShapeError(f"pose_segments {pose_s.shape} and channels {chan.shape} do not match "
                         f"rest_segments {rest_s.shape}")
    out: F64 = (chan @ arm)[:, None] @ (pose_s @ affine_inverse(rest_s)) @ affine_inverse(arm)
    return out


def bbone_deform_matrices_multi(rest_bones: Sequence[ArrayLike], channels: Sequence[ArrayLike],
                                rest_segments: Sequence[ArrayLike], pose_segments: Sequence[ArrayLike]) -> list[F64]:
    """``bbone_deform_matrices_many`` of several B-Bones in one pass (the same products per joint).

    Parameters
    ----------
    rest_bones : per B-Bone, (4, 4) float64 ``Bone.matrix_local``
    channels : per B-Bone, (P_i, 4, 4) float64 its channel at each of its poses
    rest_segments : per B-Bone, (S_i + 1, 4, 4) float64 rest joints
    pose_segments : per B-Bone, (P_i, S_i + 1, 4, 4) float64 posed joints

    Returns
    -------
    per B-Bone, (P_i, S_i + 1, 4, 4) float64 ``channel @ arm @ pose_seg @ inv(rest_seg) @ inv(arm)``
    """
    if not rest_bones:
        return []
    arm = _joined([_matrix(m, "rest_bone")[None] for m in rest_bones])
    chan = [np.asarray(c, dtype=np.float64).reshape(-1, 4, 4) for c in channels]
    rest_s = [_segments(s, "rest_segments") for s in rest_segments]
    pose_s = [np.asarray(s, dtype=np.float64) for s in pose_segments]
    for c, r, p in zip(chan, rest_s, pose_s, strict=True):
        if p.shape[1:] != r.shape or len(c) != len(p):
            raise ShapeError(f"pose_segments {p.shape} and channels {c.shape} do not match "
                             f"rest_segments {r.shape}")
    poses = [len(c) for c in chan]
    joints = [len(r) for r in rest_s]
    per_pose = np.repeat(np.arange(len(arm)), poses)  # B-Bone of each (B-Bone, pose)
    chan_arm = _joined(chan) @ arm[per_pose]
    # Each (B-Bone, pose)'s row repeated over its joints; each B-Bone's rest joints over its poses.
    joint_rows = np.repeat(np.arange(len(per_pose)), np.array(joints)[per_pose])
    inv_rest = np.split(affine_inverse(np.concatenate(rest_s)), np.cumsum(joints)[:-1])
    local = np.concatenate([p.reshape(-1, 4, 4) for p in pose_s]) @ np.concatenate(
        [np.tile(inv, (n, 1, 1)) for inv, n in zip(inv_rest, poses, strict=True)])
    out = chan_arm[joint_rows] @ local @ affine_inverse(arm)[per_pose[joint_rows]]
    sizes = [n * s for n, s in zip(poses, joints, strict=True)]
    return [o.reshape(n, s, 4, 4) for o, n, s in zip(np.split(out, np.cumsum(sizes)[:-1]), poses, joints, strict=True)]


def _joined(parts: Sequence[F64]) -> F64:
    """``np.concatenate`` of (n_i, 4, 4) stacks, each matrix column-major when every part's is (as
    read from Blender): numpy's matmul and einsum sum in an order that depends on their operands'
    strides, and the one-B-Bone passes multiply the parts as they are."""
    if all(p.strides[-2] < p.strides[-1] for p in parts):
        out: F64 = np.concatenate([np.swapaxes(p, -1, -2) for p in parts]).swapaxes(-1, -2)
        return out
    return np.concatenate(parts)


def _segments(m: ArrayLike, name: str) -> F64:
    a = np.asarray(m, dtype=np.float64)
    if a.ndim != 3 or a.shape[1:] != (4, 4) or a.shape[0] < 2:
        raise ShapeError(f"{name} must be (S + 1, 4, 4) with S >= 1 segments, got shape {a.shape}")
    return a


# -- vertex to segment mapping ----------------------------------------------------------


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


# -- blending ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentDualQuaternions:
    """Blender's ``bbone_dual_quats``: one dual quaternion per joint.

    ``real`` (S + 1, 4) and ``dual`` (S + 1, 4) are (w, x, y, z); ``scale`` (S + 1, 4, 4)
    is the scale/shear part folded in at the vertex where ``scaled`` is True.
    """

    real: F64
    dual: F64
    scale: F64
    scaled: NDArray[np.bool_]


def _qmul(a: F64, b: F64) -> F64:
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], -1)


def _normalized_to_quats(m: F64) -> F64:
    """(N, 4) Blender's mat3_normalized_to_quat_fast over (N, 3, 3), same branches, normalised, w >= 0."""
    # Blender indexes mat[col][row]; e(c, r) = m[:, r, c].
    def e(c: int, r: int) -> F64:
        out: F64 = m[:, r, c]
        return out

    n = len(m)
    q = np.zeros((n, 4))
    # (branch condition, index of the 0.25 s component, trace, sign test, the other three components)
    xx, yy, zz = e(0, 0), e(1, 1), e(2, 2)
    b1 = (zz < 0.0) & (xx > yy)
    b2 = (zz < 0.0) & ~b1
    b3 = ~(zz < 0.0) & (xx < -yy)
    b4 = ~(b1 | b2 | b3)
    branches = (
        (b1, 1, 1.0 + xx - yy - zz, e(1, 2) < e(2, 1),
         ((0, e(1, 2) - e(2, 1)), (2, e(0, 1) + e(1, 0)), (3, e(2, 0) + e(0, 2)))),
        (b2, 2, 1.0 - xx + yy - zz, e(2, 0) < e(0, 2),
         ((0, e(2, 0) - e(0, 2)), (1, e(0, 1) + e(1, 0)), (3, e(1, 2) + e(2, 1)))),
        (b3, 3, 1.0 - xx - yy + zz, e(0, 1) < e(1, 0),
         ((0, e(0, 1) - e(1, 0)), (1, e(2, 0) + e(0, 2)), (2, e(1, 2) + e(2, 1)))),
        (b4, 0, 1.0 + xx + yy + zz, np.zeros(n, dtype=bool),
         ((1, e(1, 2) - e(2, 1)), (2, e(2, 0) - e(0, 2)), (3, e(0, 1) - e(1, 0)))),
    )
    for mask, main, trace, negate, others in branches:
        if not mask.any():
            continue
        sq = 2.0 * np.sqrt(np.maximum(trace[mask], 0.0))
        sq = np.where(negate[mask], -sq, sq)
        q[mask, main] = 0.25 * sq
        for k, num in others:
            q[mask, k] = num[mask] / sq
    q /= _norm(q, 1)[:, None]
    out: F64 = np.where(q[:, :1] < 0.0, -q, q)
    return out


def _mat3_to_quats(m: F64) -> F64:
    """(N, 4) Blender's mat3_to_quat over (N, 3, 3): axes normalised, a reflection negated."""
    unit = m / _norm(m, 1)[:, None, :]
    c0, c1, c2 = unit[:, :, 0], unit[:, :, 1], unit[:, :, 2]
    negative = np.sum(c0 * cross(c1, c2), axis=1) < 0.0
    unit = np.where(negative[:, None, None], -unit, unit)
    return _normalized_to_quats(unit)


def _quat_matrices(q: F64) -> F64:
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def _orthogonalize_keep_y(m: F64) -> F64:
    """Blender's orthogonalize_m4(m, 1) over (N, 4, 4): Y direction kept, axis lengths kept."""
    lengths = np.linalg.norm(m[:, :3, :3], axis=1)
    y = m[:, :3, 1] / lengths[:, 1:2]
    z = np.cross(m[:, :3, 0], y)
    z /= np.linalg.norm(z, axis=1)[:, None]
    x = np.cross(y, z)
    out = m.copy()
    out[:, :3, 0], out[:, :3, 1], out[:, :3, 2] = x * lengths[:, :1], y * lengths[:, 1:2], z * lengths[:, 2:]
    return out


def segment_dual_quaternions(
    rest_bone: ArrayLike, rest_segments: ArrayLike, deform: ArrayLike
) -> SegmentDualQuaternions:
    """Blender's ``bbone_dual_quats`` (Preserve Volume), one per joint: mat4_to_dquat with the
    joint's orthonormal armature-space rest frame as base, the scale split off where present.

    Parameters
    ----------
    rest_bone : (4, 4) float64 ``Bone.matrix_local``
    rest_segments : (S + 1, 4, 4) float64 rest joint matrices in bone space
    deform : (S + 1, 4, 4) float64 from ``bbone_deform_matrices``
    """
    arm = _matrix(rest_bone, "rest_bone")
    rest = _segments(rest_segments, "rest_segments")
    mat = _segments(deform, "deform")
    n = len(mat)
    # sij,sjk->sik: batched 4x4 products (no BLAS call per joint).
    base = np.einsum("ij,sjk->sik", arm, rest)
    base[:, :3, :3] /= _norm(base[:, :3, :3], 1)[:, None, :]
    base_rs = np.einsum("sij,sjk->sik", mat, base)
    dscale = _norm(base_rs[:, :3, :3], 1) - 1.0
    m3 = mat[:, :3, :3]
    gram = np.einsum("sji,sjk->sik", m3, m3)
    orthonormal = np.abs(gram - np.eye(3)).max(axis=(1, 2)) <= _DQ_ORTHONORMAL
    det = np.sum(m3[:, :, 0] * cross(m3[:, :, 1], m3[:, :, 2]), axis=1)
    scaled = ~orthonormal | (det < 0.0) | (np.sum(dscale * dscale, axis=1) > _DQ_SCALE * _DQ_SCALE)
    rigid = mat.copy()
    scale = np.tile(np.eye(4), (n, 1, 1))
    if scaled.any():
        tmp = _orthogonalize_keep_y(base_rs[scaled])
        base_r = np.tile(np.eye(4), (int(scaled.sum()), 1, 1))
        base_r[:, :3, :3] = _quat_matrices(_mat3_to_quats(tmp[:, :3, :3]))
        base_r[:, :3, 3] = base_rs[scaled, :3, 3]
        base_inv = affine_inverse(base[scaled])
        rigid[scaled] = np.einsum("sij,sjk->sik", base_r, base_inv)
        stretch = np.einsum("sij,sjk->sik", affine_inverse(base_r), base_rs[scaled])
        scale[scaled] = np.einsum("sij,sjk,skl->sil", base[scaled], stretch, base_inv)
    real = _mat3_to_quats(rigid[:, :3, :3])
    t = np.column_stack([np.zeros(n), rigid[:, :3, 3]])
    return SegmentDualQuaternions(real, 0.5 * _qmul(t, real), scale, scaled)


def accumulate_bbone_dual(real: ArrayLike, dual: ArrayLike, co: ArrayLike, weight: ArrayLike,
                          index: ArrayLike, blend: ArrayLike,
                          quats: SegmentDualQuaternions) -> tuple[F64, F64]:
    """One B-Bone's Preserve Volume contribution added to running dual-quaternion sums.

    Blender's b_bone_deform with add_weighted_dq_dq_pivot: joint ``index`` with weight
    ``w (1 - blend)`` then joint ``index + 1`` with ``w blend``, each sign-flipped
    against the running sum, its scale folded in as a translation at the vertex.

    Parameters
    ----------
    real, dual : (V, 4) float64 running sums (not modified; new sums are returned)
    co : (V, 3) float64 armature-space rest points (the pivots)
    weight : (V,) float64 this bone's vertex-group weights
    index, blend : (V,) from ``segment_index_and_blend``
    quats : from ``segment_dual_quaternions``

    Returns
    -------
    real, dual : (V, 4) float64 updated sums (add ``weight`` to the contribution total).
    """
    r = np.array(real, dtype=np.float64)
    t_sum = np.array(dual, dtype=np.float64)
    p = np.asarray(co, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    i = np.asarray(index, dtype=np.intp)
    b = np.asarray(blend, dtype=np.float64)
    for joint, part in ((i, w * (1.0 - b)), (i + 1, w * b)):
        on = part != 0.0
        q = quats.real[joint]
        t = quats.dual[joint].copy()
        s = quats.scale[joint]
        # vij,vj->vi: each vertex's pivot moved by its joint's scale part.
        moved = np.einsum("vij,vj->vi", s[:, :3, :3], p) + s[:, :3, 3] - p
        d = np.where(quats.scaled[joint][:, None], moved, 0.0)
        t += 0.5 * _qmul(q, np.column_stack([np.zeros(len(p)), d]))
        # vc,vc->v: flip toward the running sum's hemisphere.
        flip = np.einsum("vc,vc->v", r, q) < 0.0
        signed = np.where(on, np.where(flip, -part, part), 0.0)[:, None]
        r = r + signed * q
        t_sum = t_sum + signed * t
    return r, t_sum


# -- conveniences for the audit -----------------------------------------------------------


def posed_spline(bone: BBoneSpline, prev_pose: ArrayLike | None, next_pose: ArrayLike | None) -> BBoneSpline:
    """The same B-Bone with its handle bones' pose matrices replaced (poses made in numpy).

    Parameters
    ----------
    prev_pose, next_pose : (4, 4) float64 handle bones' ``PoseBone.matrix`` at the new pose
        (ignored where the bone has no such handle).
    """
    prev = bone.prev
    nxt = bone.next
    if prev is not None and prev_pose is not None:
        prev = replace(prev, pose=_matrix(prev_pose, "prev_pose"))
    if nxt is not None and next_pose is not None:
        nxt = replace(nxt, pose=_matrix(next_pose, "next_pose"))
    return replace(bone, prev=prev, next=nxt)


@dataclass(frozen=True)
class RigBBone:
    """One B-Bone of an armature as the audit keeps it.

    ``prev_bone`` / ``next_bone`` index the armature's bone arrays (-1: no handle);
    ``rest_segments`` / ``pose_segments`` (S + 1, 4, 4) are Blender's joint matrices
    read at the extracted pose; ``channels`` (3, 4, 4) are the channel matrices of the
    bone, its start and its end handle at that pose (identity where absent), so a pose
    made in numpy is recognised as the extracted one or recomputed from the handles.
    """

    spline: BBoneSpline
    pose_shape: BBoneShape
    prev_bone: int
    next_bone: int
    rest_segments: F64
    pose_segments: F64
    channels: F64


def rig_pose_segments(rig_bbone: RigBBone, bone: int, channel: ArrayLike, rest: ArrayLike) -> F64:
    """(S + 1, 4, 4) joint matrices of a rig's B-Bone at the armature pose ``channel``.

    Blender's own (read) matrices at the extracted pose; otherwise the curve recomputed
    from the handles in numpy (the B-Bone's animated properties kept as read).

    Parameters
    ----------
    rig_bbone : the B-Bone's record; ``bone`` its index in the armature's arrays
    channel : (J, 4, 4) float64 every bone's channel matrix at the pose
    rest : (J, 4, 4) float64 every bone's ``matrix_local``
    """
    chan = np.asarray(channel, dtype=np.float64)
    rst = np.asarray(rest, dtype=np.float64)
    # Blender's own joints at the extracted pose; and the sweep asks for the same B-Bone at the
    # same pose several times (its LBS and its DQS measures): the memo keeps recent curves.
    hit = _memo_lookup(rig_bbone, bone, chan)
    if hit is not None:
        return hit

    def pose(k: int) -> F64 | None:
        return None if k < 0 else chan[k] @ rst[k]

    spline = posed_spline(rig_bbone.spline, pose(rig_bbone.prev_bone), pose(rig_bbone.next_bone))
    params = spline_parameters(spline, rest=False, pose=chan[bone] @ rst[bone], pose_shape=rig_bbone.pose_shape)
    out = spline_matrices(params)
    _memo_store(rig_bbone, bone, chan, out)
    return out


def rig_pose_segments_many(rig_bbone: RigBBone, bone: int, channels: ArrayLike, rest: ArrayLike) -> F64:
    """(P, S + 1, 4, 4) ``rig_pose_segments`` at each of P armature poses, the curves computed together.

    The same branches and products as one pose at a time, batched over the poses (the sweep
    bends each B-Bone at a dozen poses of one bone); the results also fill the memo that
    ``rig_pose_segments`` reads.  Poses with non-uniform scale, or a B-Bone whose handles
    read their scale, go one at a time.  ``rig_pose_segments_multi`` with one B-Bone.

    Parameters
    ----------
    channels : (P, J, 4, 4) float64 every bone's channel matrix at each pose
    rest : (J, 4, 4) float64 every bone's ``matrix_local``
    """
    chan = np.asarray(channels, dtype=np.float64)
    return rig_pose_segments_multi([(rig_bbone, bone, np.arange(len(chan)))], chan, rest)[0]


def rig_pose_segments_multi(requests: Sequence[tuple[RigBBone, int, ArrayLike]], channels: ArrayLike,
                            rest: ArrayLike) -> list[F64]:
    """``rig_pose_segments_many`` of several B-Bones, each at its own poses, the curves computed together.

    Each B-Bone's poses are looked up in the memo, then sent one at a time (non-uniform scale at
    any of them, handles that read their scale) exactly as ``rig_pose_segments_many`` decides for
    that B-Bone; the rest of every B-Bone go through one vectorised pass per segment count: the
    same operations as the per-B-Bone pass on each (B-Bone, pose) row, so the same bits (a rig
    has dozens of B-Bones, and each pass is mostly numpy's per-call cost on tiny arrays).  The
    memo is read for every request before it is written (a memo filled up part-way through is
    cleared later than one call per B-Bone would clear it; it holds the same curves).

    Parameters
    ----------
    requests : (record, its bone index, (P_i,) int indices into ``channels``) per B-Bone
    channels : (P, J, 4, 4) float64 every bone's channel matrix at each pose
    rest : (J, 4, 4) float64 every bone's ``matrix_local``

    Returns
    -------
    per request, (P_i, S_i + 1, 4, 4) float64 joint matrices in bone space
    """
    chan = np.asarray(channels, dtype=np.float64)
    rst = np.asarray(rest, dtype=np.float64)
    # A B-Bone asked twice is asked again after the first pass, as one call per request would
    # (the memo then answers its poses already computed).
    seen: set[tuple[int, int]] = set()
    first = []
    for r, (rig_bbone, bone, _) in enumerate(requests):
        if (id(rig_bbone), bone) not in seen:
            seen.add((id(rig_bbone), bone))
            first.append(r)
    if len(first) < len(requests):
        again = [r for r in range(len(requests)) if r not in set(first)]
        answers = dict(zip(first, rig_pose_segments_multi([requests[r] for r in first], chan, rst), strict=True))
        answers.update(zip(again, rig_pose_segments_multi([requests[r] for r in again], chan, rst), strict=True))
        return [answers[r] for r in range(len(requests))]
    outs: list[F64] = []
    # Rows still to compute, per request: (request, pose indices into chan, rows of its output).
    batched: list[tuple[int, NDArray[np.intp], NDArray[np.intp]]] = []
    for r, (rig_bbone, bone, poses) in enumerate(requests):
        pose_ids = np.asarray(poses, dtype=np.intp).reshape(-1)
        out = np.empty((len(pose_ids), *rig_bbone.rest_segments.shape))
        outs.append(out)
        todo = []
        for i, p in enumerate(pose_ids.tolist()):
            hit = _memo_lookup(rig_bbone, bone, chan[p])
            if hit is None:
                todo.append(i)
            else:
                out[i] = hit
        if not todo:
            continue
        rows = np.array(todo, dtype=np.intp)
        at = pose_ids[rows]
        pose_mats = chan[at, bone] @ rst[bone]
        size = _norm(pose_mats[:, :3, :3], 1)
        scaled = ((np.abs(size[:, 0] - size[:, 1]) > _NONUNIFORM_SCALE)
                  | (np.abs(size[:, 1] - size[:, 2]) > _NONUNIFORM_SCALE))
        if scaled.any() or _curve_constants(rig_bbone).handle_scale:
            for i, p in zip(todo, at.tolist(), strict=True):
                out[i] = rig_pose_segments(rig_bbone, bone, chan[p], rst)
            continue
        batched.append((r, at, rows))
    # One pass per segment count (a B-Bone whose unit pose is scaled, never seen, alone).
    groups: dict[tuple[int, int], list[tuple[int, NDArray[np.intp], NDArray[np.intp]]]] = {}
    for item in batched:
        rb = requests[item[0]][0]
        c = _curve_constants(rb)
        groups.setdefault((c.params.segments, id(rb) if c.params.do_scale else -1), []).append(item)
    for group in groups.values():
        consts = [_curve_constants(requests[r][0]) for r, _, _ in group]
        counts = [len(at) for _, at, _ in group]
        at = np.concatenate([at for _, at, _ in group])
        bones = np.repeat([requests[r][1] for r, _, _ in group], counts)
        prevs = np.repeat([max(requests[r][0].prev_bone, 0) for r, _, _ in group], counts)
        nexts = np.repeat([max(requests[r][0].next_bone, 0) for r, _, _ in group], counts)
        # (Rows of B-Bones without a handle get bone 0's: computed, then not used.)
        joints = _spline_matrices_multi(consts, counts, chan[at, bones] @ rst[bones], chan[at, prevs] @ rst[prevs],
                                        chan[at, nexts] @ rst[nexts])
        start = 0
        for (r, at_r, rows), n in zip(group, counts, strict=True):
            rig_bbone, bone, _ = requests[r]
            part = joints[start:start + n]
            start += n
            outs[r][rows] = part
            for i, p in enumerate(at_r.tolist()):
                _memo_store(rig_bbone, bone, chan[p], part[i].copy())
    return outs


def _memo_key(rig_bbone: RigBBone, bone: int, chan: F64) -> tuple[int, int, bytes]:
    used = [k for k in (bone, rig_bbone.prev_bone, rig_bbone.next_bone) if k >= 0]
    return (id(rig_bbone), bone, b"".join(chan[k].tobytes() for k in used))


def _memo_lookup(rig_bbone: RigBBone, bone: int, chan: F64) -> F64 | None:
    """The read joints at the extracted pose, or a remembered curve, or None."""
    used = [(slot, k) for slot, k in enumerate((bone, rig_bbone.prev_bone, rig_bbone.next_bone)) if k >= 0]
    if all(np.array_equal(chan[k], rig_bbone.channels[slot]) for slot, k in used):
        return rig_bbone.pose_segments
    hit = _SEGMENT_MEMO.get(_memo_key(rig_bbone, bone, chan))
    return hit[1] if hit is not None and hit[0] is rig_bbone else None


def _memo_store(rig_bbone: RigBBone, bone: int, chan: F64, joints: F64) -> None:
    joints.flags.writeable = False  # shared through the memo
    if len(_SEGMENT_MEMO) >= _SEGMENT_MEMO_SIZE:
        _SEGMENT_MEMO.clear()
    _SEGMENT_MEMO[_memo_key(rig_bbone, bone, chan)] = (rig_bbone, joints)  # the record kept alive: its id stays


def _rows_apply(m: F64, p: F64) -> F64:
    """(P, 3) each (4, 4) of ``m`` applied to its point of ``p``."""
    out: F64 = np.einsum("pij,pj->pi", m[:, :3, :3], p) + m[:, :3, 3]  # pij,pj->pi: per-pose transform
    return out


@dataclass(frozen=True)
class _CurveConstants:
    """What one B-Bone's curve takes from its record, the same at every pose (``_curve_constants``)."""

    params: SplineParameters  # spline_parameters at a unit pose: the pose-independent values
    handle_scale: bool  # handles read their scale: one pose at a time
    length: float
    prev: tuple[str, bool, F64, float] | None  # handle type, prev_bbone, rest head, length
    next: tuple[str, bool, F64, float] | None
    cum_scales: F64  # (S,) cumsum of the segments' lengthwise scales
    total_scale: float  # their sum
    sx: F64  # (S + 1,) joints' X scale
    sz: F64  # (S + 1,)


def _curve_constants(rig_bbone: RigBBone) -> _CurveConstants:
    """The B-Bone's pose-independent curve values, computed once per spline and pose shape (the
    test-pose copies of a mesh's records share their splines)."""
    bone = rig_bbone.spline
    key = (id(bone), rig_bbone.pose_shape, rig_bbone.prev_bone >= 0, rig_bbone.next_bone >= 0)
    hit = _CONSTANTS.get(key)
    if hit is not None and hit[0] is bone:
        return hit[1]
    length = float(bone.length)
    params = spline_parameters(bone, rest=False, pose=bone.rest, pose_shape=rig_bbone.pose_shape)
    prev = nxt = None
    if bone.prev is not None and rig_bbone.prev_bone >= 0:
        p_arm_head, _ = _head_tail(_matrix(bone.prev.rest, "prev.rest"), bone.prev.length)
        kind = bone.handle_type_start
        prev = (kind, kind not in ("RELATIVE", "TANGENT") and bone.prev.segments > 1, p_arm_head,
                float(bone.prev.length))
    if bone.next is not None and rig_bbone.next_bone >= 0:
        n_arm_head, _ = _head_tail(_matrix(bone.next.rest, "next.rest"), bone.next.length)
        kind = bone.handle_type_end
        nxt = (kind, kind not in ("RELATIVE", "TANGENT") and bone.next.segments > 1, n_arm_head,
               float(bone.next.length))
    segments = params.segments
    log_in = np.log(max(params.scale_in[1], _MIN_SEGMENT_SCALE))
    log_out = np.log(max(params.scale_out[1], _MIN_SEGMENT_SCALE))
    fac = np.arange(segments) / max(segments - 1, 1)
    segment_scales = np.exp(fac * log_out + (1.0 - fac) * log_in)
    f = np.arange(segments + 1) / segments
    sx = f * params.scale_out[0] + (1.0 - f) * params.scale_in[0]
    sz = f * params.scale_out[2] + (1.0 - f) * params.scale_in[2]
    sx[0], sz[0], sx[-1], sz[-1] = params.scale_in[0], params.scale_in[2], params.scale_out[0], params.scale_out[2]
    handle_scale = any((*bone.use_scale_start, bone.use_ease_start, *bone.use_scale_end, bone.use_ease_end))
    out = _CurveConstants(params, handle_scale, length, prev, nxt, np.cumsum(segment_scales),
                          float(segment_scales.sum()), sx, sz)
    if len(_CONSTANTS) >= _SEGMENT_MEMO_SIZE:
        _CONSTANTS.clear()
    _CONSTANTS[key] = (bone, out)  # the spline kept alive: its id stays
    return out


def _spline_matrices_multi(consts: Sequence[_CurveConstants], counts: Sequence[int], pose: F64, prev_pose: F64,
                           next_pose: F64) -> F64:
    """``spline_matrices(spline_parameters(...))`` for rows without scale: (N, S + 1, 4, 4).

    ``counts[b]`` consecutive rows are B-Bone ``b``'s poses, every B-Bone with S segments (and
    ``params.do_scale`` the same).  ``pose``, ``prev_pose``, ``next_pose`` (N, 4, 4): the bone's
    and its handles' pose matrices (anything where it has no such handle).  The same steps as
    ``spline_parameters``, ``spline_handles`` and ``spline_matrices`` (read those for Blender's
    sources), each over the rows at once, each row's numbers from its own B-Bone's.
    """
    n = len(pose)

    def per_row(values: Sequence[object]) -> NDArray[Any]:
        out: NDArray[Any] = np.repeat(np.asarray(values), counts, axis=0)
        return out

    no_h = (None, False, np.zeros(3), 0.0)
    prevs = [c.prev or no_h for c in consts]
    nexts = [c.next or no_h for c in consts]
    length = per_row([c.length for c in consts])
    imat = affine_inverse(pose)
    head = pose[:, :3, 3]
    tail = head + pose[:, :3, 1] * length[:, None]
    epsilon = _HANDLE_EPSILON * length
    # Start handle: spline_parameters, then spline_handles.
    has_prev = per_row([c.prev is not None for c in consts])
    roll1 = np.zeros(n)
    h1 = np.tile([0.0, 1.0, 0.0], (n, 1))
    if has_prev.any():
        kind = per_row([h[0] or "" for h in prevs])
        prev_bbone = per_row([h[1] for h in prevs])
        p_arm_head = per_row([h[2] for h in prevs])
        p_head = prev_pose[:, :3, 3]
        p_tail = p_head + prev_pose[:, :3, 1] * per_row([h[3] for h in prevs])[:, None]
        relative, tangent = kind == "RELATIVE", kind == "TANGENT"
        h = np.zeros((n, 3))
        if (relative | tangent).any():
            h = _rows_apply(imat, np.where(relative[:, None], head - (p_head - p_arm_head), head - (p_tail - p_head)))
        absolute = has_prev & ~relative & ~tangent
        if absolute.any():
            # The head as a view of its pose matrix, as the per-B-Bone pass has it: einsum's sums
            # depend on its operands' strides (the last bit).
            h[absolute] = _rows_apply(imat[absolute], prev_pose[absolute][:, :3, 3])
        h[prev_bbone, 1] -= length[prev_bbone]
        norm = _norm(h, 1)
        h = -np.where((norm < epsilon)[:, None], [[0.0, -1.0, 0.0]], h / np.where(norm > 0.0, norm, 1.0)[:, None])
        rolled = has_prev & ~prev_bbone
        if rolled.any():
            roll1[rolled] = _rolls(imat[rolled] @ prev_pose[rolled], h[rolled])
        h1[has_prev] = h[has_prev]
    has_next = per_row([c.next is not None for c in consts])
    roll2 = np.zeros(n)
    h2 = np.tile([0.0, 1.0, 0.0], (n, 1))
    if has_next.any():
        kind = per_row([h[0] or "" for h in nexts])
        next_bbone = per_row([h[1] for h in nexts])
        n_arm_head = per_row([h[2] for h in nexts])
        n_head = next_pose[:, :3, 3]
        n_tail = n_head + next_pose[:, :3, 1] * per_row([h[3] for h in nexts])[:, None]
        point = np.where((kind == "RELATIVE")[:, None], tail + (n_head - n_arm_head),
                         np.where((kind == "TANGENT")[:, None], tail + (n_tail - n_head), n_tail))
        h = _rows_apply(imat, point)
        h[~next_bbone, 1] -= length[~next_bbone]
        norm = _norm(h, 1)
        h = np.where((norm < epsilon)[:, None], [[0.0, 1.0, 0.0]], h / np.where(norm > 0.0, norm, 1.0)[:, None])
        roll2[has_next] = _rolls(imat[has_next] @ next_pose[has_next], h[has_next])
        h2[has_next] = h[has_next]
    # The pose-independent values, from each B-Bone's spline_parameters at a unit pose.
    params = [c.params for c in consts]
    circle = length * (_circle_tangent_factors(h1, h2) / 0.75)
    h1 = h1 * (per_row([p.ease1 for p in params]) * circle)[:, None]
    h2 = h2 * (-per_row([p.ease2 for p in params]) * circle)[:, None]
    roll1 = roll1 + per_row([p.roll1 for p in params])
    roll2 = roll2 + per_row([p.roll2 for p in params])
    h1[:, 0] += per_row([p.curve_in_x for p in params])
    h1[:, 2] += per_row([p.curve_in_z for p in params])
    h2[:, 0] += per_row([p.curve_out_x for p in params])
    h2[:, 2] += per_row([p.curve_out_z for p in params])
    # spline_matrices.
    segments = params[0].segments
    end = np.zeros((n, 3))
    end[:, 1] = length
    control = np.stack([np.zeros((n, 3)), h1, end + h2, end], axis=1)
    t = _equalize_many(control, per_row([c.cum_scales for c in consts]), per_row([c.total_scale for c in consts]))
    d1 = np.diff(control, axis=1)
    d2 = np.diff(d1, axis=1)
    inner_pos, inner_axis = _bezier_many(control, t[:, 1:segments])
    pos = np.concatenate([control[:, :1], inner_pos, control[:, 3:]], axis=1)
    axis = np.concatenate([_ease_axes(d1[:, 0], d2[:, 0])[:, None], inner_axis,
                           _ease_axes(d1[:, 2], -d2[:, 1])[:, None]], axis=1)
    f = np.arange(segments + 1) / segments
    roll = np.asarray(f * roll2[:, None] + (1.0 - f) * roll1[:, None], dtype=np.float64)
    roll[:, 0], roll[:, -1] = roll1, roll2
    out = _segment_matrices(params[0], pos.reshape(-1, 3), axis.reshape(-1, 3), roll.reshape(-1),
                            per_row([c.sx for c in consts]).reshape(-1), per_row([c.sz for c in consts]).reshape(-1))
    return out.reshape(n, segments + 1, 4, 4)


def _bezier_many(control: F64, t: F64) -> tuple[F64, F64]:
    """``_bezier`` over P curves: (P, 4, 3) control points, (P, M) parameters -> (P, M, 3) twice."""
    t = t[:, :, None]
    c = control[:, :, None, :]
    l1 = [c[:, i] + (c[:, i + 1] - c[:, i]) * t for i in range(3)]
    l2 = [l1[i] + (l1[i + 1] - l1[i]) * t for i in range(2)]
    tangent = l2[1] - l2[0]
    return l2[0] + tangent * t, tangent


def _equalize_many(control: F64, cum_scales: F64, total_scale: F64) -> F64:
    """``_equalize`` over P curves: (P, S + 1) parameters (searchsorted as a count per row); each
    row's segment scales as their (P, S) cumulative sums and (P,) totals."""
    steps = MAX_BBONE_SUBDIV
    coords, _ = _bezier_many(control, np.broadcast_to(np.arange(steps + 1) / steps, (len(control), steps + 1)))
    pdist = np.concatenate([np.zeros((len(control), 1)), np.cumsum(_norm(np.diff(coords, axis=1), 2), axis=1)],
                           axis=1)
    dist = cum_scales * (pdist[:, -1:] / total_scale[:, None])
    # searchsorted(side="right") on a sorted row: how many of its entries are <= the value.
    nr = np.clip(np.sum(pdist[:, None, :] <= dist[:, :, None], axis=2), 1, steps)
    hi = np.take_along_axis(pdist, nr, axis=1)
    span = hi - np.take_along_axis(pdist, nr - 1, axis=1)
    fac = np.divide(hi - dist, span, out=np.zeros_like(dist), where=span > 0)
    t: F64 = np.concatenate([np.zeros((len(control), 1)), (nr - fac) / steps], axis=1)
    t[:, -1] = 1.0
    return t


def _rolls(mats: F64, vecs: F64) -> F64:
    """(P,) ``mat3_vec_to_roll`` over (P, 4, 4) matrices and (P, 3) directions."""
    rollmat = np.transpose(_vec_roll_to_mat3s(vecs, np.zeros(len(vecs))), (0, 2, 1)) @ mats[:, :3, :3]
    q = _mat3_to_quats(rollmat)
    out: F64 = 2.0 * np.arctan2(q[:, 2], q[:, 0])
    return out


def _circle_tangent_factors(tan_l: F64, tan_r: F64) -> F64:
    """(P,) ``_circle_tangent_factor`` over (P, 3) unit tangents."""
    dot = np.sum(tan_l * tan_r, axis=1)
    angle = np.arccos(np.clip(dot, -1.0, 1.0)) / 2.0
    s, c = np.sin(angle), np.cos(angle)
    with np.errstate(divide="ignore", invalid="ignore"):
        general = ((1.0 - c) / (s * 2.0)) / s
    out: F64 = np.where(dot > 1.0 - _TANGENT_DOT_EPSILON, (1.0 / 3.0) * 0.75,
                        np.where(dot < -1.0 + _TANGENT_DOT_EPSILON, 0.5, general))
    return out


def _ease_axes(d1: F64, d2: F64) -> F64:
    """(P, 3) ``_ease_axis`` over (P, 3) derivatives."""
    len2 = np.sum(d2 * d2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sum(d1 * d1, axis=1) / len2
        eased = d1 + d2 * (_EASE_GAP - np.sqrt(ratio))[:, None]
    out: F64 = np.where(((len2 != 0.0) & (ratio < _EASE_GAP * _EASE_GAP))[:, None], eased, d1)
    return out


#: Recent posed segments by (record id, bone, channel bytes); cleared when full.
_SEGMENT_MEMO: dict[tuple[int, int, bytes], tuple[RigBBone, F64]] = {}
_SEGMENT_MEMO_SIZE = 4096  # (S + 1) x 128 bytes each: under 17 MB when full
#: B-Bones' pose-independent curve values by (spline id, pose shape, has start / end handle).
_CONSTANTS: dict[tuple[int, BBoneShape, bool, bool], tuple[BBoneSpline, _CurveConstants]] = {}
