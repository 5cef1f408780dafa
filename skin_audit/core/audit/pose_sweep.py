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
from functools import partial

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths.affine import rotation
from ..maths.bbone import (
    bbone_deform_matrices_multi,
    rig_pose_segments_multi,
)
from ..maths.parallel import GEMM_SIZE, run_all, thread_count
from ..maths.small_svd import WORKSPACE_ROWS, smallest_singular_and_det
from ..maths.trees import depth_first
from .skinned_mesh import SkinnedMesh
from .stress_poses import turned_channels

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
    out: F64 = _bone_channels(mesh, [pose])[0]
    return out


def _bone_channels(mesh: SkinnedMesh, poses: Sequence[SweepPose]) -> F64:
    """(P, J, 4, 4) ``pose_channel`` of several poses of the same bone, in one walk of its subtree."""
    rotations = np.array([rotation(p.axis, np.radians(p.degrees)) for p in poses])
    return turned_channels(mesh.bones, poses[0].bone, rotations)


def _keep_lower(best: F64, best_pose: NDArray[np.intp], index: NDArray[np.intp], values: F64,
                pose: int) -> None:
    """Where ``values`` beat ``best`` at ``index``: store them and the pose."""
    lower = values < best[index]
    best[index[lower]] = values[lower]
    best_pose[index[lower]] = pose


def _keep_lowest(best: F64, best_pose: NDArray[np.intp], index: NDArray[np.intp], values: F64,
                 ks: NDArray[np.intp]) -> None:
    """``_keep_lower`` of the columns of ``values`` (n, P) in turn, poses ``ks``, in one pass:
    a row's smallest value (NaN skipped: it never beats a value), the first column among equals."""
    if values.shape[1] == 1:
        _keep_lower(best, best_pose, index, values[:, 0], int(ks[0]))
        return
    key = np.where(np.isnan(values), np.inf, values)
    column = np.argmin(key, axis=1)
    lowest = key[np.arange(len(key)), column]
    lower = lowest < best[index]
    best[index[lower]] = lowest[lower]
    best_pose[index[lower]] = ks[column[lower]]


def run_sweep(mesh: SkinnedMesh, degrees: Sequence[float] = (90.0, 180.0)) -> SweepResult:
    """Evaluate every sweep pose; keep each vertex's worst LBS squash and the pose responsible.

    A sweep pose turns one bone from rest by theta.  Every channel then has the
    linear part I (the rest of the rig, branches that do not inherit rotation)
    or the turned bone's R (what inherits it).  A vertex with the fraction ``f``
    of its weight on R bones blends ``(1 - f) I + f R``, a normal matrix whose
    singular values are 1 and ``|1 - f + f e^(i theta)|`` (twice):

        det = |1 - f + f e^(i theta)|^2,  smallest = min(1, |1 - f + f e^(i theta)|)

    whatever the axis, so each pose is exact in closed form and the three axes
    tie exactly (the twist, evaluated first, is named).  A bone whose poses give
    any other linear part, or bend a B-Bone, is evaluated numerically
    (``_numeric_bone``).

    Preserve Volume blends the bones' (and B-Bone joints') dual quaternions; the rotation
    part of that blend, normalised, is a rotation whatever the weights, so its measure is 1
    at every pose (``dqs_smallest``; a test recomputes Blender's blend at each vertex's worst
    pose and finds 1 to rounding).
    """
    # A sweep pose turns one bone from rest: the rest of the pose, B-Bone pose properties
    # included, is cleared, as Blender's spot checks clear it on their sandbox copies.
    # The weight tables depend on the weights alone: built once on the mesh, for every step.
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
    shared = _Shared(mesh)
    forest = _InheritForest(mesh, nonzero)
    ends = _BBoneEnds(mesh)
    plans = [_plan_bone(mesh, poses, bone, pose_ids, ends, forest) for bone, pose_ids in by_bone.items()]
    ahead = _NumericAhead(mesh, poses, [p for p in plans if p.numeric])
    for plan in plans:
        bone, pose_ids, is_r = plan.bone, plan.pose_ids, plan.turned
        if plan.numeric:
            per_bone[bone] = _numeric_bone(mesh, poses, pose_ids, ahead.take(bone), r, plan.bent, shared,
                                           is_r, forest)
            continue
        if np.array_equal(is_r, forest.turns(bone)):
            index = forest.vertices(bone)  # those blending bones this turn moves and bones it does not
        else:  # (a linear part matched by accident: scan every vertex)
            index = _blending_turned(is_r[table.bones] & nonzero, nonzero)
        if index.size == 0:
            per_bone[bone] = 1.0
            continue
        # The weight on turned bones, slot by slot (a short axis=1 sum is slow; empty slots weigh 0).
        within = np.zeros(index.size)
        for slot in range(table.bones.shape[1]):
            within += np.where(is_r[table.bones[index, slot]], table.weights[index, slot], 0.0)
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
            # (Where this pose is a vertex's worst, its DQS measure is 1: dqs_smallest's start value.)
            r.update(index, k, sv, d, moderate)
            bone_worst = min(bone_worst, float(sv.min()))
        per_bone[bone] = bone_worst
    return SweepResult(tuple(poses), r.smallest, r.det, r.worst, r.det_pose, r.dqs_smallest, r.moderate_smallest,
                       r.moderate_det, r.moderate_pose, r.moderate_det_pose, per_bone)


@dataclass(frozen=True)
class _BonePlan:
    """How the sweep evaluates one bone's poses: in closed form (``turned``: the bones its poses
    turn) or numerically (``bent``: the B-Bones they bend)."""

    bone: int
    pose_ids: list[int]
    numeric: bool
    turned: NDArray[np.bool_]
    bent: set[int]


def _plan_bone(mesh: SkinnedMesh, poses: Sequence[SweepPose], bone: int, pose_ids: list[int],
               ends: _BBoneEnds, forest: _InheritForest) -> _BonePlan:
    """Classify one bone's poses by the linear parts of its first pose (see ``run_sweep``).

    A turn gives the bones it turns (the bone's subtree in the inherit forest) one linear part R,
    and every other bone I (``turned_channels``): the classes come from the forest, without a
    channel computed per bone (a rig's bones times its bones).  A turn too small to tell R from I
    within ``RIGID_BLEND`` makes every bone both.  With non-finite rest matrices the channels are
    computed and compared, as their NaNs decide."""
    if not forest.finite_rest:
        lin = pose_channel(mesh, poses[pose_ids[0]])[:, :3, :3]
        is_i = np.abs(lin - np.eye(3)).max(axis=(1, 2)) <= tolerances.RIGID_BLEND
        is_r = np.abs(lin - lin[bone]).max(axis=(1, 2)) <= tolerances.RIGID_BLEND
        bent = ends.bent(is_r)
        return _BonePlan(bone, pose_ids, bool(not (is_i | is_r).all() or bent), is_r, bent)
    pose = poses[pose_ids[0]]
    bones = mesh.bones
    turn = (bones.rest[bone] @ rotation(pose.axis, np.radians(pose.degrees)) @ bones.rest_inverse[bone])[:3, :3]
    small = bool(np.abs(turn - np.eye(3)).max() <= tolerances.RIGID_BLEND)
    is_r = forest.turns(bone) | small
    bent = ends.bent(is_r)
    return _BonePlan(bone, pose_ids, bool(bent), is_r, bent)


def _measured_poses(poses: Sequence[SweepPose], pose_ids: list[int]) -> list[int]:
    """Positions in ``pose_ids`` a numeric bone measures: +180 and -180 about one axis are one
    rotation, so the first (as sorted) is measured and named."""
    measured: list[int] = []
    seen: set[tuple[str, float, bool]] = set()
    for p, k in enumerate(pose_ids):
        same = (poses[k].axis, (poses[k].degrees + 180.0) % 360.0, is_moderate(poses[k]))
        if same not in seen:
            seen.add(same)
            measured.append(p)
    return measured


@dataclass(frozen=True)
class _NumericPoses:
    """A numeric bone's channel matrices at each of its poses, the poses it measures (positions in
    its ``pose_ids``), and each bent B-Bone's joint deform matrices at those, (M, S + 1, 9)."""

    channels: F64  # (P, J, 4, 4)
    measured: list[int]
    deform: dict[int, F64]


#: Channel numbers (poses x bones x 16) the sweep computes ahead for numeric bones at most.
_AHEAD_NUMBERS = 2**22


class _NumericAhead:
    """The numeric bones' ``_NumericPoses``, computed a few bones ahead of the sweep: the B-Bone
    curves of all of them in one pass (a pass is mostly numpy's per-call cost on tiny arrays,
    whatever the number of rows), bounded by ``_AHEAD_NUMBERS`` of channel matrices held."""

    def __init__(self, mesh: SkinnedMesh, poses: Sequence[SweepPose], plans: list[_BonePlan]) -> None:
        self.mesh, self.poses = mesh, poses
        self.queue = list(plans)
        self.ready: dict[int, _NumericPoses] = {}

    def take(self, bone: int) -> _NumericPoses:
        if bone not in self.ready:
            self._compute_ahead()
        return self.ready.pop(bone)

    def _compute_ahead(self) -> None:
        mesh, poses = self.mesh, self.poses
        joints = len(mesh.bones.names)
        chunk: list[_BonePlan] = []
        held = 0
        while self.queue and (not chunk or held + len(self.queue[0].pose_ids) * joints * 16 <= _AHEAD_NUMBERS):
            chunk.append(self.queue.pop(0))
            held += len(chunk[-1].pose_ids) * joints * 16
        channels = [_bone_channels(mesh, [poses[k] for k in plan.pose_ids]) for plan in chunk]
        measured = [_measured_poses(poses, plan.pose_ids) for plan in chunk]
        # Every bent B-Bone's measured poses across the chunk: one request per B-Bone.
        offsets = np.cumsum([0] + [len(m) for m in measured])
        stacked = np.concatenate([c[m] for c, m in zip(channels, measured, strict=True)])
        asked: dict[int, list[tuple[int, NDArray[np.intp]]]] = {}  # B-Bone -> (plan, rows of stacked)
        for i, plan in enumerate(chunk):
            for j in sorted(plan.bent):
                asked.setdefault(j, []).append((i, offsets[i] + np.arange(len(measured[i]))))
        bbones = mesh.bones.bbones
        records = [(j, rb) for j in asked if (rb := bbones[j]) is not None]
        assert len(records) == len(asked)
        rows = [np.concatenate([at for _, at in asked[j]]) for j, _ in records]
        curves = rig_pose_segments_multi([(rb, j, at, None) for (j, rb), at in zip(records, rows, strict=True)],
                                         stacked, mesh.bones.rest)
        deforms = bbone_deform_matrices_multi([rb.spline.rest for _, rb in records],
                                              [stacked[at, j] for (j, _), at in zip(records, rows, strict=True)],
                                              [rb.rest_segments for _, rb in records], curves)
        deform: list[dict[int, F64]] = [{} for _ in chunk]
        for (j, _), d in zip(records, deforms, strict=True):
            start = 0
            for i, at in asked[j]:
                deform[i][j] = d[start:start + len(at), :, :3, :3].reshape(len(at), -1, 9)
                start += len(at)
        for i, plan in enumerate(chunk):
            self.ready[plan.bone] = _NumericPoses(channels[i], measured[i], deform[i])


def _blending_turned(turned: NDArray[np.bool_], nonzero: NDArray[np.bool_]) -> NDArray[np.intp]:
    """Vertices (rows of the influence table) weighted both to a turned bone and to another."""
    other = ~turned & nonzero
    # Slot by slot: any(axis=1) over a short axis is ~10x slower.
    has_turned, has_other = turned[:, 0].copy(), other[:, 0].copy()
    for slot in range(1, turned.shape[1]):
        has_turned |= turned[:, slot]
        has_other |= other[:, slot]
    return np.flatnonzero(has_turned & has_other)


#: Rows of the influence table per block of the inherit-forest walk.
_FOREST_BLOCK = 65536


class _InheritForest:
    """Which vertices each sweep bone's turn changes, for every bone at once, in time linear in
    the weights and the depth of the rig (not weights x bones).

    Turning bone ``b`` turns ``b`` and every bone that inherits rotation from a bone it turns:
    ``b``'s subtree in the forest whose links are the inheriting parent links.  A vertex changes
    shape under ``b`` when some of its bones are in that subtree and some are not, i.e. when ``b``
    lies on the way up from one of its bones but is not above all of them.  Walking up from every
    (vertex, bone) pair until the node is above all of the vertex's bones lists exactly those.
    """

    def __init__(self, mesh: SkinnedMesh, nonzero: NDArray[np.bool_]) -> None:
        bones = mesh.bones
        j = len(bones.parents)
        parents = np.asarray(bones.parents, dtype=np.intp)
        inherits = bones.inherit_rotation if len(bones.inherit_rotation) else np.ones(j, dtype=bool)
        up = np.where(inherits & (parents >= 0), parents, -1)
        # Depth-first entry and exit times: a is at or above b iff tin[a] <= tin[b] < tout[a].
        # (int32: the walks below read these once per weight; half the memory traffic of intp)
        _, tin, tout = depth_first(up)
        self.tin, self.tout = tin.astype(np.int32), tout.astype(np.int32)
        self.finite_rest = bool(np.isfinite(bones.rest).all())
        table = mesh.influence_table
        found_v: list[NDArray[np.int32]] = []
        found_b: list[NDArray[np.int32]] = []
        # In blocks of vertices: each walk is the vertex's own, and a block's temporaries stay
        # small (whole-mesh ones were 80 MB more at the peak on a million vertices).
        for first_row in range(0, mesh.vertex_count, _FOREST_BLOCK):
            rows = slice(first_row, first_row + _FOREST_BLOCK)
            self._walk(table.bones[rows], nonzero[rows], first_row, up, found_v, found_b)
        verts = np.concatenate(found_v) if found_v else np.zeros(0, dtype=np.int32)
        by = np.concatenate(found_b) if found_b else np.zeros(0, dtype=np.int32)
        del found_v, found_b
        # Grouped by bone (a stable radix sort on small integers).
        order = np.argsort(by.astype(np.int32 if j >= 2**15 else np.int16), kind="stable")
        self._starts = np.searchsorted(by[order], np.arange(j + 1))
        del by
        self._verts: NDArray[np.intp] = verts[order].astype(np.intp)

    def _walk(self, bones: NDArray[np.intp], nonzero: NDArray[np.bool_], offset: int, up: NDArray[np.intp],
              found_v: list[NDArray[np.int32]], found_b: list[NDArray[np.int32]]) -> None:
        """Append the (vertex, bone) pairs of a block of rows of the influence table."""
        tin, tout = self.tin, self.tout
        slots = bones.shape[1]
        # Each vertex's bones as entry times, one array per slot (empty slots: -1, below no bone).
        times = [np.where(nonzero[:, k], tin[bones[:, k]], -1) for k in range(slots)]
        for k in range(slots):
            # Walk up from slot k's bone.  A node is listed from the first slot whose bone is
            # below it only, so no (vertex, bone) pair comes twice.
            vert: NDArray[np.intp] | None = None  # None: every row (the first step, no gathers)
            node = bones[:, k]
            live: NDArray[np.bool_] = nonzero[:, k]
            while True:
                lo, hi = tin[node], tout[node]
                above_all = np.ones(len(node), dtype=np.bool_)
                first = live.copy()
                for other, t_all in enumerate(times):  # (slot by slot: a short axis=1 is slow)
                    if other == k and vert is None:
                        continue  # the first step stands on this slot's own bone: below it, trivially
                    t = t_all if vert is None else t_all[vert]
                    below = (lo <= t) & (t < hi)
                    above_all &= below | (t < 0)
                    if other < k:
                        first &= ~below
                at = np.flatnonzero(live & ~above_all)
                vert = at if vert is None else vert[at]
                node = node[at]
                emit = first[at]
                found_v.append((vert[emit] + offset).astype(np.int32))
                found_b.append(node[emit].astype(np.int32))
                node = up[node]
                alive = node >= 0
                vert, node = vert[alive], node[alive]
                if vert.size == 0:
                    break
                live = np.ones(vert.size, dtype=np.bool_)

    def turns(self, bone: int) -> NDArray[np.bool_]:
        """(J,) the bones a turn of ``bone`` turns."""
        out: NDArray[np.bool_] = (self.tin[bone] <= self.tin) & (self.tin < self.tout[bone])
        return out

    def vertices(self, bone: int) -> NDArray[np.intp]:
        """The vertices (each once) weighted both to bones a turn of ``bone`` turns and to others."""
        out: NDArray[np.intp] = self._verts[self._starts[bone]:self._starts[bone + 1]]
        return out


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

    def update(self, index: NDArray[np.intp], k: int, s: F64, d: F64, moderate: bool) -> None:
        """Pose ``k``'s values ``s`` and ``d`` (n,) of the vertices ``index`` (``_keep_lower``)."""
        self.update_many(index, np.array([k]), s[:, None], d[:, None], np.array([moderate]))

    def update_many(self, index: NDArray[np.intp], ks: NDArray[np.intp], s: F64, d: F64,
                    moderate: NDArray[np.bool_]) -> None:
        """Several poses at once: ``s`` and ``d`` are (n, P), column ``p`` pose ``ks[p]``
        (ascending), ``moderate`` (P,) which of them are moderate.  Each vertex keeps its smallest
        value and the first pose giving it, NaN never: as ``_keep_lower`` pose by pose in order."""
        _keep_lowest(self.smallest, self.worst, index, s, ks)
        _keep_lowest(self.det, self.det_pose, index, d, ks)
        if moderate.all():
            _keep_lowest(self.moderate_smallest, self.moderate_pose, index, s, ks)
            _keep_lowest(self.moderate_det, self.moderate_det_pose, index, d, ks)
        elif moderate.any():
            _keep_lowest(self.moderate_smallest, self.moderate_pose, index, s[:, moderate], ks[moderate])
            _keep_lowest(self.moderate_det, self.moderate_det_pose, index, d[:, moderate], ks[moderate])


def _bent_bbones(mesh: SkinnedMesh, turned: NDArray[np.bool_]) -> set[int]:
    """Weighted B-Bones a sweep pose bends: the bone and its handles do not all turn alike.

    (The sweep's poses start from rest, B-Bone pose properties included, so a B-Bone whose
    ends turn alike keeps its rest shape and moves rigidly.)"""
    return _BBoneEnds(mesh).bent(turned)


class _BBoneEnds:
    """The weighted B-Bones and their handle bones, as arrays: ``_bent_bbones`` for many poses."""

    def __init__(self, mesh: SkinnedMesh) -> None:
        bbones = mesh.bones.bbones
        weighted = sorted({b for b, _, _ in mesh.deform_columns})
        records = [(j, rb) for j in weighted if j < len(bbones) and (rb := bbones[j]) is not None]
        self.bones = np.array([j for j, _ in records], dtype=np.intp)
        self.prev = np.array([rb.prev_bone for _, rb in records], dtype=np.intp)
        self.next = np.array([rb.next_bone for _, rb in records], dtype=np.intp)

    def bent(self, turned: NDArray[np.bool_]) -> set[int]:
        """Those whose bone and handles do not all turn alike under ``turned`` (J,)."""
        if self.bones.size == 0:
            return set()
        mine = turned[self.bones]
        differs = (((self.prev >= 0) & (turned[self.prev] != mine))
                   | ((self.next >= 0) & (turned[self.next] != mine)))
        return set(self.bones[differs].tolist())


class _Shared:
    """What every numeric bone of one sweep reads: rest data, built once, on first use."""

    def __init__(self, mesh: SkinnedMesh) -> None:
        self.mesh = mesh
        self._entry_bone: NDArray[np.intp] | None = None
        self._segments: dict[int, tuple[NDArray[np.intp], F64, NDArray[np.intp], F64]] = {}
        self._scratch: dict[str, F64] = {}

    def scratch(self, name: str, rows: int, width: int) -> F64:
        """A (rows, width) float64 scratch array kept for the whole sweep, grown when too small
        (large arrays allocated afresh are mapped and faulted in each time: that cost the
        numeric bones more than their arithmetic)."""
        buf = self._scratch.get(name)
        if buf is None or buf.size < rows * width:
            buf = self._scratch[name] = np.empty(rows * width)
        out: F64 = buf[:rows * width].reshape(rows, width)
        return out

    @property
    def entry_bone(self) -> NDArray[np.intp]:
        """Bone of each weight of ``flat_columns`` (built on first use: only numeric bones read it)."""
        if self._entry_bone is None:
            flat = self.mesh.flat_columns
            self._entry_bone = np.repeat(flat.bones, np.diff(flat.starts))
        return self._entry_bone

    def bbone_column(self, j: int) -> tuple[NDArray[np.intp], F64, NDArray[np.intp], F64]:
        """B-Bone ``j``'s weighted vertices, weights, and their segment and blend (rest data)."""
        hit = self._segments.get(j)
        if hit is None:
            mesh = self.mesh
            idx, w = next((idx, w) for b, idx, w in mesh.deform_columns if b == j)
            seg, blend = mesh.bbone_mapping[j]  # (the recomputation's, shared: rest data)
            hit = self._segments[j] = (idx, w, seg, blend)
        return hit


def _row_classes(key: F64) -> NDArray[np.intp]:
    """``np.unique(key, axis=0, return_inverse=True)[1]``: each row's rank among the distinct rows.

    The rows are few distinct ones repeated (bones that move alike), so they are told apart by
    their bytes first and only the distinct ones are sorted (``np.unique`` on rows sorts them all).
    """
    key = key + 0.0  # -0.0 and 0.0 are one value (as np.unique compares them): one byte pattern
    if not np.isfinite(key).all():  # (NaN is unequal to itself: np.unique's own rules)
        out: NDArray[np.intp] = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
        return out
    first: dict[bytes, int] = {}
    ids = np.array([first.setdefault(row.tobytes(), len(first)) for row in key], dtype=np.intp)
    rows = np.empty((len(first), key.shape[1]))
    rows[ids] = key
    # Rank of each distinct row in lexicographic order (first column first, as np.unique sorts).
    rank = np.empty(len(rows), dtype=np.intp)
    rank[np.lexsort(rows.T[::-1])] = np.arange(len(rows))
    out = rank[ids]
    return out



def _numeric_bone(mesh: SkinnedMesh, poses: Sequence[SweepPose], pose_ids: list[int], ahead: _NumericPoses,
                  r: _SweepArrays, bent: AbstractSet[int], shared: _Shared, turned: NDArray[np.bool_],
                  forest: _InheritForest) -> float:
    """One bone's poses evaluated numerically (blended 3x3, smallest singular value); returns the
    bone's worst value.

    Bones whose linear parts agree at every pose of this bone form a class; a vertex changes
    shape when it blends two classes or sits on a B-Bone the poses bend.  Its blended 3x3 is
    ``sum_c F_c L_c + sum_bent w_j ((1 - b) D_j[i] + b D_j[i + 1])``: its weight per class times
    the class's linear part, plus each bent B-Bone's segment blend (segment ``i`` and blend ``b``
    computed once per B-Bone, the joints' deform matrices ``D_j`` once per pose).

    The measured poses go in batches, each built vertex by vertex (a vertex's poses side by side:
    a few operations over the whole batch, not a few per pose over one pose's rows) and measured
    in blocks on the thread pool; each vertex's worst over the batch, the first of equal values
    (``_SweepArrays.update_many``), updates the running worst values as pose-by-pose updates in
    pose order would.
    """
    flat = mesh.flat_columns
    v = mesh.vertex_count
    lin = ahead.channels[:, :, :3, :3]
    class_of, used, representative = _bone_classes(lin, flat.bones)
    classes = len(representative)
    index, per_class = _numeric_rows(mesh, poses[pose_ids[0]].bone, class_of, used, turned, forest, bent, shared)
    if index.size == 0:
        return 1.0
    n = index.size
    remap = np.full(v, -1, dtype=np.intp)
    remap[index] = np.arange(n)
    contrib = flat.contrib[index]
    bent_columns = []
    for j in sorted(bent):
        idx, w, seg, blend = shared.bbone_column(j)
        w_in, w_out = w * (1.0 - blend), w * blend
        bent_columns.append((j, remap[idx], w_in[:, None, None], w_out[:, None, None], seg, seg + 1))
    moved = contrib > tolerances.BLENDER_MIN_CONTRIB
    scale = (1.0 / np.where(moved, contrib, 1.0))[:, None]
    measured, deform = ahead.measured, ahead.deform
    still = ~moved
    bone_worst = 1.0
    batch = max(1, _BATCH_ROWS // n)
    for first in range(0, len(measured), batch):
        ms = measured[first:first + batch]
        count = len(ms)
        # (n, count * 9): vertex by vertex, its poses' 3x3 matrices side by side.
        linear = shared.scratch("linear", n, count * 9)
        # nc,ck->nk over every pose of the batch at once, in blocks of rows (the BLAS policy: ``parallel``).
        parts = np.ascontiguousarray(lin[ms][:, representative].reshape(count, classes, 9).transpose(1, 0, 2))
        parts = parts.reshape(classes, count * 9)
        gemm_rows = max(1, GEMM_SIZE // (9 * count * classes))
        for lo in range(0, n, gemm_rows):
            np.matmul(per_class[lo:lo + gemm_rows], parts, out=linear[lo:lo + gemm_rows])
        by_pose = linear.reshape(n, count, 9)
        for j, local, w_in, w_out, seg, seg1 in bent_columns:
            # by_pose[local] += w_in * D[seg] + w_out * D[seg1], the joints' matrices of every pose.
            d9 = np.ascontiguousarray(deform[j][first:first + count].transpose(1, 0, 2))  # (joints, count, 9)
            add = np.take(d9, seg, axis=0)
            add *= w_in
            out = np.take(d9, seg1, axis=0)
            out *= w_out
            add += out
            add += np.take(by_pose, local, axis=0)
            by_pose[local] = add
        linear *= scale
        smallest, det = _measure(linear.reshape(-1, 9), shared)
        sv, dv = smallest.reshape(n, count), det.reshape(n, count)
        sv[still] = 1.0  # Blender does not move them
        dv[still] = 1.0
        ks = np.array([pose_ids[p] for p in ms], dtype=np.intp)
        moderate = np.array([is_moderate(poses[k]) for k in ks.tolist()], dtype=bool)
        r.update_many(index, ks, sv, dv, moderate)
        for worst in sv.min(axis=0).tolist():  # (a pose with a NaN leaves the bone's worst as it was)
            bone_worst = min(bone_worst, worst)
    return bone_worst


def _bone_classes(lin: F64, weighted: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]:
    """Bones whose linear parts ``lin`` (P, J, 3, 3) agree at every pose form a class: each bone's
    class (-1 for bones without weights), the weighted bones (sorted), and one bone per class."""
    used = np.unique(weighted)
    key = np.round(lin[:, used].transpose(1, 0, 2, 3).reshape(len(used), -1), 9)
    cls = _row_classes(key)
    class_of = np.full(len(lin[0]), -1, dtype=np.intp)
    class_of[used] = cls
    representative = np.empty(int(cls.max()) + 1 if cls.size else 0, dtype=np.intp)
    representative[cls] = used
    return class_of, used, representative


def _numeric_rows(mesh: SkinnedMesh, swept: int, class_of: NDArray[np.intp], used: NDArray[np.intp],
                  turned: NDArray[np.bool_], forest: _InheritForest, bent: AbstractSet[int],
                  shared: _Shared) -> tuple[NDArray[np.intp], F64]:
    """The vertices a numeric bone measures (blending two classes, or on a bent B-Bone) and each
    one's weight per class, bent B-Bones' weights left out: ``_two_class_rows`` when it applies,
    else ``_class_rows``."""
    is_bent = np.zeros(len(class_of), dtype=bool)
    is_bent[list(bent)] = True
    rows = _two_class_rows(mesh, swept, class_of, used, turned, forest, is_bent, shared)
    if rows is not None:
        return rows
    return _class_rows(mesh, class_of, int(class_of.max()) + 1, is_bent, shared)


def _class_rows(mesh: SkinnedMesh, class_of: NDArray[np.intp], classes: int, is_bent: NDArray[np.bool_],
                shared: _Shared) -> tuple[NDArray[np.intp], F64]:
    """The vertices a numeric bone measures (blending two classes, or on a bent B-Bone) and their
    weight per class (bent B-Bones' weights left out), from a scan of every weight."""
    flat = mesh.flat_columns
    v = mesh.vertex_count
    entry_class = class_of[shared.entry_bone]
    # A vertex blends two classes when one of its weights' class differs from any one of them
    # (here the last written).
    some_class = np.empty(v, dtype=np.intp)
    some_class[flat.vertex] = entry_class
    changing = np.zeros(v, dtype=bool)
    changing[flat.vertex[entry_class != some_class[flat.vertex]]] = True
    on_bent = is_bent[shared.entry_bone]
    changing[flat.vertex[on_bent]] = True
    index = np.flatnonzero(changing)
    remap = np.full(v, -1, dtype=np.intp)
    remap[index] = np.arange(index.size)
    plain = changing[flat.vertex] & ~on_bent
    per_class = np.bincount(remap[flat.vertex[plain]] * classes + entry_class[plain], flat.weight[plain],
                            minlength=index.size * classes).reshape(index.size, classes)
    return index, per_class.astype(np.float64, copy=False)


def _two_class_rows(mesh: SkinnedMesh, swept: int, class_of: NDArray[np.intp], used: NDArray[np.intp],
                    turned: NDArray[np.bool_], forest: _InheritForest, is_bent: NDArray[np.bool_],
                    shared: _Shared) -> tuple[NDArray[np.intp], F64] | None:
    """``_class_rows`` without a scan of every weight, when the two classes are the bones a turn
    of the swept bone turns and the others (the inherit forest lists the vertices blending
    both); None otherwise.

    The weight per class is summed slot by slot from the influence table, whose slots are in
    group order: the same additions in the same order as ``_class_rows``'s ``bincount``.
    """
    moved = turned[used]
    if not (int(class_of.max()) == 1 and moved.any() and not moved.all() and np.array_equal(turned, forest.turns(swept))
            and np.array_equal(class_of[used] == class_of[used[moved][0]], moved)):
        return None
    index = forest.vertices(swept)
    for j in np.flatnonzero(is_bent).tolist():
        index = np.union1d(index, shared.bbone_column(j)[0])
    table = mesh.influence_table
    bones, weights = table.bones[index], table.weights[index]
    turned_weight = turned & ~is_bent  # (empty slots weigh 0, whatever their bone)
    other_weight = ~turned & ~is_bent
    first = int(class_of[used[moved][0]])  # the turned bones' class
    per_class = np.zeros((index.size, 2))
    for slot in range(bones.shape[1]):
        b, w = bones[:, slot], weights[:, slot]
        per_class[:, first] += np.where(turned_weight[b], w, 0.0)
        per_class[:, 1 - first] += np.where(other_weight[b], w, 0.0)
    return index, per_class


def _measure(linear: F64, shared: _Shared) -> tuple[F64, F64]:
    """``smallest_singular_and_det`` of (N, 9) rows into scratch arrays, in blocks of at most
    _BLOCK_ROWS rows shared out to the thread pool, each thread with its own workspace."""
    n = len(linear)
    smallest, det = shared.scratch("smallest", 1, n)[0], shared.scratch("det", 1, n)[0]
    if n == 0:
        return smallest, det
    blocks = -(-n // _BLOCK_ROWS)
    threads = min(thread_count(), blocks)
    size = -(-n // blocks)
    workspaces = [shared.scratch(f"workspace {t}", WORKSPACE_ROWS, size) for t in range(threads)]

    def share(t: int) -> None:
        for lo in range(t * size, n, threads * size):
            hi = min(lo + size, n)
            smallest_singular_and_det(linear[lo:hi], workspaces[t], (smallest[lo:hi], det[lo:hi]))

    run_all([partial(share, t) for t in range(threads)])
    return smallest, det


#: Matrices per batch of a numeric bone's poses (bounds its scratch arrays).
_BATCH_ROWS = 65536
#: Matrices per call of smallest_singular_and_det: long enough that numpy's per-operation costs
#: (and the thread hand-offs between operations) are small, short enough to stay in cache.
_BLOCK_ROWS = 16384


