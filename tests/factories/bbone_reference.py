# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bone references the product does not use, kept to test it: one B-Bone's deform matrices at
many poses in its own products (``bbone_deform_matrices_many``, against the product's
many-B-Bone pass), the per-vertex matrix of linear blending and Blender's dual-quaternion
transform of points (``vertex_matrices``, ``dual_transform``: the truth the audit's own
sums are checked against), and one B-Bone's curves at one pose through the one-B-Bone curve
(``one_pose_segments``: the reference the batched pass is compared with, within a tolerance).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.core.errors import ShapeError
from skin_audit.core.maths import bbone as bb
from skin_audit.core.maths.affine import affine_inverse
from skin_audit.core.maths.quaternions import scaled_rotation_matrix

F64 = NDArray[np.float64]


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

    spline = bb.posed_spline(rig_bbone.spline, pose(rig_bbone.prev_bone), pose(rig_bbone.next_bone))
    return bb.spline_matrices(bb.spline_parameters(spline, rest=False, pose=chan[bone] @ rst[bone],
                                                   pose_shape=at.shape))


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

