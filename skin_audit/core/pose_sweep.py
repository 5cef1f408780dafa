# SPDX-License-Identifier: GPL-3.0-or-later
"""Extreme test poses per bone, evaluated in numpy from the rest matrices and
the hierarchy (never by posing the user's armature), with the LBS and DQS
squash measures of every vertex they affect.

Only vertices blending bones that move differently under a pose (the posed
bone's subtree against the rest of the rig, or a branch that does not inherit
rotation) can lose shape; the others move rigidly, so the sweep computes the
blending ones alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from . import tolerances
from .affine import rotation
from .blender_deform import accumulate_dual, group_columns, to_armature
from .collapse import Columns, blended_linear, dqs_rotation_measures, squash_measures
from .rig_data import SkinnedMesh
from .stress_poses import posed_channels

F64 = NDArray[np.float64]

#: Twist first, so where a bend and a twist squash a vertex equally the twist is named.
AXES = ("y", "x", "z")
#: Blender bones point along local Y: turning about Y is a twist, about X or Z a bend.
KIND = {"x": "bend", "y": "twist", "z": "bend"}


@dataclass(frozen=True)
class SweepPose:
    """One bone turned about one of its own axes from the rest pose."""

    bone: int
    axis: str
    degrees: float
    source: str  # 'default' or 'limit'

    def label(self, names: Sequence[str]) -> str:
        return f"{names[self.bone]} {KIND[self.axis]} {self.axis.upper()} {self.degrees:+g} deg"


@dataclass(frozen=True)
class SweepResult:
    poses: tuple[SweepPose, ...]
    #: Worst (smallest) LBS singular value and determinant per vertex over all poses, and which pose.
    smallest: F64  # (V,)
    det: F64  # (V,)
    worst_pose: NDArray[np.intp]  # (V,) index into poses, -1 where no pose changed the vertex
    det_pose: NDArray[np.intp]  # (V,)
    #: The same under DQS at the pose where LBS was worst.
    dqs_smallest: F64  # (V,)
    #: Worst values over the moderate poses only: |angle| <= 90 degrees or the rig's own limits.
    moderate_smallest: F64  # (V,)
    moderate_det: F64  # (V,)
    moderate_pose: NDArray[np.intp]  # (V,) pose of moderate_smallest, -1 where none
    moderate_det_pose: NDArray[np.intp]  # (V,)
    #: Worst LBS value per bone (over that bone's poses), by bone index.
    per_bone: dict[int, float]


def sweep_poses(mesh: SkinnedMesh, degrees: Sequence[float]) -> list[SweepPose]:
    """Every weighted deform bone, about each axis, both ways, by ``degrees`` and its own limits."""
    used = {b for b, _, _ in group_columns(mesh)}
    poses = []
    for j in sorted(used):
        limits = mesh.bones.limits[j] if mesh.bones.limits else (None, None, None)
        for axis in AXES:
            angles = {(float(s * d), "default") for d in degrees for s in (1.0, -1.0)}
            limit = limits["xyz".index(axis)]  # limits are stored x, y, z
            if limit is not None:
                lo, hi = limit
                angles |= {(float(np.degrees(v)), "limit") for v in (lo, hi) if abs(v) > 1e-6}
            poses += [SweepPose(j, axis, deg, src) for deg, src in sorted(angles)]
    return poses


def is_moderate(pose: SweepPose) -> bool:
    """A pose a rig should survive: within 90 degrees, or at the rig's own limit."""
    return pose.source == "limit" or abs(pose.degrees) <= 90.0 + 1e-9


def pose_channel(mesh: SkinnedMesh, pose: SweepPose) -> F64:
    """(J, 4, 4) skinning matrices with only ``pose.bone`` turned, through the hierarchy."""
    local = np.broadcast_to(np.eye(4), mesh.bones.rest.shape).copy()
    local[pose.bone] = rotation(pose.axis, np.radians(pose.degrees))
    return posed_channels(mesh.bones, local)


def _keep_lower(best: F64, best_pose: NDArray[np.intp], index: NDArray[np.intp], values: F64,
                pose: int) -> NDArray[np.bool_]:
    """Where ``values`` beat ``best`` at ``index``: store them and the pose; return that mask."""
    lower: NDArray[np.bool_] = values < best[index]
    best[index[lower]] = values[lower]
    best_pose[index[lower]] = pose
    return lower


def _restrict(columns: Columns, keep: NDArray[np.bool_]) -> Columns:
    out = []
    for bone, idx, w in columns:
        sel = keep[idx]
        if sel.any():
            out.append((bone, idx[sel], w[sel]))
    return out


def run_sweep(mesh: SkinnedMesh, degrees: Sequence[float] = (90.0, 180.0)) -> SweepResult:
    """Evaluate every sweep pose; keep each vertex's worst LBS squash and the pose responsible."""
    columns = group_columns(mesh)
    v = mesh.vertex_count
    poses = sweep_poses(mesh, degrees)
    smallest = np.ones(v)
    det = np.ones(v)
    worst = np.full(v, -1, dtype=np.intp)
    det_pose = np.full(v, -1, dtype=np.intp)
    dqs_smallest = np.ones(v)
    moderate_smallest = np.ones(v)
    moderate_det = np.ones(v)
    moderate_pose = np.full(v, -1, dtype=np.intp)
    moderate_det_pose = np.full(v, -1, dtype=np.intp)
    per_bone: dict[int, float] = {}
    co = to_armature(mesh)
    by_bone: dict[int, list[int]] = {}
    for k, p in enumerate(poses):
        by_bone.setdefault(p.bone, []).append(k)
    flat_bone = np.concatenate([np.full(len(idx), b, dtype=np.intp) for b, idx, _ in columns] or [np.zeros(0, int)])
    flat_vertex = np.concatenate([idx for _, idx, _ in columns] or [np.zeros(0, int)])
    flat_weight = np.concatenate([w for _, _, w in columns] or [np.zeros(0)])
    for bone, pose_ids in by_bone.items():
        # Bones that move alike under this bone's poses form one class (the rest of the rig, the
        # subtree that inherits its rotation, each non-inheriting branch...); only vertices
        # weighted to two or more classes can change shape.
        channel0 = pose_channel(mesh, poses[pose_ids[0]])
        _, motion_class = np.unique(np.round(channel0.reshape(len(channel0), 16), 9), axis=0, return_inverse=True)
        motion_class = motion_class.reshape(-1)
        n_cls = int(motion_class.max()) + 1
        class_weight = np.bincount(motion_class[flat_bone] * v + flat_vertex, weights=flat_weight,
                                   minlength=n_cls * v).reshape(n_cls, v)
        hit = class_weight > 0.0
        n_hit = hit.sum(axis=0)
        index = np.flatnonzero(n_hit >= 2)
        if index.size == 0:
            per_bone[bone] = 1.0
            continue
        rep = np.array([np.flatnonzero(motion_class == c)[0] for c in range(n_cls)])
        rigid = bool(np.abs(np.einsum("cji,cjk->cik", channel0[rep, :3, :3], channel0[rep, :3, :3])
                            - np.eye(3)).max() <= tolerances.ORTHONORMAL_FLOAT32)
        # Two rigid motions blended with fractions (1 - s, s): the blended 3x3 is R_a ((1-s) I + s Q)
        # with Q = R_a^T R_b, whose singular values are 1 and sqrt(1 - 4 s (1-s) sin^2(phi/2)) twice
        # (phi the angle of Q), exactly; its determinant is the square.  Three or more motions
        # (or non-rigid ones) take the general path: blend the matrices, then an SVD.
        pair = (n_hit[index] == 2) if rigid else np.zeros(index.size, dtype=bool)
        pair_index, many_index = index[pair], index[~pair]
        a = np.argmax(hit[:, pair_index], axis=0)
        b = n_cls - 1 - np.argmax(hit[::-1, pair_index], axis=0)
        wa, wb = class_weight[a, pair_index], class_weight[b, pair_index]
        frac = wb / (wa + wb)
        spread = 4.0 * frac * (1.0 - frac)
        local_cols = []
        if many_index.size:
            remap = np.full(v, -1, dtype=np.intp)
            remap[many_index] = np.arange(many_index.size)
            keep = np.zeros(v, dtype=bool)
            keep[many_index] = True
            local_cols = [(bb, remap[idx], w) for bb, idx, w in _restrict(columns, keep)]
        order = np.concatenate([pair_index, many_index])
        bone_worst = 1.0
        for k in pose_ids:
            channel = pose_channel(mesh, poses[k])
            rot = channel[rep, :3, :3]
            # aji,bjk->abik: R_a^T R_b for every pair of classes; its trace gives cos(phi).
            rel = np.einsum("aji,bjk->abik", rot, rot)
            cos_phi = (np.trace(rel, axis1=2, axis2=3) - 1.0) / 2.0
            half_sin2 = np.clip((1.0 - cos_phi[a, b]) / 2.0, 0.0, 1.0)
            d_pair = 1.0 - spread * half_sin2
            s_pair = np.sqrt(np.maximum(d_pair, 0.0))
            s_many, d_many = np.ones(0), np.ones(0)
            if many_index.size:
                linear, contrib = blended_linear(local_cols, channel, many_index.size)
                s_many, d_many = squash_measures(linear, contrib)
            s_all = np.concatenate([s_pair, s_many])
            d_all = np.concatenate([d_pair, d_many])
            better = _keep_lower(smallest, worst, order, s_all, k)
            _keep_lower(det, det_pose, order, d_all, k)
            bone_worst = min(bone_worst, float(s_all.min()))
            if is_moderate(poses[k]):
                _keep_lower(moderate_smallest, moderate_pose, order, s_all, k)
                _keep_lower(moderate_det, moderate_det_pose, order, d_all, k)
            # DQS of two rigid motions is a rigid motion: 1.  Otherwise blend and measure.
            dqs_smallest[pair_index[better[:pair_index.size]]] = 1.0
            better_many = better[pair_index.size:]
            if better_many.any():
                posed = replace(mesh, bones=replace(mesh.bones, channel=channel))
                dual = accumulate_dual(co[many_index], local_cols, posed)
                dqs_smallest[many_index[better_many]] = dqs_rotation_measures(dual.real[better_many])[0]
        per_bone[bone] = bone_worst
    return SweepResult(tuple(poses), smallest, det, worst, det_pose, dqs_smallest, moderate_smallest, moderate_det,
                       moderate_pose, moderate_det_pose, per_bone)
