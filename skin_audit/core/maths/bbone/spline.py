# SPDX-License-Identifier: GPL-3.0-or-later
"""The B-Bone curve as Blender builds it: the bone's inputs, its spline parameters and handles,
and the joint matrices along the curve (armature.cc; see the package docstring for the sources).

The curve functions work on rows: the one-B-Bone curve (``spline_matrices``) is the batched
curve's helpers (``bezier_rows``, ``equalize_rows``, ...) with one row, so both give Blender's
branches the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import ShapeError
from ..affine import affine_inverse
from ..quaternions import blender_matrix_to_quaternion

F64 = NDArray[np.float64]

#: sampled at this many steps to equalise segment lengths.
MAX_BBONE_SUBDIV = 32

#: ``bbone_mapping_mode`` values.
STRAIGHT = "STRAIGHT"
CURVED = "CURVED"

#: ``bbone_handle_type_start/end`` values.  AUTO behaves as ABSOLUTE on the bone it
#: resolves to (connected parent / connected child); the caller resolves it.
HANDLE_TYPES = ("AUTO", "ABSOLUTE", "RELATIVE", "TANGENT")

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
    """One B-Bone's inputs (Bone properties and its handle bones).

    ``constants`` holds the batched curve's pose-independent values of this spline, computed
    once per pose shape (``batched.curve_constants``); it is not an input and a copy starts empty.
    """

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
    constants: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)


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


# -- small Blender maths, over rows ----------------------------------------------------


def _matrix(m: ArrayLike, name: str) -> F64:
    a = np.asarray(m, dtype=np.float64)
    if a.shape != (4, 4):
        raise ShapeError(f"B-Bone input {name!r} must be a (4, 4) matrix, got shape {a.shape}")
    return a


def _segments(m: ArrayLike, name: str) -> F64:
    a = np.asarray(m, dtype=np.float64)
    if a.ndim != 3 or a.shape[1:] != (4, 4) or a.shape[0] < 2:
        raise ShapeError(f"{name} must be (S + 1, 4, 4) with S >= 1 segments, got shape {a.shape}")
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
    out: F64 = vec_roll_to_mat3_rows(np.asarray(vec, dtype=np.float64)[None], np.array([float(roll)]))[0]
    return out


def vec_roll_to_mat3_rows(vec: F64, roll: F64) -> F64:
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
    return float(rolls(m[None], np.asarray(vec, dtype=np.float64)[None])[0])


def rolls(mats: F64, vecs: F64) -> F64:
    """(P,) ``mat3_vec_to_roll`` over (P, 3, 3) or (P, 4, 4) matrices and (P, 3) directions."""
    # vec_roll_to_mat3(vec, 0) is a rotation: its inverse is its transpose.
    rollmat = np.transpose(vec_roll_to_mat3_rows(vecs, np.zeros(len(vecs))), (0, 2, 1)) @ mats[:, :3, :3]
    q = blender_matrix_to_quaternion(rollmat)
    out: F64 = 2.0 * np.arctan2(q[:, 2], q[:, 0])
    return out


def circle_tangent_factors(tan_l: F64, tan_r: F64) -> F64:
    """(P,) Blender's cubic_tangent_factor_circle_v3 over (P, 3) unit tangents."""
    dot = np.sum(tan_l * tan_r, axis=1)
    angle = np.arccos(np.clip(dot, -1.0, 1.0)) / 2.0
    s, c = np.sin(angle), np.cos(angle)
    with np.errstate(divide="ignore", invalid="ignore"):
        general = ((1.0 - c) / (s * 2.0)) / s
    out: F64 = np.where(dot > 1.0 - _TANGENT_DOT_EPSILON, (1.0 / 3.0) * 0.75,
                        np.where(dot < -1.0 + _TANGENT_DOT_EPSILON, 0.5, general))
    return out


def ease_axes(d1: F64, d2: F64) -> F64:
    """(P, 3) Blender's ease_handle_axis over (P, 3) derivatives."""
    len2 = np.sum(d2 * d2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sum(d1 * d1, axis=1) / len2
        eased = d1 + d2 * (_EASE_GAP - np.sqrt(ratio))[:, None]
    out: F64 = np.where(((len2 != 0.0) & (ratio < _EASE_GAP * _EASE_GAP))[:, None], eased, d1)
    return out


def bezier_rows(control: F64, t: F64) -> tuple[F64, F64]:
    """Positions and de Casteljau tangents (last layer difference) of P cubics: (P, 4, 3) control
    points at (P, M) parameters -> (P, M, 3) twice."""
    t = t[:, :, None]
    c = control[:, :, None, :]
    l1 = [c[:, i] + (c[:, i + 1] - c[:, i]) * t for i in range(3)]
    l2 = [l1[i] + (l1[i + 1] - l1[i]) * t for i in range(2)]
    tangent = l2[1] - l2[0]
    return l2[0] + tangent * t, tangent


def equalize_rows(control: F64, cum_scales: F64, total_scale: F64) -> F64:
    """Blender's equalize_cubic_bezier over P curves: (P, S + 1) curve parameters spaced by arc
    length (searchsorted as a count per row); each row's segment scales as their (P, S)
    cumulative sums and (P,) totals."""
    steps = MAX_BBONE_SUBDIV
    coords, _ = bezier_rows(control, np.broadcast_to(np.arange(steps + 1) / steps, (len(control), steps + 1)))
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
            roll1 = mat3_vec_to_roll(params.prev_mat, h1)
    else:
        h1 = np.array([0.0, 1.0, 0.0])
    if params.next_h is not None:
        h2 = params.next_h.copy()
        if not params.next_bbone:
            h2[1] -= length
        norm = np.linalg.norm(h2)
        h2 = np.array([0.0, 1.0, 0.0]) if norm < epsilon else h2 / norm
        assert params.next_mat is not None
        roll2 = mat3_vec_to_roll(params.next_mat, h2)
    else:
        h2 = np.array([0.0, 1.0, 0.0])

    circle = length * (float(circle_tangent_factors(h1[None], h2[None])[0]) / 0.75)
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


def segment_matrices(params: SplineParameters, pos: F64, axis: F64, roll: F64, sx: F64, sz: F64) -> F64:
    """(N, 4, 4) joint matrices from (N, 3) positions and axes, (N,) rolls and X / Z scales."""
    m = np.zeros((len(pos), 4, 4))
    m[:, :3, :3] = vec_roll_to_mat3_rows(axis, roll)
    m[:, :3, 3] = pos
    m[:, 3, 3] = 1.0
    if params.do_scale:
        # The curve was built in scaled space; bring the matrices back to bone space.
        m = np.diag([*(1.0 / params.scale), 1.0]) @ m @ np.diag([*params.scale, 1.0])
    m[:, :3, 0] *= sx[:, None]
    m[:, :3, 2] *= sz[:, None]
    return m


def segment_scales(params: SplineParameters) -> tuple[F64, F64, F64]:
    """The joints' lengthwise segment scales (S,) and X / Z scales (S + 1,) from the scale in / out."""
    segments = params.segments
    log_in = np.log(max(params.scale_in[1], _MIN_SEGMENT_SCALE))
    log_out = np.log(max(params.scale_out[1], _MIN_SEGMENT_SCALE))
    # One segment has no in/out gradient (Blender never deforms with it; kept finite here).
    fac = np.arange(segments) / max(segments - 1, 1)
    lengthwise = np.exp(fac * log_out + (1.0 - fac) * log_in)
    f = np.arange(segments + 1) / segments
    sx = f * params.scale_out[0] + (1.0 - f) * params.scale_in[0]
    sz = f * params.scale_out[2] + (1.0 - f) * params.scale_in[2]
    sx[0], sz[0], sx[-1], sz[-1] = params.scale_in[0], params.scale_in[2], params.scale_out[0], params.scale_out[2]
    return lengthwise, sx, sz


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
    lengthwise, sx, sz = segment_scales(params)
    t = equalize_rows(control[None], np.cumsum(lengthwise)[None], np.array([float(lengthwise.sum())]))[0]

    d1 = np.diff(control, axis=0)
    d2 = np.diff(d1, axis=0)
    # Joint a of S sits at curve parameter t[a]; the end joints use the eased end tangents.
    pos, tangent = bezier_rows(control[None], t[None, 1:segments])
    f = np.arange(segments + 1) / segments
    axis = np.concatenate([ease_axes(d1[:1], d2[:1]), tangent[0], ease_axes(d1[2:], -d2[1:])])
    pos = np.concatenate([control[:1], pos[0], control[3:]])
    roll = f * roll2 + (1.0 - f) * roll1
    roll[0], roll[-1] = roll1, roll2
    return segment_matrices(params, pos, axis, roll, sx, sz)


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
