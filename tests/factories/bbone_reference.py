# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bone references the product does not use, kept to test it.

- The one-B-Bone curve, Blender's functions one call at a time (armature.cc:
  ``BKE_pchan_bbone_spline_params_get`` as ``spline_parameters``, ``BKE_pchan_bbone_handles_compute``
  as ``spline_handles``, ``BKE_pchan_bbone_spline_compute`` and ``make_bbone_spline_matrix`` as
  ``spline_matrices``), rest and posed (``bbone_segment_matrices``): the rest joints of the records
  built in numpy, and through ``one_pose_segments`` the reference the product's batched pass is
  compared with, within a tolerance.  It shares the product's row helpers (the Bezier curve and
  its arc-length spacing, the segments' lengthwise scales, ``vec_roll_to_mat3`` and the roll, the
  circle factor, the eased end axes), not its curve values, handle points, pose scale or joint
  matrices.
- One B-Bone's deform matrices at one and at many poses in their own products
  (``bbone_deform_matrices_one`` / ``_many``, against the product's many-B-Bone pass).
- The per-vertex matrix of linear blending and Blender's dual-quaternion transform of points
  (``vertex_matrices``, ``dual_transform``: the truth the audit's own sums are checked against).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.core.errors import ShapeError
from skin_audit.core.maths import bbone as bb
from skin_audit.core.maths.affine import affine_inverse
from skin_audit.core.maths.bbone.spline import (
    MAX_BBONE_SUBDIV,
    NO_POSE_SHAPE,
    BBoneShape,
    BBoneSpline,
    _matrix,
    bezier_rows,
    circle_tangent_factors,
    ease_axes,
    equalize_rows,
    rolls,
    segment_scales,
    vec_roll_to_mat3_rows,
)
from skin_audit.core.maths.quaternions import scaled_rotation_matrix

F64 = NDArray[np.float64]

# Blender's thresholds (armature.cc), as the C source has them.
#: Non-uniform pose scale switches the spline to scaled space above this.
NONUNIFORM_SCALE = 1e-6
#: A handle shorter than this fraction of the bone length falls back to the bone axis.
HANDLE_EPSILON = 1e-5


# ---------------------------------------------------------------- the one-B-Bone curve


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


def _apply(m: F64, p: F64) -> F64:
    out: F64 = m[:3, :3] @ p + m[:3, 3]
    return out


def mat3_vec_to_roll(mat: ArrayLike, vec: ArrayLike) -> float:
    """Roll of ``mat`` about ``vec``: the twist about Y of ``inv(vec_roll_to_mat3(vec, 0)) @ mat``."""
    m = np.asarray(mat, dtype=np.float64)[:3, :3]
    return float(rolls(m[None], np.asarray(vec, dtype=np.float64)[None])[0])


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
        if abs(s[0] - s[1]) > NONUNIFORM_SCALE or abs(s[1] - s[2]) > NONUNIFORM_SCALE:
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
    epsilon = HANDLE_EPSILON * length
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
    lengthwise, sx, sz = segment_scales(params.segments, params.scale_in, params.scale_out)
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


# ---------------------------------------------------------------- the records' curves, deform matrices, points




def forget_curves(*records: bb.RigBBone | None) -> None:
    """Empty the records' memos of posed curves (the next call computes them afresh)."""
    for record in records:
        if record is not None:
            record.posed.clear()


def rig_pose_segments_many(rig_bbone: bb.RigBBone, bone: int, channels: ArrayLike, rest: ArrayLike,
                           at: bb.BBonePose | None = None) -> F64:
    """(P, S + 1, 4, 4) ``rig_pose_segments`` at each of P armature poses: the product's
    ``rig_pose_segments_multi`` with one B-Bone."""
    chan = np.asarray(channels, dtype=np.float64)
    return bb.rig_pose_segments_multi([(rig_bbone, bone, np.arange(len(chan)), at)], chan, rest)[0]


def one_pose_segments(rig_bbone: bb.RigBBone, bone: int, channel: ArrayLike, rest: ArrayLike,
                      at: bb.BBonePose | None = None) -> F64:
    """(S + 1, 4, 4) a rig's B-Bone at one armature pose through the one-B-Bone curve
    (``spline_parameters`` and ``spline_matrices``), never the batched pass: Blender's joints
    where ``at`` read them at this pose, else the curve from the posed handles with ``at``'s
    pose properties (rest ones for None)."""
    chan = np.asarray(channel, dtype=np.float64)
    rst = np.asarray(rest, dtype=np.float64)
    at = bb.AT_REST_SHAPE if at is None else at
    used = [(slot, k) for slot, k in enumerate((bone, rig_bbone.prev_bone, rig_bbone.next_bone)) if k >= 0]
    if at.joints is not None and at.read_at is not None and all(
            np.array_equal(chan[k], at.read_at[slot]) for slot, k in used):
        return at.joints

    def pose(k: int) -> F64 | None:
        return None if k < 0 else chan[k] @ rst[k]

    spline = posed_spline(rig_bbone.spline, pose(rig_bbone.prev_bone), pose(rig_bbone.next_bone))
    return spline_matrices(spline_parameters(spline, rest=False, pose=chan[bone] @ rst[bone], pose_shape=at.shape))


def bbone_deform_matrices_one(rest_bone: ArrayLike, channel: ArrayLike, rest_segments: ArrayLike,
                              pose_segments: ArrayLike) -> F64:
    """``bbone_deform_matrices`` of one B-Bone at one pose, in its own products."""
    arm = np.asarray(rest_bone, dtype=np.float64)
    local = np.einsum("sij,sjk->sik", np.asarray(pose_segments, dtype=np.float64),
                      affine_inverse(np.asarray(rest_segments, dtype=np.float64)))
    out: F64 = (np.asarray(channel, dtype=np.float64) @ arm) @ local @ affine_inverse(arm)
    return out


def bbone_deform_matrices_many(rest_bone: ArrayLike, channels: ArrayLike, rest_segments: ArrayLike,
                               pose_segments: ArrayLike) -> F64:
    """``bbone_deform_matrices`` at P poses of one B-Bone, in its own products: (P, 4, 4)
    channels, (P, S + 1, 4, 4) posed joints -> (P, S + 1, 4, 4)."""
    arm = np.asarray(rest_bone, dtype=np.float64)
    chan = np.asarray(channels, dtype=np.float64)
    rest_s = np.asarray(rest_segments, dtype=np.float64)
    pose_s = np.asarray(pose_segments, dtype=np.float64)
    if pose_s.shape[1:] != rest_s.shape or chan.shape != (len(pose_s), 4, 4):
        raise ShapeError(f"pose_segments {pose_s.shape} and channels {chan.shape} do not match "
                         f"rest_segments {rest_s.shape}")
    out: F64 = (chan @ arm)[:, None] @ (pose_s @ affine_inverse(rest_s)) @ affine_inverse(arm)
    return out


def vertex_matrices(co_armature: ArrayLike, bone: bb.BBoneSpline, channel: ArrayLike,
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
    index, blend = bb.vertex_segments(co_armature, bone, rest_segments)
    deform = bb.bbone_deform_matrices(bone.rest, channel, rest_segments, pose_segments)
    return bb.blended_segment_matrices(index, blend, deform)



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
    rot = scaled_rotation_matrix(q)
    tr = 2.0 * np.column_stack([-t0 * x + w * t1 - t2 * z + y * t3,
                                -t0 * y + t1 * z - x * t3 + w * t2,
                                -t0 * z + x * t2 + w * t3 - t1 * y])
    # vij,vj->vi: the blended (unnormalised) rotation applied to each point.
    out: F64 = (np.einsum("vij,vj->vi", rot, p) + tr) / np.sum(q * q, axis=1)[:, None]
    return out

