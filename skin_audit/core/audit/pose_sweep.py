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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths.affine import rotation
from ..maths.bbone import rig_pose_segments, vertex_matrices
from ..maths.collapse import Columns, blended_linear, dqs_rotation_measures, squash_measures
from .armature_modifier import accumulate_dual, to_armature
from .skinned_mesh import SkinnedMesh
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
    used = {b for b, _, _ in mesh.deform_columns}
    poses = []
    for j in sorted(used):
        limits = mesh.bones.limits[j] if mesh.bones.limits else (None, None, None)
        for axis in AXES:
            angles = {(float(s * d), "default") for d in degrees for s in (1.0, -1.0)}
            limit = limits["xyz".index(axis)]  # limits are stored x, y, z
            if limit is not None:
                lo, hi = limit
                angles |= {(float(np.degrees(v)), "limit") for v in (lo, hi) if abs(v) > tolerances.ANGLE_ZERO}
            poses += [SweepPose(j, axis, deg, src) for deg, src in sorted(angles)]
    return poses


def is_moderate(pose: SweepPose) -> bool:
    """A pose a rig should survive: within 90 degrees, or at the rig's own limit."""
    return pose.source == "limit" or abs(pose.degrees) <= 90.0 + tolerances.DEGREES_EXACT


def pose_channel(mesh: SkinnedMesh, pose: SweepPose) -> F64:
    """(J, 4, 4) skinning matrices with only ``pose.bone`` turned, through the hierarchy."""
    local = np.broadcast_to(np.eye(4), mesh.bones.rest.shape).copy()
    local[pose.bone] = rotation(pose.axis, np.radians(pose.degrees))
    return posed_channels(mesh.bones, local, moved=(pose.bone,))


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
    """Evaluate every sweep pose; keep each vertex's worst LBS squash and the pose responsible.

    A sweep pose turns one bone from rest by theta.  Every channel then has the
    linear part I (the rest of the rig, branches that do not inherit rotation)
    or the turned bone's R (what inherits it).  A vertex with the fraction ``f``
    of its weight on R bones blends ``(1 - f) I + f R``, a normal matrix whose
    singular values are 1 and ``|1 - f + f e^(i theta)|`` (twice):

        det = |1 - f + f e^(i theta)|^2,  smallest = min(1, |1 - f + f e^(i theta)|)

    whatever the axis, so each pose is exact in closed form and the three axes
    tie exactly (the twist, evaluated first, is named).  A dual-quaternion
    blend of rigid transforms is a rotation: its measure is 1.  A bone whose
    poses give any other linear part is evaluated numerically.
    """
    # A sweep pose turns one bone from rest: the rest of the pose, B-Bone pose properties
    # included, is cleared, as Blender's spot checks clear it on their sandbox copies.
    mesh = mesh.for_test_poses()
    table = mesh.influence_table
    v = mesh.vertex_count
    poses = sweep_poses(mesh, degrees)
    r = _SweepArrays(v)
    per_bone: dict[int, float] = {}
    total = mesh.flat_columns.contrib
    nonzero = table.weights != 0
    by_bone: dict[int, list[int]] = {}
    for k, p in enumerate(poses):
        by_bone.setdefault(p.bone, []).append(k)
    for bone, pose_ids in by_bone.items():
        lin = pose_channel(mesh, poses[pose_ids[0]])[:, :3, :3]
        is_i = np.abs(lin - np.eye(3)).max(axis=(1, 2)) <= tolerances.RIGID_BLEND
        is_r = np.abs(lin - lin[bone]).max(axis=(1, 2)) <= tolerances.RIGID_BLEND
        bent = _bent_bbones(mesh, is_r)
        if not (is_i | is_r).all() or bent:
            per_bone[bone] = _numeric_bone(mesh, poses, pose_ids, r, bent)
            continue
        turned = is_r[table.bones] & nonzero
        other = ~turned & nonzero
        # Only vertices weighted both to turned bones and to others change shape.  (Slot by slot:
        # any(axis=1) over a short axis is ~10x slower.)
        has_turned, has_other = turned[:, 0].copy(), other[:, 0].copy()
        for slot in range(1, turned.shape[1]):
            has_turned |= turned[:, slot]
            has_other |= other[:, slot]
        index = np.flatnonzero(has_turned & has_other)
        if index.size == 0:
            per_bone[bone] = 1.0
            continue
        within = np.where(turned[index], table.weights[index], 0.0).sum(axis=1)
        f = within / total[index]
        still = total[index] <= tolerances.BLENDER_MIN_CONTRIB  # Blender does not move them
        bone_worst = 1.0
        seen: set[tuple[float, bool]] = set()
        for k in pose_ids:
            moderate = is_moderate(poses[k])
            angle = abs(poses[k].degrees) % 360.0
            if (angle, moderate) in seen:
                continue  # the same values as an earlier pose of this bone: nothing can change
            seen.add((angle, moderate))
            half = np.radians(angle) / 2.0
            # |1 - f + f e^(i theta)| = |(1 - 2 f sin^2(theta/2)) + i 2 f sin(theta/2) cos(theta/2)|:
            # no cancellation near a collapse (at 180 degrees it is exactly |1 - 2 f|).
            modulus = np.hypot(1.0 - 2.0 * f * np.sin(half) ** 2, 2.0 * f * np.sin(half) * np.cos(half))
            modulus[still] = 1.0
            sv = np.minimum(modulus, 1.0)
            d = modulus * modulus
            better = r.update(index, k, sv, d, moderate)
            r.dqs_smallest[index[better]] = 1.0
            bone_worst = min(bone_worst, float(sv.min()))
        per_bone[bone] = bone_worst
    return SweepResult(tuple(poses), r.smallest, r.det, r.worst, r.det_pose, r.dqs_smallest, r.moderate_smallest,
                       r.moderate_det, r.moderate_pose, r.moderate_det_pose, per_bone)


class _SweepArrays:
    """The running worst values of the sweep, per vertex."""

    def __init__(self, v: int) -> None:
        self.smallest = np.ones(v)
        self.det = np.ones(v)
        self.worst = np.full(v, -1, dtype=np.intp)
        self.det_pose = np.full(v, -1, dtype=np.intp)
        self.dqs_smallest = np.ones(v)
        self.moderate_smallest = np.ones(v)
        self.moderate_det = np.ones(v)
        self.moderate_pose = np.full(v, -1, dtype=np.intp)
        self.moderate_det_pose = np.full(v, -1, dtype=np.intp)

    def update(self, index: NDArray[np.intp], k: int, s: F64, d: F64, moderate: bool) -> NDArray[np.bool_]:
        better = _keep_lower(self.smallest, self.worst, index, s, k)
        _keep_lower(self.det, self.det_pose, index, d, k)
        if moderate:
            _keep_lower(self.moderate_smallest, self.moderate_pose, index, s, k)
            _keep_lower(self.moderate_det, self.moderate_det_pose, index, d, k)
        return better


def _bent_bbones(mesh: SkinnedMesh, turned: NDArray[np.bool_]) -> set[int]:
    """Weighted B-Bones a sweep pose bends: the bone and its handles do not all turn alike.

    (The sweep's poses start from rest, B-Bone pose properties included, so a B-Bone whose
    ends turn alike keeps its rest shape and moves rigidly.)"""
    bbones = mesh.bones.bbones
    if not bbones:
        return set()
    out: set[int] = set()
    for j in {b for b, _, _ in mesh.deform_columns}:
        rb = bbones[j] if j < len(bbones) else None
        if rb is None or j in out:
            continue
        ends = [k for k in (rb.prev_bone, rb.next_bone) if k >= 0]
        if any(turned[k] != turned[j] for k in ends):
            out.add(j)
    return out


def _bbone_linear(mesh: SkinnedMesh, local_cols: Columns, co: F64, channel: F64, bent: AbstractSet[int],
                  linear: F64) -> None:
    """Replace each bent B-Bone column's ``w C_j`` in ``linear`` by its per-vertex segment blend."""
    bbones = mesh.bones.bbones
    for j, idx, w in local_cols:
        if j not in bent:
            continue
        rb = bbones[j]
        assert rb is not None
        segments = rig_pose_segments(rb, j, channel, mesh.bones.rest)
        per_vertex = vertex_matrices(co[idx], rb.spline, channel[j], rb.rest_segments, segments)[:, :3, :3]
        linear[idx] += w[:, None, None] * (per_vertex - channel[j, :3, :3])


def _numeric_bone(mesh: SkinnedMesh, poses: Sequence[SweepPose], pose_ids: list[int], r: _SweepArrays,
                  bent: AbstractSet[int] = frozenset()) -> float:
    """One bone's poses evaluated numerically (blended 3x3, SVD); returns the bone's worst value.

    Vertices on a B-Bone the pose bends are measured with its segments' per-vertex blend.
    """
    columns = mesh.deform_columns
    v = mesh.vertex_count
    channel0 = pose_channel(mesh, poses[pose_ids[0]])
    _, motion_class = np.unique(np.round(channel0.reshape(len(channel0), 16), 9), axis=0, return_inverse=True)
    motion_class = motion_class.reshape(-1)
    classes_hit = np.zeros((int(motion_class.max()) + 1, v), dtype=bool)
    for b, idx, _ in columns:
        classes_hit[motion_class[b], idx] = True
    changing = classes_hit.sum(axis=0) >= 2
    for b, idx, _ in columns:
        if b in bent:
            changing[idx] = True
    index = np.flatnonzero(changing)
    if index.size == 0:
        return 1.0
    sub = _restrict(columns, np.isin(np.arange(v), index))
    remap = np.full(v, -1, dtype=np.intp)
    remap[index] = np.arange(index.size)
    local_cols = [(b, remap[idx], w) for b, idx, w in sub]
    co = to_armature(mesh)[index]
    bone_worst = 1.0
    for k in pose_ids:
        channel = pose_channel(mesh, poses[k])
        linear, contrib = blended_linear(local_cols, channel, index.size)
        if bent:
            _bbone_linear(mesh, local_cols, co, channel, bent, linear)
        s, d = squash_measures(linear, contrib)
        better = r.update(index, k, s, d, is_moderate(poses[k]))
        bone_worst = min(bone_worst, float(s.min()))
        if better.any():
            posed = mesh.with_channel(channel)
            dual = accumulate_dual(co, local_cols, posed)
            r.dqs_smallest[index[better]] = dqs_rotation_measures(dual.real[better])[0]
    return bone_worst
