# SPDX-License-Identifier: GPL-3.0-or-later
"""The B-Bone curve as Blender builds it: the bone's inputs, the curve values no matrix changes,
and the curve's steps over rows of curves (armature.cc; see the package docstring for the sources).

``batched`` runs these steps on many (B-Bone, pose) rows at once; the one-B-Bone curve that
follows Blender's functions one call at a time is kept in the tests, as the reference the rows
are compared with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import ShapeError
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
class CurveValues:
    """A B-Bone's curve values at a pose that no matrix changes: Blender's BBoneSplineParameters
    (``BKE_pchan_bbone_spline_params_get``, ``rest`` false) without the handle points and rolls.

    The Bone's ease / roll / curve plus the PoseBone's, its scale in / out times the PoseBone's,
    with scale easing, then the handles' local scale (``use_scale_start/end``,
    ``use_ease_start/end``: read on the handle records, ``BBoneHandle.local_scale``).
    """

    segments: int  # clamped to MAX_BBONE_SUBDIV
    ease1: float
    ease2: float
    roll1: float  # the Bone's and PoseBone's roll in, plus the start handle's roll out (end roll as in roll)
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


def joins_curves(kind: str, handle: BBoneHandle) -> bool:
    """Blender's ``prev_bbone`` / ``next_bbone``: an AUTO or ABSOLUTE handle with segments of its own
    joins the two curves (the handle aims along the average direction, the start takes no roll)."""
    return kind not in ("RELATIVE", "TANGENT") and handle.segments > 1


# -- what a pose does not change ----------------------------------------------------------


def curve_values(bone: BBoneSpline, pose_shape: BBoneShape = NO_POSE_SHAPE) -> CurveValues:
    """The B-Bone's curve values with the PoseBone's values ``pose_shape``: the part of Blender's
    BKE_pchan_bbone_spline_params_get (``rest`` false) that no matrix changes.

    The handles' local scale is their records' (``BBoneHandle.local_scale``, read with the B-Bone).
    """
    b, ps = bone.shape, pose_shape
    ease1 = b.ease_in + ps.ease_in
    ease2 = b.ease_out + ps.ease_out
    roll1 = b.roll_in + ps.roll_in
    roll2 = b.roll_out + ps.roll_out
    if bone.use_endroll_as_inroll and bone.prev is not None:
        roll1 += bone.prev.roll_out_rest + bone.prev.roll_out_pose
    scale_in = np.asarray(b.scale_in, dtype=np.float64) * np.asarray(ps.scale_in, dtype=np.float64)
    scale_out = np.asarray(b.scale_out, dtype=np.float64) * np.asarray(ps.scale_out, dtype=np.float64)
    cix = b.curve_in_x + ps.curve_in_x
    ciz = b.curve_in_z + ps.curve_in_z
    cox = b.curve_out_x + ps.curve_out_x
    coz = b.curve_out_z + ps.curve_out_z
    if bone.use_scale_easing:
        ease1, cix, ciz = ease1 * scale_in[1], cix * scale_in[1], ciz * scale_in[1]
        ease2, cox, coz = ease2 * scale_out[1], cox * scale_out[1], coz * scale_out[1]
    # Custom handle scale: the start handle's only where it does not join the two curves.
    prev_scale = np.ones(3)
    next_scale = np.ones(3)
    if (bone.prev is not None and not joins_curves(bone.handle_type_start, bone.prev)
            and any((*bone.use_scale_start, bone.use_ease_start))):
        prev_scale = np.asarray(bone.prev.local_scale, dtype=np.float64)
    if bone.next is not None and any((*bone.use_scale_end, bone.use_ease_end)):
        next_scale = np.asarray(bone.next.local_scale, dtype=np.float64)
    for axis in range(3):
        if bone.use_scale_start[axis]:
            scale_in[axis] *= prev_scale[axis]
        if bone.use_scale_end[axis]:
            scale_out[axis] *= next_scale[axis]
    if bone.use_ease_start:
        ease1, cix, ciz = ease1 * prev_scale[1], cix * prev_scale[1], ciz * prev_scale[1]
    if bone.use_ease_end:
        ease2, cox, coz = ease2 * next_scale[1], cox * next_scale[1], coz * next_scale[1]
    return CurveValues(
        segments=min(int(bone.segments), MAX_BBONE_SUBDIV), ease1=ease1, ease2=ease2, roll1=roll1, roll2=roll2,
        scale_in=scale_in, scale_out=scale_out, curve_in_x=cix, curve_in_z=ciz, curve_out_x=cox, curve_out_z=coz)


def segment_scales(segments: int, scale_in: F64, scale_out: F64) -> tuple[F64, F64, F64]:
    """The joints' lengthwise segment scales (S,) and X / Z scales (S + 1,) from the (3,) scale in / out
    (BKE_pchan_bbone_spline_compute)."""
    log_in = np.log(max(scale_in[1], _MIN_SEGMENT_SCALE))
    log_out = np.log(max(scale_out[1], _MIN_SEGMENT_SCALE))
    # One segment has no in/out gradient (Blender never deforms with it; kept finite here).
    fac = np.arange(segments) / max(segments - 1, 1)
    lengthwise = np.exp(fac * log_out + (1.0 - fac) * log_in)
    f = np.arange(segments + 1) / segments
    sx = f * scale_out[0] + (1.0 - f) * scale_in[0]
    sz = f * scale_out[2] + (1.0 - f) * scale_in[2]
    sx[0], sz[0], sx[-1], sz[-1] = scale_in[0], scale_in[2], scale_out[0], scale_out[2]
    return lengthwise, sx, sz


# -- joint matrices, over rows ------------------------------------------------------------


def segment_matrices(pos: F64, axis: F64, roll: F64, sx: F64, sz: F64, scaled: NDArray[np.bool_],
                     scale: F64) -> F64:
    """(N, 4, 4) Blender's make_bbone_spline_matrix over N joints.

    Parameters
    ----------
    pos, axis : (N, 3) float64 the joints' positions and curve tangents
    roll, sx, sz : (N,) float64 their rolls and X / Z scales
    scaled : (N,) bool the joints whose curve was built in scaled space (``do_scale``)
    scale : (N, 3) float64 the pose's scale there (read only where ``scaled``)
    """
    m = np.zeros((len(pos), 4, 4))
    m[:, :3, :3] = vec_roll_to_mat3_rows(axis, roll)
    m[:, :3, 3] = pos
    m[:, 3, 3] = 1.0
    if scaled.any():
        # Back from scaled space: inv(D) m D with D = diag(scale, 1), entry by entry ((1 / s_i) m_ij) s_j.
        s = scale[scaled]
        back = m[scaled]
        back[:, :3, :] *= (1.0 / s)[:, :, None]
        back[:, :, :3] *= s[:, None, :]
        m[scaled] = back
    m[:, :3, 0] *= sx[:, None]
    m[:, :3, 2] *= sz[:, None]
    return m
