# SPDX-License-Identifier: GPL-3.0-or-later
"""The surface a rigger sees at the test poses: per triangle, the area ratio, the stretch (the
largest singular value of the map from the rest triangle's plane to the posed one) and folding
(a face turned against the rotation of the bone that carries it: a dent).

The poses are the pose sweep's (every weighted deform bone turned alone about each axis, both
ways, by the sweep's angles and to its own limits) and the standard stress poses (every deform
bone bent or twisted at once by the test-pose angle).  Under a sweep pose a triangle moves
rigidly unless its vertices' bones fall in different classes of the turn (left at rest, turned,
or carried along by a bone that does not inherit rotation), so each bone's poses are evaluated on
those triangles alone.  numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths.affine import rotation
from .armature_modifier import joint_matrices, recompute_blender_many
from .pose import from_rest
from .pose_sweep import is_moderate, sweep_poses
from .skinned_mesh import SkinnedMesh
from .stress_poses import standard_poses, turned_channels

F64 = NDArray[np.float64]
Ints = NDArray[np.intp]


@dataclass(frozen=True)
class SurfacePose:
    """A test pose the surface is measured at: a sweep pose, or a stress pose (``bone`` -1)."""

    label: str
    bone: int
    moderate: bool


@dataclass
class SurfaceResult:
    """Per triangle the worst value over every pose and over the moderate ones, with the pose."""

    poses: list[SurfacePose]
    triangles: Ints  # (T, 3)
    measured: NDArray[np.bool_]  # (T,) triangles some pose deforms non-rigidly (others keep 1, 1, 1)
    dominant: Ints  # (T,) bone holding most of the triangle's weight, -1 where none
    values: dict[str, F64] = field(default_factory=dict)  # "area", "stretch", "fold" (+ "moderate_...")
    pose_of: dict[str, Ints] = field(default_factory=dict)
    skipped_bbone: int = 0  # (none since B-Bone triangles are posed exactly: kept for the report)
    bbone_measured: int = 0  # triangles touching a B-Bone with segments, posed exactly
    sampled: bool = False  # beyond SURFACE_TRIANGLES: an even stride and the caller's triangles
    deformable: int = 0  # triangles some turn can deform (B-Bone ones included)


# (name, lower is worse, threshold)
_MEASURES = (("area", True), ("stretch", False), ("fold", True))


def lower_is_worse(name: str, values: F64) -> F64:
    """The measure as a value where lower is worse (stretch negated)."""
    return values if name != "stretch" else -values


def _dot(a: F64, b: F64) -> F64:
    """Row-wise dot product over the last axis (3), component by component."""
    out: F64 = np.multiply(a[..., 0], b[..., 0])
    out = out + a[..., 1] * b[..., 1]
    out += a[..., 2] * b[..., 2]
    return out


def _cross(a: F64, b: F64) -> F64:
    """Cross product over the last axis (3), component by component (np.cross is slower)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


@dataclass(frozen=True)
class _RestPlane:
    """Each rest triangle in its own plane: first edge ``(a, 0)``, second ``(b, c)``; unit normal."""

    a: F64  # (n,)
    b: F64
    c: F64
    normal: F64  # (n, 3)
    area2: F64  # (n,) twice the area

    @staticmethod
    def of(e1: F64, e2: F64) -> _RestPlane:
        n = _cross(e1, e2)
        area2 = np.sqrt(_dot(n, n))
        guard = np.maximum(area2, tolerances.DIVISION_GUARD)
        a = np.maximum(np.sqrt(_dot(e1, e1)), tolerances.DIVISION_GUARD)
        return _RestPlane(a, _dot(e1, e2) / a, guard / a, n / guard[..., None], area2)


def _edge_measures(plane: _RestPlane, f1: F64, f2: F64, expected: F64) -> tuple[F64, F64, F64]:
    """Area ratio, stretch and fold cosine from posed edges ``f1, f2`` (n, P, 3) of triangles whose
    rest plane is ``plane`` (per triangle, (n,)), ``expected`` (n, P, 3) the normals they should have.

    The map F from the rest plane sends (1, 0) to ``f1 / a`` and (0, 1) to ``(f2 - (b / a) f1) / c``;
    its singular values are the square roots of its Gram matrix's eigenvalues.
    """
    a, b, c = plane.a[:, None], plane.b[:, None], plane.c[:, None]
    m = _cross(f1, f2)
    posed2 = np.sqrt(_dot(m, m))
    area = posed2 / np.maximum(plane.area2, tolerances.DIVISION_GUARD)[:, None]
    g11 = _dot(f1, f1) / (a * a)
    g12 = (_dot(f1, f2) - (b / a) * _dot(f1, f1)) / (a * c)
    g22 = (_dot(f2, f2) - 2.0 * (b / a) * _dot(f1, f2) + (b / a) ** 2 * _dot(f1, f1)) / (c * c)
    half = 0.5 * (g11 + g22)
    stretch = np.sqrt(np.maximum(half + np.sqrt(np.maximum(0.25 * (g11 - g22) ** 2 + g12 * g12, 0.0)), 0.0))
    ok = posed2 > tolerances.DIVISION_GUARD
    fold = np.where(ok, _dot(m, expected) / np.where(ok, posed2, 1.0), 1.0)
    return area, stretch, fold


def triangle_measures(rest: F64, posed: F64, expected_normal: F64 | None = None) -> tuple[F64, F64, F64]:
    """Area ratio, stretch and fold cosine of triangles.

    Parameters
    ----------
    rest : (T, 3, 3) float64, the three corners of each rest triangle
    posed : (T, 3, 3) float64, the same corners posed
    expected_normal : (T, 3) float64 unit normals the posed faces should have, or None
        (fold then compares with the rest normal)

    Returns
    -------
    area : (T,) posed area over rest area
    stretch : (T,) largest singular value of the 3x2 map from the rest triangle's plane to the posed one
    fold : (T,) cosine between the posed unit normal and ``expected_normal`` (1 for a face
        collapsed to a point or a line)
    """
    rest = np.asarray(rest, dtype=np.float64)
    posed = np.asarray(posed, dtype=np.float64)
    plane = _RestPlane.of(rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0])
    target = plane.normal if expected_normal is None else np.asarray(expected_normal, dtype=np.float64)
    area, stretch, fold = _edge_measures(plane, (posed[:, 1] - posed[:, 0])[:, None],
                                         (posed[:, 2] - posed[:, 0])[:, None], target[:, None])
    return area[:, 0], stretch[:, 0], fold[:, 0]


def _scaled_table(mesh: SkinnedMesh) -> tuple[Ints, F64]:
    """The influence table's bones and its weights divided by each vertex's sum."""
    table = mesh.influence_table
    total = table.weights.sum(axis=1)
    return table.bones, table.weights / np.maximum(total, tolerances.DIVISION_GUARD)[:, None]


def _blend(mesh: SkinnedMesh, vertices: Ints, channels: F64, table: tuple[Ints, F64] | None = None) -> F64:
    """(P, n, 3) armature-space positions of ``vertices`` under each pose's skinning matrices
    ``channels`` (P, J, 4, 4), Blender's way (weights divided by their sum)."""
    bones_all, scaled_all = _scaled_table(mesh) if table is None else table
    bones, scaled = bones_all[vertices], scaled_all[vertices]
    total = mesh.influence_table.weights[vertices].sum(axis=1)
    blended = np.zeros((len(channels), len(vertices), 3, 4))
    for k in range(bones.shape[1]):
        # (P, n, 3, 4) += (n,) weight x the slot bone's matrix in each pose
        blended += scaled[None, :, k, None, None] * channels[:, bones[:, k], :3, :]
    p = mesh.rest_armature[vertices]
    posed: F64 = np.einsum("pnij,nj->pni", blended[..., :3], p) + blended[..., 3]  # (P, n, 3)
    still = total <= tolerances.BLENDER_MIN_CONTRIB
    posed[:, still] = p[still]
    return posed


def _triangle_bones(mesh: SkinnedMesh, triangles: Ints,
                    table: tuple[Ints, F64] | None = None) -> tuple[Ints, F64]:
    """(T, 3K) bone of every weight slot of each triangle's corners (-1 empty) and the weights
    divided by their vertex's sum (``table``: ``_scaled_table(mesh)`` when the caller has it)."""
    bones, scaled = _scaled_table(mesh) if table is None else table
    slot_bones = np.where(mesh.influence_table.weights != 0, bones, -1)
    tb = np.concatenate([slot_bones[triangles[:, c]] for c in range(3)], axis=1)
    tw = np.concatenate([scaled[triangles[:, c]] for c in range(3)], axis=1)
    return tb, tw


def _dominant(tb: Ints, tw: F64) -> Ints:
    """(T,) the bone holding the largest summed weight over each triangle's corners (-1 for none;
    among equals the lowest bone number)."""
    t, slots = tb.shape
    out = np.full(t, -1, dtype=np.intp)
    rows = np.repeat(np.arange(t), slots)
    bones, weights = tb.reshape(-1), tw.reshape(-1)
    used = bones >= 0
    rows, bones, weights = rows[used], bones[used], weights[used]
    if not rows.size:
        return out
    # Sum each (triangle, bone) pair's weights, then keep each triangle's largest sum.
    key = rows.astype(np.int64) * (int(bones.max()) + 1) + bones
    order = np.argsort(key, kind="stable")
    key, weights = key[order], weights[order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    sums = np.add.reduceat(weights, starts)
    pair_row, pair_bone = rows[order][starts], bones[order][starts]
    best = np.lexsort((pair_bone, -sums, pair_row))  # by triangle, the largest sum first
    first = np.concatenate([[True], pair_row[best][1:] != pair_row[best][:-1]])
    out[pair_row[best][first]] = pair_bone[best][first]
    return out


def _turn_classes(mesh: SkinnedMesh) -> list[dict[int, int]]:
    """Per bone ``s``, for every bone ``b`` whose turn moves it (``b`` and its ancestors), the class
    the turn puts ``s`` in: -1 turned with ``b``, else the topmost bone between them (below ``b``)
    that does not inherit rotation, which carries ``s`` along without turning it.  A bone missing
    from the dict stays at rest under that turn."""
    parents = mesh.bones.parents
    inherits = mesh.bones.inherit_rotation if len(mesh.bones.inherit_rotation) else \
        np.ones(len(parents), dtype=bool)
    out: list[dict[int, int]] = []
    for j in range(len(parents)):
        classes: dict[int, int] = {}
        fixed = -1  # the topmost non-inheriting bone seen so far below the current ancestor
        b = j
        while b >= 0:
            classes[b] = fixed
            if not inherits[b]:
                fixed = b
            b = parents[b]
        out.append(classes)
    return out


def _affected(bone_set: Sequence[int], classes: list[dict[int, int]]) -> list[int]:
    """The bones whose turn moves a triangle weighted to ``bone_set`` non-rigidly: those whose
    turn puts the set's bones in different classes (left at rest, turned, carried by the topmost
    bone below the turned one that does not inherit rotation)."""
    candidates: set[int] = set()
    for s in bone_set:
        candidates.update(classes[s])
    return [b for b in candidates if len({classes[s].get(b, -2) for s in bone_set}) > 1]


def _bones_to_triangles(mesh: SkinnedMesh, triangles: Ints, measured: Ints,
                        classes: list[dict[int, int]], slots: Ints | None = None) -> dict[int, Ints]:
    """Per swept bone, the ``measured`` triangles its turn deforms non-rigidly.

    Triangles are grouped by their corners' bone sets: each vertex's set gets a number (few
    distinct sets), a triangle the sorted numbers of its corners (one int64), and the turns
    that deform a group are found once per group.  ``slots`` (V, K') the bones each vertex's
    set holds (-1 none); default: its weighted bones.
    """
    table = mesh.influence_table
    used, local = np.unique(triangles[measured], return_inverse=True)
    if slots is None:
        slot_bones = np.sort(np.where(table.weights[used] != 0, table.bones[used], -1), axis=1)
    else:
        slot_bones = np.sort(slots[used], axis=1)
    vertex_sets, vertex_set = _unique_rows(slot_bones, len(mesh.bones.names))
    corners = np.sort(vertex_set[local.reshape(-1, 3)], axis=1).astype(np.int64)
    base = np.int64(len(vertex_sets))
    keys, inverse = np.unique((corners[:, 0] * base + corners[:, 1]) * base + corners[:, 2], return_inverse=True)
    inverse = inverse.reshape(-1)
    sets = [frozenset(int(b) for b in row if b >= 0) for row in vertex_sets.tolist()]
    per_key: dict[int, list[int]] = {}
    seen: dict[frozenset[int], list[int]] = {}  # many corner triples share one bone set
    for u, key in enumerate(keys.tolist()):
        c2, rest_ = key % int(base), key // int(base)
        bone_set = sets[c2] | sets[rest_ % int(base)] | sets[rest_ // int(base)]
        if len(bone_set) < 2:
            continue
        if bone_set not in seen:
            seen[bone_set] = _affected(sorted(bone_set), classes)
        for b in seen[bone_set]:
            per_key.setdefault(b, []).append(u)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(len(keys) + 1))
    return {b: np.sort(np.concatenate([measured[order[starts[u]:starts[u + 1]]] for u in us]))
            for b, us in per_key.items()}


def _unique_rows(rows: Ints, count: int) -> tuple[Ints, Ints]:
    """Distinct rows of small non-negative-or--1 integers below ``count`` and each row's number:
    packed into one int64 where they fit (a sort of numbers, not of rows)."""
    k = rows.shape[1]
    if (count + 1) ** k >= 2 ** 62 and rows.size:
        # Renumbered over the values present (a rig weights few of its bones), they may pack.
        values, number = np.unique(rows, return_inverse=True)
        packed_rows = number.reshape(rows.shape) - 1
        if (len(values) + 1) ** k < 2 ** 62:
            _, inverse = _unique_rows(packed_rows, len(values))
            first = np.zeros(int(inverse.max(initial=-1)) + 1, dtype=np.intp)
            first[inverse[::-1]] = np.arange(len(inverse))[::-1]
            return rows[first], inverse
    if (count + 1) ** k < 2 ** 62:
        packed = np.zeros(len(rows), dtype=np.int64)
        for c in range(k):
            packed = packed * (count + 1) + (rows[:, c] + 1)
        _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
        return rows[first], inverse.reshape(-1)
    distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    return distinct, inverse.reshape(-1)


class _Worst:
    """Running worst values per triangle over poses (all poses and moderate ones)."""

    def __init__(self, count: int) -> None:
        self.values = {f"{pre}{m}": np.full(count, 1.0) for m, _ in _MEASURES for pre in ("", "moderate_")}
        self.pose = {k: np.full(count, -1, dtype=np.intp) for k in self.values}

    def update(self, tris: Ints, measures: dict[str, F64], pose_ids: Sequence[int],
               moderate: Sequence[bool]) -> None:
        """``measures[name]``: (n, P) values of triangles ``tris`` at poses ``pose_ids``."""
        mod = np.asarray(moderate, dtype=bool)
        ids = np.asarray(pose_ids, dtype=np.intp)
        rows = np.arange(len(tris))
        for name, _ in _MEASURES:
            lower = lower_is_worse(name, measures[name])
            for pre, sel in (("", np.ones(len(ids), dtype=bool)), ("moderate_", mod)):
                if not sel.any():
                    continue
                key = pre + name
                chosen = lower[:, sel]
                column = np.argmin(chosen, axis=1)
                best = chosen[rows, column]
                better = best < lower_is_worse(name, self.values[key][tris])
                self.values[key][tris[better]] = lower_is_worse(name, best[better])
                self.pose[key][tris[better]] = ids[sel][column[better]]


#: Triangles measured per block (bounds the (n, P, 3) arrays' memory).
_BLOCK = 32768


@dataclass(frozen=True)
class _Mesh:
    """What every block of one surface measurement reads."""

    tri: Ints  # (T, 3)
    points: F64  # (V, 3) rest, armature space
    homogeneous: F64  # (V, 4)
    plane: _RestPlane  # of every triangle
    dominant: Ints  # (T,)
    bones: Ints  # (V, K) influence table
    scaled: F64  # (V, K) normalised weights


def _deformable(mesh: SkinnedMesh, tri: Ints) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(T,) triangles some turn can deform (their corners weighted, not all to one bone alone),
    and (T,) those among them touching a B-Bone with segments.  Vertex by vertex, then one
    gather per corner: no per-triangle table."""
    flat = mesh.flat_columns
    table = mesh.influence_table
    heaviest = table.bones[np.arange(mesh.vertex_count), np.argmax(table.weights, axis=1)]
    # The one bone of a vertex weighted to one bone alone; -2 for several, -3 for none.
    single = np.where(flat.count == 1, heaviest, np.where(flat.count > 1, -2, -3))
    weighted = flat.contrib > tolerances.BLENDER_MIN_CONTRIB
    bent_bones = mesh.bones.bbone_segments > 1
    bent = (bent_bones[table.bones] & (table.weights != 0)).any(axis=1)
    s0, s1, s2 = single[tri[:, 0]], single[tri[:, 1]], single[tri[:, 2]]
    rigid = (s0 == s1) & (s1 == s2) & (s0 >= 0)
    ok = weighted[tri[:, 0]] & weighted[tri[:, 1]] & weighted[tri[:, 2]] & ~rigid
    touches = bent[tri[:, 0]] | bent[tri[:, 1]] | bent[tri[:, 2]]
    return ok, ok & touches


def measure_surface(mesh: SkinnedMesh, degrees: Sequence[float], test_pose_degrees: float,
                    keep: NDArray[np.bool_] | None = None) -> SurfaceResult:
    """Area ratio, stretch and fold of every triangle at the sweep's and the stress poses.

    Triangles touching a vertex without deform weight (unweighted-vertices reports those) are left
    out.  Those touching a vertex weighted to a B-Bone with segments are posed exactly (``_Exact``:
    Blender's Armature modifier recomputed on their vertices, the B-Bones' curves included) at
    the turns that bend those B-Bones (their handles left behind) and at the stress poses;
    beyond ``SURFACE_BBONE_TRIANGLES`` of them, an even stride plus every ``keep`` one.
    Beyond ``SURFACE_TRIANGLES`` deformable triangles, an even stride of them is measured, plus
    every ``keep`` (T,) triangle (the caller's: those across a weight-step seam).
    """
    tri = np.asarray(mesh.triangles, dtype=np.intp).reshape(-1, 3)
    t = len(tri)
    poses = sweep_poses(mesh, degrees) if t else []
    surface_poses = [SurfacePose(p.label(mesh.bones.names), p.bone, is_moderate(p)) for p in poses]
    result = SurfaceResult(surface_poses, tri, np.zeros(t, dtype=bool), np.full(t, -1, dtype=np.intp))
    worst = _Worst(t)
    result.values, result.pose_of = worst.values, worst.pose
    if t == 0:
        return result
    deformable, bent = _deformable(mesh, tri)
    result.deformable = int(deformable.sum())
    sample = np.flatnonzero(deformable)
    if len(sample) > tolerances.SURFACE_TRIANGLES:
        stride = -(-len(sample) // tolerances.SURFACE_TRIANGLES)
        chosen = np.zeros(t, dtype=bool)
        chosen[sample[::stride]] = True
        if keep is not None:
            chosen[sample[keep[sample]]] = True
        result.sampled = True
        sample = np.flatnonzero(chosen)
    on = np.flatnonzero(bent[sample])
    if len(on) > tolerances.SURFACE_BBONE_TRIANGLES:
        stride = -(-len(on) // tolerances.SURFACE_BBONE_TRIANGLES)
        chosen = ~bent[sample]
        chosen[on[::stride]] = True
        if keep is not None:
            chosen[on[keep[sample[on]]]] = True
        result.sampled = True
        sample = sample[chosen]
    if not sample.size:
        return result
    # Everything below is per sampled triangle (position k stands for triangle sample[k]).
    stri = tri[sample]
    points = mesh.rest_armature
    plane = _RestPlane.of(points[stri[:, 1]] - points[stri[:, 0]], points[stri[:, 2]] - points[stri[:, 0]])
    large = plane.area2 > tolerances.SURFACE_MIN_AREA_RELATIVE * max(float(np.median(plane.area2)),
                                                                     tolerances.DIVISION_GUARD)
    if not large.all():
        sample, stri, plane = sample[large], stri[large], _subplane(plane, np.flatnonzero(large))
    bones, scaled = _scaled_table(mesh)
    tb, tw = _triangle_bones(mesh, stri, (bones, scaled))
    dominant = _dominant(tb, tw)
    result.dominant[sample] = dominant
    data = _Mesh(stri, points, np.column_stack([points, np.ones(len(points))]), plane, dominant, bones, scaled)
    by_bone: dict[int, list[int]] = {}
    for k, p in enumerate(poses):
        by_bone.setdefault(p.bone, []).append(k)
    classes = _turn_classes(mesh)
    on_bbone = bent[sample]
    result.bbone_measured = int(on_bbone.sum())
    tris_of = _bones_to_triangles(mesh, stri, np.flatnonzero(~on_bbone), classes)
    exact = _Exact.of(mesh, data, np.flatnonzero(on_bbone), classes) if on_bbone.any() else None
    rest, rest_inverse = mesh.bones.rest, mesh.bones.rest_inverse
    for bone, pose_ids in by_bone.items():
        rotations = np.array([rotation(poses[k].axis, np.radians(poses[k].degrees)) for k in pose_ids])
        moderate = [surface_poses[k].moderate for k in pose_ids]
        tris = tris_of.get(bone)
        if exact is not None and bone in exact.tris_of:
            # Triangles on a B-Bone this turn bends (its handles left behind) go the exact way; on
            # B-Bones it moves whole (bone and handles in one class) they are plain bones' triangles.
            on_bent = exact.tris_of[bone]
            bending = exact.bent_by(bone, classes, on_bent)
            bent_tris = on_bent[bending]
            if bent_tris.size:
                worst.update(sample[bent_tris], exact.measures(bent_tris, turned_channels(mesh.bones, bone, rotations)),
                             pose_ids, moderate)
                result.measured[sample[bent_tris]] = True
            if not bending.all():
                tris = np.union1d(on_bent[~bending], tris if tris is not None else np.zeros(0, dtype=np.intp))
        if tris is None or not tris.size:
            continue
        # Under this turn a bone is turned (-1), at rest (absent) or carried by a bone that does
        # not inherit rotation (that bone's number): two classes unless some bone is carried.
        under = [c.get(bone, -2) for c in classes]
        turned = np.array([u == -1 for u in under], dtype=bool)
        two_classes = all(u < 0 for u in under)
        turn = rest[bone] @ rotations @ rest_inverse[bone]  # (P, 4, 4), turned_channels' own
        channels = None if two_classes else turned_channels(mesh.bones, bone, rotations)  # (P, J, 4, 4)
        for first in range(0, len(tris), _BLOCK):
            block = tris[first:first + _BLOCK]
            if channels is None:
                measures = _two_class_block(data, block, turn, turned)
            else:
                measures = _general_block(mesh, data, block, channels)
            worst.update(sample[block], measures, pose_ids, moderate)
        result.measured[sample[tris]] = True
    # The stress poses: every deform bone at once (fingers and spine included: no rig is posed so;
    # INFO only).
    stress = standard_poses(mesh.bones, test_pose_degrees)
    if stress:
        base = len(surface_poses)
        surface_poses += [SurfacePose(p.name, -1, False) for p in stress]
        channels = np.stack([p.channel for p in stress])
        ids, flags = list(range(base, base + len(stress))), [False] * len(stress)
        plain = np.flatnonzero(~on_bbone)
        for first in range(0, len(plain), _BLOCK):
            block = plain[first:first + _BLOCK]
            worst.update(sample[block], _general_block(mesh, data, block, channels), ids, flags)
        if exact is not None:
            worst.update(sample[exact.tris], exact.measures(exact.tris, channels), ids, flags)
        result.measured[sample] = True
    return result


def _bbone_slots(mesh: SkinnedMesh) -> Ints:
    """(V, 3K) each vertex's weighted bones and, for each B-Bone with segments among them, its
    handle bones (-1 none): every bone whose pose its position depends on (a turn that leaves a
    B-Bone's handles behind bends it)."""
    table = mesh.influence_table
    slots = np.where(table.weights != 0, table.bones, -1)
    count = len(mesh.bones.names)
    prev = np.full(count + 1, -1, dtype=np.intp)  # (the last entry answers the empty slot's -1)
    nxt = np.full(count + 1, -1, dtype=np.intp)
    for j, rb in enumerate(mesh.bones.bbones or ()):
        if rb is not None:
            prev[j], nxt[j] = rb.prev_bone, rb.next_bone
    out = np.sort(np.concatenate([slots, prev[slots], nxt[slots]], axis=1), axis=1)
    out[:, 1:][out[:, 1:] == out[:, :-1]] = -1  # each bone once (the sort puts -1 first)
    out = np.sort(out, axis=1)
    width = max(int((out >= 0).sum(axis=1).max(initial=1)), 1)
    trimmed: Ints = out[:, -width:]
    return trimmed


@dataclass
class _Exact:
    """The triangles touching a B-Bone with segments, posed exactly: Blender's Armature modifier
    recomputed on their vertices alone (``armature_modifier.recompute_blender_many``, every B-Bone
    joint's matrix at each pose), the fold measured against the joint carrying the triangle."""

    mesh: SkinnedMesh
    data: _Mesh
    tris: Ints  # (n,) positions in ``data.tri``
    sub: SkinnedMesh  # the rig on those triangles' vertices alone
    local: Ints  # (T_data, 3) each triangle's corners in ``sub`` (-1 outside ``tris``)
    joint: Ints  # (T_data,) the B-Bone joint (in ``joint_matrices``' order) carrying it, -1 a plain bone
    tris_of: dict[int, Ints]  # per swept bone, the ``tris`` its turn deforms
    #: The blend layout per ``sub`` vertex: (V_sub, K) run numbers (bones, then B-Bone joints) and
    #: their weights times Blender's ``a / sum w``; None where the modifier does not blend linearly.
    table: tuple[Ints, F64] | None = None

    @staticmethod
    def of(mesh: SkinnedMesh, data: _Mesh, tris: Ints, classes: list[dict[int, int]]) -> _Exact:
        verts, inverse = np.unique(data.tri[tris], return_inverse=True)
        local = np.full(data.tri.shape, -1, dtype=np.intp)
        local[tris] = inverse.reshape(-1, 3)
        sub = mesh.vertex_subset(verts)
        joint = np.full(len(data.tri), -1, dtype=np.intp)
        first_joint = len(mesh.bones.names)
        if mesh.modifier.use_vertex_groups and not mesh.modifier.preserve_volume:
            columns = {bone: idx for bone, idx, _ in reversed(sub.deform_columns)}
            for bone, first in sub.blend_layout.joints.items():
                at = tris[data.dominant[tris] == bone]
                index, blend = sub.bbone_mapping[bone]
                idx = columns[bone]
                for c in range(3):
                    v = local[at, c]
                    pos = np.minimum(np.searchsorted(idx, v), len(idx) - 1)
                    hit = (idx[pos] == v) & (joint[at] < 0)
                    joint[at[hit]] = first - first_joint + index[pos[hit]] + (blend[pos[hit]] >= 0.5)
        tris_of = _bones_to_triangles(mesh, data.tri, tris, classes, _bbone_slots(mesh))
        table = None
        if mesh.modifier.use_vertex_groups and not mesh.modifier.preserve_volume:
            layout = sub.blend_layout
            runs = layout.runs
            run_of = np.repeat(runs.bone, np.diff(runs.starts))
            order = np.argsort(runs.vertex, kind="stable")
            vertex = runs.vertex[order]
            counts = np.bincount(vertex, minlength=sub.vertex_count)
            slot = np.arange(len(vertex)) - np.repeat(np.cumsum(counts) - counts, counts)
            width = max(int(counts.max(initial=1)), 1)
            table_run = np.zeros((sub.vertex_count, width), dtype=np.intp)
            table_w = np.zeros((sub.vertex_count, width))
            table_run[vertex, slot] = run_of[order]
            table_w[vertex, slot] = layout.scaled[order]
            table = (table_run, table_w)
        return _Exact(mesh, data, tris, sub, local, joint, tris_of, table)

    def bent_by(self, bone: int, classes: list[dict[int, int]], block: Ints) -> NDArray[np.bool_]:
        """(n,) whether each triangle of ``block`` touches a B-Bone the turn of ``bone`` bends: one
        whose own bone and handles the turn puts in different classes (``_turn_classes``)."""
        bbones = self.mesh.bones.bbones or ()
        bent = [j for j, rb in enumerate(bbones) if rb is not None and len(
            {classes[k].get(bone, -2) for k in (j, rb.prev_bone, rb.next_bone) if k >= 0}) > 1]
        if not bent:
            return np.zeros(len(block), dtype=bool)
        table = self.sub.influence_table
        on = (np.isin(table.bones, bent) & (table.weights != 0)).any(axis=1)  # (V_sub,)
        out: NDArray[np.bool_] = on[self.local[block]].any(axis=1)
        return out

    def _posed(self, block: Ints, channels: F64,
               joints: list[tuple[F64, NDArray[np.bool_]]] | None) -> tuple[F64, Ints]:
        """(P, n_v, 3) armature-space positions of the vertices of ``block`` at ``channels``, and
        each triangle's corners among them (n, 3): the linear blend over the layout's runs,
        ``p + sum_k s_k (M_k p - p)`` (``s_k`` the weight times ``a / sum w``), B-Bone joints by
        their matrices; else ``recompute_blender_many`` on every vertex of ``sub``."""
        if self.table is None:
            recomputed = recompute_blender_many(self.sub, from_rest(channels), joints)
            m = self.mesh.mesh_to_armature
            return np.stack([r.positions for r in recomputed]) @ m[:3, :3].T + m[:3, 3], self.local[block]
        verts, inverse = np.unique(self.local[block], return_inverse=True)
        runs, weights = self.table[0][verts], self.table[1][verts]  # (n_v, K)
        matrices = channels if joints is None else np.concatenate([channels, np.stack([j for j, _ in joints])], axis=1)
        # Runs no pose moves add nothing (s (I p - p) = 0): only the moving slots are blended.
        moving = np.any(matrices != np.eye(4), axis=(0, 2, 3))[runs] & (weights != 0)
        order = np.argsort(~moving, axis=1, kind="stable")[:, :max(int(moving.sum(axis=1).max(initial=1)), 1)]
        keep = np.take_along_axis(moving, order, axis=1)
        runs = np.take_along_axis(runs, order, axis=1)
        weights = np.where(keep, np.take_along_axis(weights, order, axis=1), 0.0)
        p = self.sub.rest_armature[verts]
        posed: F64 = np.broadcast_to(p, (len(channels), *p.shape)).copy()
        for k in range(runs.shape[1]):
            rows = np.flatnonzero(keep[:, k])  # (the moving slots come first: fewer rows each slot)
            m = matrices[:, runs[rows, k], :3, :]  # (P, r, 3, 4)
            q = p[rows]
            # prij,rj->pri: each vertex by its slot's matrix; the slot adds s (M p - p).
            moved = np.einsum("prij,rj->pri", m[..., :3], q) + m[..., 3] - q
            posed[:, rows] += weights[rows, k][None, :, None] * moved
        return posed, inverse.reshape(-1, 3)

    def measures(self, block: Ints, channels: F64) -> dict[str, F64]:
        """The measures of ``block`` (positions in ``data.tri``, among ``tris``) at ``channels``."""
        sub = self.sub
        joints = None
        if sub.blend_layout.joints and sub.modifier.use_vertex_groups and not sub.modifier.preserve_volume:
            joints = joint_matrices(sub, from_rest(channels))
        posed, local = self._posed(block, channels, joints)
        f1 = (posed[:, local[:, 1]] - posed[:, local[:, 0]]).transpose(1, 0, 2)  # (n, P, 3)
        f2 = (posed[:, local[:, 2]] - posed[:, local[:, 0]]).transpose(1, 0, 2)
        plane = _subplane(self.data.plane, block)
        rot = channels[:, np.maximum(self.data.dominant[block], 0), :3, :3]  # (P, n, 3, 3)
        joint = self.joint[block]
        if joints is not None and (joint >= 0).any():
            on = np.flatnonzero(joint >= 0)
            rot[:, on] = np.stack([at[joint[on], :3, :3] for at, _ in joints])
        expected = np.einsum("pnij,nj->npi", rot, plane.normal)
        expected /= np.maximum(np.linalg.norm(expected, axis=2), tolerances.DIVISION_GUARD)[..., None]
        area, stretch, fold = _edge_measures(plane, f1, f2, expected)
        return {"area": area, "stretch": stretch, "fold": fold}


def _two_class_block(data: _Mesh, block: Ints, turn: F64, turned: NDArray[np.bool_]) -> dict[str, F64]:
    """The measures of ``block`` under poses whose every bone is either at rest or turned by
    ``turn`` (P, 4, 4): a vertex with the fraction ``f`` of its weight on turned bones moves to
    ``p + f D p~`` with ``D = turn - I``, so a posed edge is the rest edge plus ``D`` applied to
    ``f_b p~_b - f_a p~_a``, one (n, 4) x (4, 3P) product for every pose at once."""
    corners = data.tri[block]
    q = data.homogeneous

    def turned_weight(v: Ints) -> F64:
        """(n, 1) each vertex's normalised weight on turned bones, slot by slot."""
        bones, scaled = data.bones[v], data.scaled[v]
        out = np.zeros(len(v))
        for k in range(bones.shape[1]):
            out += np.where(turned[bones[:, k]], scaled[:, k], 0.0)
        return out[:, None]

    fa, fb, fc = (turned_weight(corners[:, c]) for c in range(3))
    qa, qb, qc = (q[corners[:, c]] for c in range(3))
    u1, u2 = fb * qb - fa * qa, fc * qc - fa * qa  # (n, 4)
    d = (turn - np.eye(4))[:, :3, :]  # (P, 3, 4)
    dcat = d.transpose(2, 0, 1).reshape(4, -1)  # (4, 3P): column p*3+i is row i of D_p
    p = data.points
    e1 = (p[corners[:, 1]] - p[corners[:, 0]])[:, None, :]
    e2 = (p[corners[:, 2]] - p[corners[:, 0]])[:, None, :]
    f1 = e1 + (u1 @ dcat).reshape(len(block), -1, 3)  # (n, P, 3)
    f2 = e2 + (u2 @ dcat).reshape(len(block), -1, 3)
    plane = _subplane(data.plane, block)
    normal = plane.normal[:, None, :]
    rotated = (plane.normal[None] @ turn[:, :3, :3].transpose(0, 2, 1)).transpose(1, 0, 2)  # carried by the turn
    dominant = data.dominant[block]
    expected = np.where(turned[np.maximum(dominant, 0)][:, None, None], rotated, normal)
    area, stretch, fold = _edge_measures(plane, f1, f2, expected)
    return {"area": area, "stretch": stretch, "fold": fold}


def _general_block(mesh: SkinnedMesh, data: _Mesh, block: Ints, channels: F64) -> dict[str, F64]:
    """The measures of ``block`` at poses ``channels`` (P, J, 4, 4) by the blend of every corner."""
    corners = data.tri[block]
    verts, local = np.unique(corners, return_inverse=True)
    local = local.reshape(-1, 3)
    posed = _blend(mesh, verts, channels, (data.bones, data.scaled)).transpose(1, 0, 2)  # (n_v, P, 3)
    f1 = posed[local[:, 1]] - posed[local[:, 0]]
    f2 = posed[local[:, 2]] - posed[local[:, 0]]
    plane = _subplane(data.plane, block)
    rot = channels[:, np.maximum(data.dominant[block], 0), :3, :3]  # (P, n, 3, 3)
    expected = np.einsum("pnij,nj->npi", rot, plane.normal)
    area, stretch, fold = _edge_measures(plane, f1, f2, expected)
    return {"area": area, "stretch": stretch, "fold": fold}


def _subplane(plane: _RestPlane, block: Ints) -> _RestPlane:
    return _RestPlane(plane.a[block], plane.b[block], plane.c[block], plane.normal[block], plane.area2[block])
