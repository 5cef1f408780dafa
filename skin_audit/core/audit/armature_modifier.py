# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's Armature modifier recomputed in numpy.

Blender (armature_deform.cc, 4.2 - 5.0), per vertex in armature space:
``co' = co + a * sum_j w_j (M_j co - co) / sum_j w_j`` over groups naming a
bone with Deform on, exact-zero weights skipped; nothing moves when the sum
is <= 1e-4; ``a`` is the modifier's mask weight.  Preserve Volume blends dual
quaternions with each bone's scale folded in at the vertex and the sign taken
against the running sum.

What engines draw instead is each engine target's model (``core/engines``, through
``core/audit/engine_target``): an exporter, then the runtime's weight rules.

Work is done group by group over each group's non-zero vertices, so the cost
follows the number of weights, not vertices x bones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths import bbone as bb
from ..maths.affine import apply_affine
from ..maths.bone_runs import blend_runs, blend_runs_many, select_runs
from ..maths.dense_blend import MAX_GROUPS, blend_dense
from ..maths.quaternions import (
    matrix_to_quaternion,
    quaternion_multiply,
    quaternion_to_matrix,
    scaled_rotation_matrix,
)
from .pose import Pose
from .skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]


def _orthogonalize_keep_y(m: F64) -> F64:
    """Blender's orthogonalize_m4(m, axis=1): keep the Y column's direction, keep column lengths."""
    lengths = np.linalg.norm(m[:3, :3], axis=0)
    c0, c1 = m[:3, 0], _normalize(m[:3, 1])
    c2 = _normalize(np.cross(c0, c1))
    c0 = np.cross(c1, c2)
    out = m.copy()
    out[:3, 0], out[:3, 1], out[:3, 2] = c0 * lengths[0], c1 * lengths[1], c2 * lengths[2]
    return out


def _normalize(v: F64) -> F64:
    """Blender's normalize_v3: a vector too short to normalise becomes zero (a bone scaled to 0
    then yields the identity rotation, as in Blender, instead of NaN)."""
    n = float(np.linalg.norm(v))
    return v / n if n > tolerances.DIVISION_GUARD else np.zeros_like(v)


def _rotation_of(m: F64) -> F64:
    """Unit quaternion of a 3x3 with normalised columns (reflections negated as Blender does)."""
    r = np.column_stack([_normalize(m[:3, k]) for k in range(3)])
    if np.linalg.det(r) < 0:
        r = -r
    return matrix_to_quaternion(r)


@dataclass(frozen=True)
class BoneDualQuaternion:
    real: F64  # (4,)
    trans: F64  # (4,) 0.5 (0, t) q
    scale: F64 | None  # (4, 4) scale/shear part folded in at the vertex, or None


def blender_dual_quaternion(rest: F64, channel: F64) -> BoneDualQuaternion:
    """Blender's mat4_to_dquat(basemat = rest, mat = channel), scale split off when present."""
    base_rs = channel @ rest
    dscale = np.linalg.norm(base_rs[:3, :3], axis=0) - 1.0
    r3 = channel[:3, :3]
    gram = r3.T @ r3
    orthonormal = bool(np.abs(gram - np.eye(3)).max() <= tolerances.ORTHONORMAL_FLOAT32)
    scale = None
    rigid = channel
    if not orthonormal or np.linalg.det(r3) < 0 or float(dscale @ dscale) > tolerances.DQ_SCALE_SQUARED:
        tmp = _orthogonalize_keep_y(base_rs)
        q = _rotation_of(tmp)
        base_r = np.eye(4)
        base_r[:3, :3] = quaternion_to_matrix(q)
        base_r[:3, 3] = base_rs[:3, 3]
        rigid = base_r @ np.linalg.inv(rest)
        scale = rest @ (np.linalg.inv(base_r) @ base_rs) @ np.linalg.inv(rest)
    q = _rotation_of(rigid)
    t = np.concatenate([[0.0], rigid[:3, 3]])
    return BoneDualQuaternion(q, 0.5 * quaternion_multiply(t, q), scale)


@dataclass(frozen=True)
class DualAccumulation:
    real: F64  # (V, 4)
    trans: F64  # (V, 4)
    contrib: F64  # (V,)
    #: Vertices whose result may depend on Blender's storage order of weights
    #: (three or more influences with a sign flip against the running sum).
    order_sensitive: NDArray[np.bool_]


def accumulate_dual(mesh: SkinnedMesh, pose: Pose) -> DualAccumulation:
    """Blender's add_weighted_dq_dq_pivot over the mesh's deform columns at ``pose``, in group order,
    at its rest positions in armature space."""
    co, columns = mesh.rest_armature, mesh.deform_columns
    v = len(co)
    real = np.zeros((v, 4))
    trans = np.zeros((v, 4))
    contrib = np.zeros(v)
    count = np.zeros(v, dtype=np.intp)
    flipped = np.zeros(v, dtype=bool)
    cache: dict[int, BoneDualQuaternion] = {}
    deforms = _bbone_deforms(mesh, [bone for bone, _, _ in columns], pose)
    for bone, idx, w in columns:
        if bone in deforms:
            # A B-Bone adds two joints' dual quaternions per vertex (armature_deform.cc, b_bone_deform).
            quats = bb.segment_dual_quaternions(mesh.bones.rest[bone], deforms[bone][0].rest_segments,
                                                deforms[bone][1])
            index, blend = mesh.bbone_mapping[bone]
            # vc,vc->v: whether either joint falls in the other hemisphere of the running sum.
            flip = ((np.einsum("vc,vc->v", real[idx], quats.real[index]) < 0.0)
                    | (np.einsum("vc,vc->v", real[idx], quats.real[index + 1]) < 0.0))
            real[idx], trans[idx] = bb.accumulate_bbone_dual(real[idx], trans[idx], co[idx], w, index, blend, quats)
            contrib[idx] += w
            flipped[idx] |= flip
            count[idx] += 1
            continue
        dq = cache.get(bone) or cache.setdefault(
            bone, blender_dual_quaternion(mesh.bones.rest[bone], pose.channel[bone]))
        q = np.broadcast_to(dq.real, (len(idx), 4))
        t = np.broadcast_to(dq.trans, (len(idx), 4)).copy()
        if dq.scale is not None:
            # Fold this bone's scale/shear in at the vertex: t += 0.5 q (0, S co - co).
            d = apply_affine(dq.scale, co[idx]) - co[idx]
            t += 0.5 * quaternion_multiply(q, np.column_stack([np.zeros(len(idx)), d]))
        # vc,c->v: sign of each vertex's running sum against this bone's rotation.
        flip = np.einsum("vc,c->v", real[idx], dq.real) < 0.0
        s = np.where(flip, -w, w)
        real[idx] += s[:, None] * q
        trans[idx] += s[:, None] * t
        contrib[idx] += w
        flipped[idx] |= flip
        count[idx] += 1
    return DualAccumulation(real, trans, contrib, flipped & (count >= 3))


def _rig_bbone(mesh: SkinnedMesh, bone: int) -> bb.RigBBone | None:
    """The bone's B-Bone record (None for a plain bone, or when B-Bones were not read)."""
    bbones = mesh.bones.bbones
    return bbones[bone] if bbones else None


def _bbone_deforms(mesh: SkinnedMesh, bones: Sequence[int], pose: Pose) -> dict[int, tuple[bb.RigBBone, F64]]:
    """Each B-Bone of ``bones``: its record and its joints' armature-space deform matrices at
    ``pose``, every curve in one pass (each B-Bone's bits as alone)."""
    found = {bone: rb for bone in bones if (rb := _rig_bbone(mesh, bone)) is not None}
    if not found:
        return {}
    at = np.zeros(1, dtype=np.intp)
    requests: list[bb.SegmentsRequest] = [(rb, bone, at, pose.bbone(bone)) for bone, rb in found.items()]
    channel = pose.channel
    segments = bb.rig_pose_segments_multi(requests, channel[None], mesh.bones.rest)
    deform = bb.bbone_deform_matrices_multi([mesh.bones.rest[bone] for bone in found],
                                            [channel[bone][None] for bone in found],
                                            [rb.rest_segments for rb in found.values()], segments)
    return {bone: (rb, d[0]) for (bone, rb), d in zip(found.items(), deform, strict=True)}


def joint_matrices(mesh: SkinnedMesh, poses: Sequence[Pose]) -> list[tuple[F64, NDArray[np.bool_]]]:
    """Per pose of ``poses``: the armature-space deform matrix of every B-Bone joint of
    ``mesh.blend_layout`` (X, 4, 4), and whether each moves.

    The curves of every B-Bone at every pose are computed together (``rig_pose_segments_multi``).
    A B-Bone a pose leaves at rest (itself and its handles at the identity, no pose shape: its
    segments are its rest segments) has the identity at every joint there, and does not move."""
    channels = np.stack([p.channel for p in poses]) if poses else np.zeros((0, len(mesh.bones.names), 4, 4))
    layout = mesh.blend_layout
    bbones = [(bone, first, _rig_bbone(mesh, bone)) for bone, first in layout.joints.items()]
    count = sum(len(rb.rest_segments) for _, _, rb in bbones if rb is not None)
    out = [(np.empty((count, 4, 4)), np.zeros(count, dtype=bool)) for _ in channels]
    first_joint = len(mesh.bones.names)
    identity = np.all(channels == np.eye(4), axis=(2, 3))  # (P, J)
    # The poses grouped by their B-Bone pose properties (usually one group: the test poses, or the
    # frames of an action); within a group every B-Bone's curves are asked for together.
    groups: dict[int, list[int]] = {}
    for k, pose in enumerate(poses):
        groups.setdefault(id(pose.bbones), []).append(k)
    by_properties = [(poses[ks[0]], np.array(ks, dtype=np.intp)) for ks in groups.values()]
    requests: list[bb.SegmentsRequest] = []
    asked: list[tuple[slice, NDArray[np.intp], int]] = []  # each request's joints, poses and bone
    for bone, first, rb in bbones:
        assert rb is not None
        at = slice(first - first_joint, first - first_joint + len(rb.rest_segments))
        ends = [k for k in (bone, rb.prev_bone, rb.next_bone) if k >= 0]
        for example, ks in by_properties:
            at_pose = example.bbone(bone)
            at_rest = identity[ks][:, ends].all(axis=1) & (at_pose.shape == bb.NO_POSE_SHAPE)
            for k in ks[at_rest].tolist():
                out[k][0][at] = np.eye(4)
            if not at_rest.all():
                requests.append((rb, bone, ks[~at_rest], at_pose))
                asked.append((at, ks[~at_rest], bone))
    segments = bb.rig_pose_segments_multi(requests, channels, mesh.bones.rest)
    deform = bb.bbone_deform_matrices_multi([mesh.bones.rest[bone] for _, bone, _, _ in requests],
                                            [channels[rows, bone] for _, rows, bone in asked],
                                            [rb.rest_segments for rb, _, _, _ in requests], segments)
    for (at, rows, _), d_bone in zip(asked, deform, strict=True):
        for k, d in zip(rows.tolist(), d_bone, strict=True):
            out[k][0][at] = d
            out[k][1][at] = True
    return out


def finish_dual(co: F64, acc: DualAccumulation, factor: F64) -> F64:
    """Blender's normalize_dq + mul_v3m3_dq, the 1e-4 rule and the mask blend (armature space)."""
    moved = acc.contrib > tolerances.BLENDER_MIN_CONTRIB
    out = co.copy()
    if not moved.any():
        return out
    q = acc.real[moved]
    t = acc.trans[moved]
    p = co[moved]
    w, x, y, z = q.T
    t0, t1, t2, t3 = t.T
    rot = scaled_rotation_matrix(q)
    tr = 2.0 * np.column_stack([
        -t0 * x + w * t1 - t2 * z + y * t3,
        -t0 * y + t1 * z - x * t3 + w * t2,
        -t0 * z + x * t2 + w * t3 - t1 * y,
    ])
    # vij,vj->vi: the blended (unnormalised) rotation applied to each point.
    dq_co = (np.einsum("vij,vj->vi", rot, p) + tr) / np.sum(q * q, axis=1)[:, None]
    a = factor[moved][:, None]
    out[moved] = p + (dq_co - p) * a
    return out


@dataclass(frozen=True)
class Recomputed:
    """The numpy recomputation of one Armature modifier, in mesh object space."""

    positions: F64  # (V, 3)
    contrib: F64  # (V,) sum of deform weights
    influences: NDArray[np.intp]  # (V,)
    order_sensitive: NDArray[np.bool_]  # (V,)


def to_armature(mesh: SkinnedMesh) -> F64:
    """(V, 3) rest positions in armature space."""
    return mesh.rest_armature


def has_bbones(mesh: SkinnedMesh) -> bool:
    """Whether any bone of the mesh's armature is a B-Bone read with its segments."""
    return any(b is not None for b in mesh.bones.bbones)


def recompute_blender(mesh: SkinnedMesh, pose: Pose, *, build_layout: bool = False) -> Recomputed:
    """Blender's deformation of ``mesh`` at ``pose``, object space.

    Linear blending runs in the mesh's object space with the conjugated
    matrices ``P^-1 M_j P`` (exact: the blend is affine in the matrices and
    Blender divides by the weight sum), so no point goes to armature space and
    back; the weights are grouped by bone (``core/maths/bone_runs``), Blender's
    ``a / sum w`` folded into them once per mesh.  Preserve Volume blends dual
    quaternions in armature space.

    That layout pays from the second pose on.  Until a mesh has it, one pose of a mesh with few
    groups and no B-Bones blends by one dense product over its (G, V) weights instead
    (``core/maths/dense_blend``), unless ``build_layout`` asks for the layout (a caller that will
    blend more poses, as the audit does).
    """
    if not build_layout and not mesh.has_blend_layout():
        dense = _recompute_dense(mesh, pose.channel)
        if dense is not None:
            return dense
    (out,) = _recompute(mesh, [pose], [None])
    return out


def _recompute_dense(mesh: SkinnedMesh, channel: F64) -> Recomputed | None:
    """``recompute_blender`` by ``blend_dense``, or None where the layout's runs are the way: the
    modifier does not blend linearly by groups, too many groups, a deform B-Bone, or a non-finite
    deform matrix (the dense product would spread it to every vertex)."""
    if not mesh.modifier.use_vertex_groups or mesh.modifier.preserve_volume:
        return None
    groups = mesh.deform_groups()
    rows = np.flatnonzero(groups >= 0)
    bbones = mesh.bones.bbones
    if len(rows) > MAX_GROUPS or (bbones and any(bbones[b] is not None for b in groups[rows].tolist())):
        return None
    displacement = _displacements(mesh, channel[groups[rows]])
    if not np.isfinite(displacement).all():
        return None
    positions, contrib, count = blend_dense(mesh.weights, rows, displacement, mesh.rest, mesh.mask,
                                            tolerances.BLENDER_MIN_CONTRIB)
    return Recomputed(positions, contrib, count, np.zeros(mesh.vertex_count, dtype=bool))


def _displacements(mesh: SkinnedMesh, matrices: F64) -> F64:
    """(J, 3, 4) ``P^-1 M P - I`` of armature-space deform matrices ``matrices``: what each adds to
    a point in the mesh's space (the blend sums displacements, so an unweighted vertex stays put)."""
    out: F64 = (mesh.armature_to_mesh @ matrices @ mesh.mesh_to_armature)[:, :3, :] - np.eye(4)[:3]
    return out


def recompute_blender_many(mesh: SkinnedMesh, poses: Sequence[Pose],
                           joints: Sequence[tuple[F64, NDArray[np.bool_]]] | None = None) -> list[Recomputed]:
    """``recompute_blender`` at each of ``poses``, the B-Bones' curves of every pose computed
    together (a rig's B-Bones cost more per pose than its plain bones); ``joints``: those curves'
    ``joint_matrices`` when the caller has them already."""
    at_joints: list[tuple[F64, NDArray[np.bool_]] | None] = [None] * len(poses)
    if joints is not None:
        at_joints = list(joints)
    elif poses and mesh.modifier.use_vertex_groups and not mesh.modifier.preserve_volume and has_bbones(mesh):
        at_joints = list(joint_matrices(mesh, poses))
    return _recompute(mesh, poses, at_joints)


def _recompute(mesh: SkinnedMesh, poses: Sequence[Pose],
               joints: Sequence[tuple[F64, NDArray[np.bool_]] | None]) -> list[Recomputed]:
    """``recompute_blender`` at each of ``poses``; ``joints`` their B-Bone joints' matrices when
    computed.  Poses that blend every run of the layout go through one ``blend_runs_many``."""
    flat = mesh.flat_columns
    co = mesh.rest
    back = mesh.armature_to_mesh
    none_sensitive = np.zeros(mesh.vertex_count, dtype=bool)
    sensitive = [none_sensitive] * len(poses)
    out: list[F64 | None] = [None] * len(poses)
    if not mesh.modifier.use_vertex_groups:
        # Blender ignores the groups: only envelopes (not reproduced) could move the mesh.
        out = [co.copy() for _ in poses]
    elif mesh.modifier.preserve_volume:
        arm_co = mesh.rest_armature
        for k, pose in enumerate(poses):
            dual = accumulate_dual(mesh, pose)
            out[k] = apply_affine(back, finish_dual(arm_co, dual, mesh.mask))
            sensitive[k] = dual.order_sensitive
    else:
        _blend_linear(mesh, poses, joints, out)
    done = [positions for positions in out if positions is not None]
    assert len(done) == len(poses)
    return [Recomputed(positions, flat.contrib, flat.count, order)
            for positions, order in zip(done, sensitive, strict=True)]


#: Bytes of products one ``blend_runs_many`` holds at most: poses beyond wait for the next batch
#: (a million-vertex rig blends one pose at a time; its per-run overhead is small anyway).
BATCH_BYTES = 64 << 20


def _blend_linear(mesh: SkinnedMesh, poses: Sequence[Pose],
                  joints: Sequence[tuple[F64, NDArray[np.bool_]] | None], out: list[F64 | None]) -> None:
    """The linear blend of ``_recompute`` at each pose, written into ``out``."""
    layout = mesh.blend_layout
    runs, scaled, gathered = layout.runs, layout.scaled, layout.gathered
    lengths = np.diff(runs.starts)
    every_weight_finite = bool(np.isfinite(scaled).all())
    whole: list[tuple[int, F64]] = []
    for k, (pose, at_joints) in enumerate(zip(poses, joints, strict=True)):
        channel = pose.channel
        # Bones at rest (channel exactly the identity) add nothing: P^-1 I P - I is zero up to rounding.
        moving = np.any(channel != np.eye(4), axis=(1, 2))
        matrices = channel
        if layout.joints:
            # B-Bones blend their joints' matrices: runs numbered after the bones.
            at, joint_moving = at_joints if at_joints is not None else joint_matrices(mesh, [pose])[0]
            matrices = np.concatenate([channel, at])
            moving = np.concatenate([moving, joint_moving])
        displacement = _displacements(mesh, matrices)
        moving = moving[runs.bone]
        # (A NaN weight on a bone at rest still reaches its vertex: every run is blended then.)
        if lengths[moving].sum() < tolerances.BLEND_MOVING_SHARE * lengths.sum() and every_weight_finite:
            # A test pose turning one bone: only its subtree's weights are blended.
            sub, (sub_scaled, sub_gathered) = select_runs(runs, moving, scaled, gathered)
            out[k] = blend_runs(sub, sub_gathered, displacement, sub_scaled, add_to=mesh.rest.copy())
        else:
            whole.append((k, displacement))
    per_batch = max(1, BATCH_BYTES // max(24 * int(runs.starts[-1]), 1))
    for first in range(0, len(whole), per_batch):
        batch = whole[first:first + per_batch]
        blended = blend_runs_many(runs, gathered, np.stack([d for _, d in batch]), scaled,
                                  add_to=[mesh.rest.copy() for _ in batch])
        for (k, _), positions in zip(batch, blended, strict=True):
            out[k] = positions

