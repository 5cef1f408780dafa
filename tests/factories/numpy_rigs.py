# SPDX-License-Identifier: GPL-3.0-or-later
"""Skinned meshes built in numpy (no bpy) for the core tier's rule tests.

:func:`chain` lays bones head to tail along an axis (Blender's bones point
along their own local Y); :func:`mirrored_arms` adds left/right chains along
+X/-X.  :func:`rest_matrix` is Blender's ``vec_roll_to_mat3`` (armature.cc)
written out here, so bone frames do not come from the code under test.
:func:`tube` and :func:`strip` give rest positions with edges;
:func:`chain_weights` piecewise-linear weights along the chain.
:func:`channels` walks the hierarchy in plain loops (``pose_j = pose_parent
rest_parent^-1 rest_j basis_j``, ``channel_j = pose_j rest_j^-1``).

The "Blender" positions come from :func:`blender_positions`, a plain per-vertex
Python loop of the Armature modifier's documented formula (armature_deform.cc):
in armature space ``co' = co + a sum_j w_j (C_j co - co) / sum_j w_j`` over
groups naming a deform bone, exact zeros skipped, nothing moved when the sum is
<= 1e-4, ``a`` the mask weight; rounded to float32 as Blender stores it.
:func:`engine_positions` is the strict engine's ``sum_{top N} w_j C_j co``
(no renormalising, an unweighted vertex lands on the armature origin).
Neither uses ``skin_audit`` code.  :func:`skinned_mesh` assembles a
:class:`~skin_audit.core.audit.skinned_mesh.SkinnedMesh` from these parts.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skin_audit.core.audit.pose import Pose
from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings, Bones, SkinnedMesh

F64 = NDArray[np.float64]
Vec3 = tuple[float, float, float]
#: Blender's own rule: a vertex whose deform weights sum to <= this stays put.
MIN_CONTRIB = 1e-4


@dataclass(frozen=True)
class BoneRow:
    """One bone in armature space; ``parent`` names a bone listed before it."""

    name: str
    head: Vec3
    tail: Vec3
    parent: str | None = None
    roll: float = 0.0
    use_deform: bool = True
    bbone_segments: int = 1
    #: Per local axis (x, y, z): (min, max) radians of a rotation limit, or None.
    limits: tuple[tuple[float, float] | None, ...] = (None, None, None)
    inherit_rotation: bool = True


# ------------------------------------------------------------------ bones


def _axis_angle(axis: Sequence[float], angle: float) -> F64:
    """3x3 rotation about a unit ``axis`` (Rodrigues), written out."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    return np.array([[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
                     [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
                     [t * x * z - s * y, t * y * z + s * x, t * z * z + c]])


def rest_matrix(head: Sequence[float], tail: Sequence[float], roll: float = 0.0) -> F64:
    """(4, 4) ``bone.matrix_local``: Blender's vec_roll_to_mat3_normalized, then the head.

    Blender's matrices are column-major (``m[col][row]``); column 1 (Y) is the
    bone direction.
    """
    d = np.asarray(tail, dtype=np.float64) - np.asarray(head, dtype=np.float64)
    x, y, z = (d / np.linalg.norm(d)).tolist()
    theta = 1.0 + y
    theta_alt = x * x + z * z
    if theta > 1e-5 or theta_alt > 2.5e-4:  # SAFE_THRESHOLD, THRESHOLD of armature.cc
        if theta <= 1e-5:
            theta = theta_alt * 0.5 + theta_alt * theta_alt * 0.125
        cols = [(1.0 - x * x / theta, -x, -x * z / theta), (x, y, z), (-x * z / theta, -z, 1.0 - z * z / theta)]
        b = np.array(cols).T  # rows from Blender's columns
    else:  # pointing along -Y
        b = np.diag([-1.0, -1.0, 1.0])
    m = np.eye(4)
    m[:3, :3] = _axis_angle((x, y, z), roll) @ b
    m[:3, 3] = head
    return m


def chain(names: Sequence[str], length: float = 2.0, axis: Vec3 = (0.0, 1.0, 0.0),
          start: Vec3 = (0.0, 0.0, 0.0), parent: str | None = None, roll: float = 0.0) -> list[BoneRow]:
    """Bones of equal length head to tail from ``start`` along ``axis``, each the parent of the next."""
    step = np.asarray(axis, dtype=np.float64) * (length / len(names))
    s = np.asarray(start, dtype=np.float64)
    return [BoneRow(n, tuple((s + k * step).tolist()), tuple((s + (k + 1) * step).tolist()),
                    names[k - 1] if k else parent, roll) for k, n in enumerate(names)]


def mirrored_arms(names: Sequence[str] = ("Arm", "Hand"), length: float = 2.0, start: Vec3 = (0.0, 0.0, 0.0),
                  parent: str | None = None, suffixes: tuple[str, str] = (".L", ".R"),
                  right_roll: float = 0.0) -> list[BoneRow]:
    """A left chain along +X (``Arm.L``, ...) and its mirror along -X (``Arm.R``, ...).

    Blender's mirror of a bone along +X with roll 0 is the bone along -X with
    roll 0; ``right_roll`` rolls every right bone off that.
    """
    left = chain([n + suffixes[0] for n in names], length, (1.0, 0.0, 0.0), start, parent)
    mirrored_start = (-start[0], start[1], start[2])
    right = chain([n + suffixes[1] for n in names], length, (-1.0, 0.0, 0.0), mirrored_start, parent, right_roll)
    return left + right


def bones_table(rows: Sequence[BoneRow]) -> Bones:
    """:class:`Bones` from rows (armature space)."""
    names = tuple(r.name for r in rows)
    if len(set(names)) != len(names):
        raise ValueError(f"bone names must be unique, got {names}")
    index = {n: i for i, n in enumerate(names)}
    parents = []
    for i, r in enumerate(rows):
        if r.parent is not None and index.get(r.parent, i) >= i:
            raise ValueError(f"bone {r.name!r}: parent {r.parent!r} must be listed before it")
        parents.append(-1 if r.parent is None else index[r.parent])
    rest = np.array([rest_matrix(r.head, r.tail, r.roll) for r in rows])
    j = len(rows)
    return Bones(
        names=names, parents=tuple(parents), use_deform=np.array([r.use_deform for r in rows], dtype=bool),
        rest=rest,
        bbone_segments=np.array([r.bbone_segments for r in rows], dtype=np.int_),
        use_envelope_multiply=np.zeros(j, dtype=bool),
        heads=np.array([r.head for r in rows], dtype=np.float64),
        tails=np.array([r.tail for r in rows], dtype=np.float64),
        limits=tuple(tuple(r.limits) for r in rows),
        inherit_rotation=np.array([r.inherit_rotation for r in rows], dtype=bool),
    )


def rotation(axis: str, radians: float) -> F64:
    """(4, 4) rotation about the local ``axis`` ('x', 'y' or 'z')."""
    m = np.eye(4)
    m[:3, :3] = _axis_angle({"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}[axis], radians)
    return m


@functools.lru_cache(maxsize=4096)
def _rest_inverse(head: Vec3, tail: Vec3, roll: float) -> F64:
    """``np.linalg.inv`` of a bone's rest matrix, once per bone a run (read only): every LAPACK solve
    wakes OpenBLAS's threads (core/maths/parallel), and the rigs are built from the same bones again
    and again."""
    inv: F64 = np.linalg.inv(rest_matrix(head, tail, roll))
    inv.setflags(write=False)
    return inv


def channels(rows: Sequence[BoneRow], basis: Mapping[str, ArrayLike] | None = None) -> F64:
    """(J, 4, 4) ``pose_bone.matrix_channel`` for local pose ``basis`` matrices (bone frame, about the head).

    Plain loops over the hierarchy: ``pose_j = pose_parent rest_parent^-1 rest_j basis_j``;
    a bone with Inherit Rotation off keeps its rest orientation (its head still follows; exact
    when its parents do not scale, as Blender keeps the parent's scale).
    """
    basis = basis or {}
    rest = [rest_matrix(r.head, r.tail, r.roll) for r in rows]
    rest_inv = [_rest_inverse(tuple(map(float, r.head)), tuple(map(float, r.tail)), float(r.roll)) for r in rows]
    index = {r.name: i for i, r in enumerate(rows)}
    pose: list[F64] = []
    for i, r in enumerate(rows):
        local = np.asarray(basis.get(r.name, np.eye(4)), dtype=np.float64)
        if r.parent is None:
            p = rest[i] @ local
        else:
            k = index[r.parent]
            p = pose[k] @ rest_inv[k] @ rest[i] @ local
            if not r.inherit_rotation:
                p = p.copy()
                p[:3, :3] = (rest[i] @ local)[:3, :3]
        pose.append(p)
    return np.array([p @ m_inv for p, m_inv in zip(pose, rest_inv, strict=True)])


# ------------------------------------------------------------------ meshes


def tube(rings: int = 9, segments: int = 8, radius: float = 0.5, length: float = 2.0,
         start: Vec3 = (0.0, 0.0, 0.0), axis: str = "y") -> tuple[F64, NDArray[np.intp]]:
    """Open tube about a line through ``start`` along +``axis`` ('x', '-x' or 'y'), ring-major.

    Returns
    -------
    rest : (rings * segments, 3) float64
    edges : (E, 2) intp, around each ring and along the tube
    """
    a = 2.0 * np.pi * np.arange(segments) / segments
    along = np.repeat(np.linspace(0.0, length, rings), segments)
    u, w = np.tile(radius * np.cos(a), rings), np.tile(radius * np.sin(a), rings)
    if axis == "y":
        pts = np.column_stack([u, along, w])
    elif axis in ("x", "-x"):
        sign = 1.0 if axis == "x" else -1.0
        pts = np.column_stack([sign * along, u, w])
    else:
        raise ValueError(f"axis must be 'x', '-x' or 'y', got {axis!r}")
    pts += np.asarray(start, dtype=np.float64)
    ring_edges = [(r * segments + s, r * segments + (s + 1) % segments) for r in range(rings) for s in range(segments)]
    long_edges = [(r * segments + s, (r + 1) * segments + s) for r in range(rings - 1) for s in range(segments)]
    return pts, np.array(ring_edges + long_edges, dtype=np.intp).reshape(-1, 2)


def strip(points: int = 11, length: float = 2.0, width: float = 0.2) -> tuple[F64, NDArray[np.intp]]:
    """A ladder of two rows of ``points`` along +Y at x = -width/2 and +width/2 (vertex 2i, 2i+1)."""
    y = np.linspace(0.0, length, points)
    pts = np.zeros((2 * points, 3))
    pts[0::2, 0], pts[1::2, 0] = -width / 2, width / 2
    pts[0::2, 1] = pts[1::2, 1] = y
    edges = [(2 * i, 2 * i + 1) for i in range(points)] + \
            [(2 * i + s, 2 * i + 2 + s) for i in range(points - 1) for s in (0, 1)]
    return pts, np.array(edges, dtype=np.intp)


def chain_weights(along: ArrayLike, names: Sequence[str], length: float = 2.0) -> dict[str, F64]:
    """Per bone, (V,) weights: piecewise linear between bone middles (sum 1, at most 2 bones a vertex)."""
    t_all = np.asarray(along, dtype=np.float64)
    n = len(names)
    mids = (np.arange(n) + 0.5) * length / n
    t = np.interp(t_all, mids, np.arange(n, dtype=np.float64))
    lo = np.floor(t).astype(np.int64)
    frac = t - lo
    return {name: np.where(lo == k, 1.0 - frac, 0.0) + np.where(lo + 1 == k, frac, 0.0)
            for k, name in enumerate(names)}


# ------------------------------------------------------------ the two truths


def blender_positions(rest: ArrayLike, group_names: Sequence[str], weights: ArrayLike, rows: Sequence[BoneRow],
                      channel: ArrayLike, mesh_to_armature: ArrayLike | None = None, mask_group: str = "",
                      invert_mask: bool = False, float32: bool = True) -> F64:
    """(V, 3) Blender's Armature modifier (vertex groups, no Preserve Volume), one vertex at a time.

    Plain Python floats and loops over the documented formula; nothing from ``skin_audit``.
    """
    co_all = np.asarray(rest, dtype=np.float64).tolist()
    w = np.asarray(weights, dtype=np.float32)
    c = np.asarray(channel, dtype=np.float64).tolist()
    pre = np.eye(4) if mesh_to_armature is None else np.asarray(mesh_to_armature, dtype=np.float64)
    post = (np.eye(4) if mesh_to_armature is None else np.linalg.inv(pre)).tolist()  # (no solve for the identity)
    pre_l = pre.tolist()
    deform = {r.name: j for j, r in enumerate(rows) if r.use_deform}

    def apply(m: list[list[float]], p: list[float]) -> list[float]:
        return [m[i][0] * p[0] + m[i][1] * p[1] + m[i][2] * p[2] + m[i][3] for i in range(3)]

    out = []
    for v, co_mesh in enumerate(co_all):
        co = apply(pre_l, co_mesh)
        acc, contrib = [0.0, 0.0, 0.0], 0.0
        for g, name in enumerate(group_names):
            j = deform.get(name)
            weight = float(w[g, v])
            if j is None or weight == 0.0:
                continue
            moved = apply(c[j], co)
            for i in range(3):
                acc[i] += weight * (moved[i] - co[i])
            contrib += weight
        if contrib > MIN_CONTRIB:
            a = 1.0
            if mask_group:
                a = float(w[list(group_names).index(mask_group), v])
                a = 1.0 - a if invert_mask else a
            co = [co[i] + a * acc[i] / contrib for i in range(3)]
        out.append(apply(post, co))
    result = np.array(out, dtype=np.float64).reshape(-1, 3)
    return result.astype(np.float32).astype(np.float64) if float32 else result


def engine_positions(rest: ArrayLike, group_names: Sequence[str], weights: ArrayLike, rows: Sequence[BoneRow],
                     channel: ArrayLike, max_influences: int = 4, mesh_to_armature: ArrayLike | None = None) -> F64:
    """(V, 3) a strict engine: each vertex's ``max_influences`` largest deform weights, ``sum w C co``.

    No renormalising; a vertex with no weight goes to the armature origin (zero matrix).
    A vertex with at most ``max_influences`` weights keeps them all; one with more keeps the
    largest, every deform group holding any weight ranked as in a fixed joint array (a
    negative weight ranks below the zeros of the groups the vertex is not in).  Ties keep
    group order.
    """
    co_all = np.asarray(rest, dtype=np.float64).tolist()
    w = np.asarray(weights, dtype=np.float32)
    c = np.asarray(channel, dtype=np.float64).tolist()
    pre = np.eye(4) if mesh_to_armature is None else np.asarray(mesh_to_armature, dtype=np.float64)
    post = (np.eye(4) if mesh_to_armature is None else np.linalg.inv(pre)).tolist()  # (no solve for the identity)
    pre_l = pre.tolist()
    deform = {r.name: j for j, r in enumerate(rows) if r.use_deform}

    def apply(m: list[list[float]], p: list[float]) -> list[float]:
        return [m[i][0] * p[0] + m[i][1] * p[1] + m[i][2] * p[2] + m[i][3] for i in range(3)]

    out = []
    for v, co_mesh in enumerate(co_all):
        co = apply(pre_l, co_mesh)
        own = [(float(w[g, v]), g, deform[n]) for g, n in enumerate(group_names)
               if n in deform and float(w[g, v]) != 0.0]
        slots = own if len(own) <= max_influences else \
            [(float(w[g, v]), g, deform[n]) for g, n in enumerate(group_names)
             if n in deform and bool((w[g] != 0).any())]
        slots.sort(key=lambda s: -s[0])  # stable: ties keep group order
        p = [0.0, 0.0, 0.0]
        for weight, _, j in slots[:max_influences]:
            moved = apply(c[j], co)
            for i in range(3):
                p[i] += weight * moved[i]
        out.append(apply(post, p))
    return np.array(out, dtype=np.float64).reshape(-1, 3)


# ------------------------------------------------------------------ assembly


@dataclass(frozen=True)
class Rig:
    """Everything a test needs to build variants: rows, rest, weights, pose basis."""

    rows: tuple[BoneRow, ...]
    rest: F64
    groups: dict[str, F64]
    edges: NDArray[np.intp] = field(default_factory=lambda: np.zeros((0, 2), dtype=np.intp))
    basis: dict[str, F64] = field(default_factory=dict)

    @property
    def group_names(self) -> tuple[str, ...]:
        return tuple(self.groups)

    def weight_array(self) -> NDArray[np.float32]:
        return np.array([self.groups[g] for g in self.groups], dtype=np.float32).reshape(-1, len(self.rest))

    def channel(self) -> F64:
        return channels(self.rows, self.basis)


def skinned_mesh(rig: Rig, *, blender: F64 | str | None = "own", mesh_to_armature: ArrayLike | None = None,
                 modifier: ArmatureModifierSettings | None = None, weights: ArrayLike | None = None,
                 channel: ArrayLike | None = None, **fields: object) -> SkinnedMesh:
    """A :class:`SkinnedMesh` of ``rig``.

    ``blender='own'`` fills Blender's positions with :func:`blender_positions` (Preserve
    Volume is not modelled there: pass ``None`` or an array); ``fields`` set any other
    SkinnedMesh field (``parent`` defaults to the armature, as a rigger would have it).
    """
    modifier = modifier or ArmatureModifierSettings("Armature")
    w = rig.weight_array() if weights is None else np.asarray(weights, dtype=np.float32)
    ch = rig.channel() if channel is None else np.asarray(channel, dtype=np.float64)
    pre = np.eye(4) if mesh_to_armature is None else np.asarray(mesh_to_armature, dtype=np.float64)
    if isinstance(blender, str):
        if blender != "own":
            raise ValueError(f"blender must be 'own', None or an array, got {blender!r}")
        blender = blender_positions(rig.rest, rig.group_names, w, rig.rows, ch, pre, modifier.mask_group,
                                    modifier.invert_mask)
    values: dict[str, object] = {"parent": "Armature"}
    values.update(fields)
    return SkinnedMesh(
        object=str(values.pop("object", "Mesh")), armature_object=str(values.pop("armature_object", "Armature")),
        rest=np.asarray(rig.rest, dtype=np.float64), group_names=rig.group_names, weights=w,
        mesh_to_armature=pre, bones=bones_table(rig.rows), modifier=modifier, read_pose=Pose(ch), blender=blender,
        edges=rig.edges, **values,  # type: ignore[arg-type]
    )


def chain_tube(bone_names: Sequence[str] = ("Root", "Child"), rings: int = 9, segments: int = 8,
               radius: float = 0.5, length: float = 2.0, basis: Mapping[str, F64] | None = None) -> Rig:
    """A tube along +Y skinned to a chain of bones on its axis with clean, normalised weights.

    With the defaults, ring ``r`` sits at y = r/4 and Child's weight by ring is
    0, 0, 0, 1/4, 1/2, 3/4, 1, 1, 1 (exact binary fractions).
    """
    rest, edges = tube(rings, segments, radius, length)
    return Rig(tuple(chain(bone_names, length)), rest, chain_weights(rest[:, 1], bone_names, length), edges,
               dict(basis or {}))


def ring(r: int, segments: int = 8) -> list[int]:
    """Vertex indices of ring ``r`` of a ring-major tube."""
    return list(range(r * segments, (r + 1) * segments))
