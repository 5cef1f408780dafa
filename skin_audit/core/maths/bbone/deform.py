# SPDX-License-Identifier: GPL-3.0-or-later
"""What a posed B-Bone does to the vertices: each joint's armature-space deform matrix
(linear blending) and dual quaternion (Preserve Volume), and a B-Bone's contribution to the
running dual-quaternion sums (armature_deform.cc, b_bone_deform / pchan_deform_accumulate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import ShapeError
from ..affine import affine_inverse, cross
from ..quaternions import blender_matrix_to_quaternion, quaternion_multiply, quaternion_to_matrix
from .spline import _matrix, _norm, _segments

F64 = NDArray[np.float64]

#: mat4_to_dquat treats a matrix as scaled when its axis lengths differ from 1 by this.
_DQ_SCALE = 1e-4
#: ... or when it is not orthonormal to this (Blender: 1.5 * FLT_EPSILON on dot products).
_DQ_ORTHONORMAL = 1.5 * float(np.finfo(np.float32).eps)


def bbone_deform_matrices(rest_bone: ArrayLike, channel: ArrayLike, rest_segments: ArrayLike,
                          pose_segments: ArrayLike) -> F64:
    """Armature-space deform matrix of each joint (Blender's ``bbone_deform_mats[1:]``): one B-Bone
    at one pose, ``bbone_deform_matrices_multi`` with one row.

    Parameters
    ----------
    rest_bone : (4, 4) float64 ``Bone.matrix_local``
    channel : (4, 4) float64 ``PoseBone.matrix @ inv(Bone.matrix_local)``
    rest_segments, pose_segments : (S + 1, 4, 4) float64 joint matrices in bone space

    Returns
    -------
    (S + 1, 4, 4) float64 ``channel @ arm @ pose_seg @ inv(rest_seg) @ inv(arm)``
    """
    chan = _matrix(channel, "channel")
    rest_s = _segments(rest_segments, "rest_segments")
    pose_s = _segments(pose_segments, "pose_segments")
    if rest_s.shape != pose_s.shape:
        raise ShapeError(f"rest_segments {rest_s.shape} and pose_segments {pose_s.shape} differ")
    out: F64 = bbone_deform_matrices_multi([rest_bone], [chan[None]], [rest_s], [pose_s[None]])[0][0]
    return out


def bbone_deform_matrices_multi(rest_bones: Sequence[ArrayLike], channels: Sequence[ArrayLike],
                                rest_segments: Sequence[ArrayLike], pose_segments: Sequence[ArrayLike]) -> list[F64]:
    """``bbone_deform_matrices`` of several B-Bones, each at several poses, in one pass.

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
    strides, and joined this way each part's products are those it gets alone."""
    if all(p.strides[-2] < p.strides[-1] for p in parts):
        out: F64 = np.concatenate([np.swapaxes(p, -1, -2) for p in parts]).swapaxes(-1, -2)
        return out
    return np.concatenate(parts)


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
        base_r[:, :3, :3] = quaternion_to_matrix(blender_matrix_to_quaternion(tmp[:, :3, :3]))
        base_r[:, :3, 3] = base_rs[scaled, :3, 3]
        base_inv = affine_inverse(base[scaled])
        rigid[scaled] = np.einsum("sij,sjk->sik", base_r, base_inv)
        stretch = np.einsum("sij,sjk->sik", affine_inverse(base_r), base_rs[scaled])
        scale[scaled] = np.einsum("sij,sjk,skl->sil", base[scaled], stretch, base_inv)
    real = blender_matrix_to_quaternion(rigid[:, :3, :3])
    t = np.column_stack([np.zeros(n), rigid[:, :3, 3]])
    return SegmentDualQuaternions(real, 0.5 * quaternion_multiply(t, real), scale, scaled)


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
        t += 0.5 * quaternion_multiply(q, np.column_stack([np.zeros(len(p)), d]))
        # vc,vc->v: flip toward the running sum's hemisphere.
        flip = np.einsum("vc,vc->v", r, q) < 0.0
        signed = np.where(on, np.where(flip, -part, part), 0.0)[:, None]
        r = r + signed * q
        t_sum = t_sum + signed * t
    return r, t_sum

