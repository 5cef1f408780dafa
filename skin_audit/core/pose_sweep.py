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
    for bone, pose_ids in by_bone.items():
        # Bones that move alike under this bone's poses form one class (the rest of the rig, the
        # subtree that inherits its rotation, each non-inheriting branch...); only vertices
        # weighted to two or more classes can change shape.
        channel0 = pose_channel(mesh, poses[pose_ids[0]])
        _, motion_class = np.unique(np.round(channel0.reshape(len(channel0), 16), 9), axis=0, return_inverse=True)
        motion_class = motion_class.reshape(-1)
        classes_hit = np.zeros((int(motion_class.max()) + 1, v), dtype=bool)
        for b, idx, _ in columns:
            classes_hit[motion_class[b], idx] = True
        mixed = classes_hit.sum(axis=0) >= 2
        index = np.flatnonzero(mixed)
        if index.size == 0:
            per_bone[bone] = 1.0
            continue
        sub = _restrict(columns, mixed)
        remap = np.full(v, -1, dtype=np.intp)
        remap[index] = np.arange(index.size)
        local_cols = [(b, remap[idx], w) for b, idx, w in sub]
        bone_worst = 1.0
        for k in pose_ids:
            channel = pose_channel(mesh, poses[k])
            linear, contrib = blended_linear(local_cols, channel, index.size)
            s, d = squash_measures(linear, contrib)
            better = _keep_lower(smallest, worst, index, s, k)
            _keep_lower(det, det_pose, index, d, k)
            bone_worst = min(bone_worst, float(s.min()))
            if is_moderate(poses[k]):
                _keep_lower(moderate_smallest, moderate_pose, index, s, k)
                _keep_lower(moderate_det, moderate_det_pose, index, d, k)
            if better.any():
                posed = replace(mesh, bones=replace(mesh.bones, channel=channel))
                dual = accumulate_dual(co[index], local_cols, posed)
                dqs_smallest[index[better]] = dqs_rotation_measures(dual.real[better])[0]
        per_bone[bone] = bone_worst
    return SweepResult(tuple(poses), smallest, det, worst, det_pose, dqs_smallest, moderate_smallest, moderate_det,
                       moderate_pose, moderate_det_pose, per_bone)
