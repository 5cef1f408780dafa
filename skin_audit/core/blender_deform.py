# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's Armature modifier recomputed in numpy, and the strict
"engine" deformation beside it.

Blender (armature_deform.cc, 4.2 - 5.0), per vertex in armature space:
``co' = co + a * sum_j w_j (M_j co - co) / sum_j w_j`` over groups naming a
bone with Deform on, exact-zero weights skipped; nothing moves when the sum
is <= 1e-4; ``a`` is the modifier's mask weight.  Preserve Volume blends dual
quaternions with each bone's scale folded in at the vertex and the sign taken
against the running sum.

Engines (glTF, FBX runtimes) neither renormalise nor leave unweighted vertices
in place and keep a fixed number of influences:
``co' = sum_{j in top N} w_j M_j co``.

Work is done group by group over each group's non-zero vertices, so the cost
follows the number of weights, not vertices x bones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import tolerances
from .dqs import matrix_to_quaternion, quaternion_multiply
from .rig_data import SkinnedMesh

F64 = NDArray[np.float64]


def apply_affine(m: F64, points: F64) -> F64:
    """(N, 3) points mapped by one (4, 4) matrix (returned as they are for the identity)."""
    if np.array_equal(m, np.eye(4)):
        return points
    out: F64 = points @ m[:3, :3].T + m[:3, 3]
    return out


@dataclass(frozen=True)
class Accumulation:
    """Per-vertex sums of one pass over the weights (armature space)."""

    displacement: F64  # (V, 3) sum_j w_j (M_j co - co)
    contrib: F64  # (V,) sum_j w_j
    influences: NDArray[np.intp]  # (V,) count of non-zero deform weights


def group_columns(mesh: SkinnedMesh) -> list[tuple[int, NDArray[np.intp], F64]]:
    """Per deform group: (bone index, vertices with a non-zero weight, those weights as float64)."""
    return mesh.deform_columns


def mask_factor(mesh: SkinnedMesh) -> F64:
    """(V,) the modifier's vertex-group mask ``a`` (1 where there is no mask)."""
    if not mesh.modifier.mask_group or mesh.modifier.mask_group not in mesh.group_names:
        return np.ones(mesh.vertex_count)
    m: F64 = mesh.weights[mesh.group_names.index(mesh.modifier.mask_group)].astype(np.float64)
    return 1.0 - m if mesh.modifier.invert_mask else m


def finish_linear(co: F64, acc: Accumulation, factor: F64) -> F64:
    """Blender's normalisation and 1e-4 rule, then the mask blend (armature space)."""
    moved = acc.contrib > tolerances.BLENDER_MIN_CONTRIB
    out = co.copy()
    scale = np.where(moved, factor / np.where(moved, acc.contrib, 1.0), 0.0)
    out += acc.displacement * scale[:, None]
    return out


def _orthogonalize_keep_y(m: F64) -> F64:
    """Blender's orthogonalize_m4(m, axis=1): keep the Y column's direction, keep column lengths."""
    lengths = np.linalg.norm(m[:3, :3], axis=0)
    c0, c1 = m[:3, 0], m[:3, 1] / np.linalg.norm(m[:3, 1])
    c2 = np.cross(c0, c1)
    c2 /= np.linalg.norm(c2)
    c0 = np.cross(c1, c2)
    out = m.copy()
    out[:3, 0], out[:3, 1], out[:3, 2] = c0 * lengths[0], c1 * lengths[1], c2 * lengths[2]
    return out


def _rotation_of(m: F64) -> F64:
    """Unit quaternion of a 3x3 with normalised columns (reflections negated as Blender does)."""
    r = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
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
    orthonormal = bool(np.abs(gram - np.eye(3)).max() <= 1e-5)
    scale = None
    rigid = channel
    if not orthonormal or np.linalg.det(r3) < 0 or float(dscale @ dscale) > 1e-8:
        tmp = _orthogonalize_keep_y(base_rs)
        q = _rotation_of(tmp)
        base_r = np.eye(4)
        base_r[:3, :3] = _quat_matrix(q)
        base_r[:3, 3] = base_rs[:3, 3]
        rigid = base_r @ np.linalg.inv(rest)
        scale = rest @ (np.linalg.inv(base_r) @ base_rs) @ np.linalg.inv(rest)
    q = _rotation_of(rigid)
    t = np.concatenate([[0.0], rigid[:3, 3]])
    return BoneDualQuaternion(q, 0.5 * quaternion_multiply(t, q), scale)


def _quat_matrix(q: F64) -> F64:
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


@dataclass(frozen=True)
class DualAccumulation:
    real: F64  # (V, 4)
    trans: F64  # (V, 4)
    contrib: F64  # (V,)
    #: Vertices whose result may depend on Blender's storage order of weights
    #: (three or more influences with a sign flip against the running sum).
    order_sensitive: NDArray[np.bool_]


def accumulate_dual(co: F64, columns: list[tuple[int, NDArray[np.intp], F64]], mesh: SkinnedMesh) -> DualAccumulation:
    """Blender's add_weighted_dq_dq_pivot over the columns, in group order."""
    v = len(co)
    real = np.zeros((v, 4))
    trans = np.zeros((v, 4))
    contrib = np.zeros(v)
    count = np.zeros(v, dtype=np.intp)
    flipped = np.zeros(v, dtype=bool)
    cache: dict[int, BoneDualQuaternion] = {}
    for bone, idx, w in columns:
        dq = cache.get(bone) or cache.setdefault(
            bone, blender_dual_quaternion(mesh.bones.rest[bone], mesh.bones.channel[bone]))
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
    rot = np.stack([
        np.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), w * w + y * y - x * x - z * z, 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w + z * z - x * x - y * y], -1),
    ], -2)
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


def weighted_displacements(mesh: SkinnedMesh, channel: F64) -> F64:
    """(N, 3) ``w (M_j co - co)`` for every weight of ``mesh.flat_columns``, armature space.

    One small matrix product per group over its contiguous block: the cost follows
    the number of weights, and the sums per vertex are then bincounts.
    """
    flat = mesh.flat_columns
    out = np.empty_like(flat.rest)
    for c, bone in enumerate(flat.bones):
        block = slice(flat.starts[c], flat.starts[c + 1])
        m = channel[bone]
        # M p - p = (R - I) p + t.
        np.matmul(flat.rest[block], (m[:3, :3] - np.eye(3)).T, out=out[block])
        out[block] += m[:3, 3]
    out *= flat.weight[:, None]
    return out


def _sum_per_vertex(vertex: NDArray[np.intp], values: F64, count: int) -> F64:
    """(V, 3) sums of (N, 3) values by vertex."""
    return np.column_stack([np.bincount(vertex, values[:, i], minlength=count) for i in range(3)])


def recompute_blender(mesh: SkinnedMesh, channel: F64 | None = None) -> Recomputed:
    """Blender's deformation of ``mesh`` at ``channel`` (default: the current pose)."""
    return deform_both(mesh, channel)[0]


def deform_both(mesh: SkinnedMesh, channel: F64 | None = None, max_influences: int | None = None
                ) -> tuple[Recomputed, F64 | None]:
    """Blender's deformation and, with ``max_influences``, the strict engine's, from one pass.

    The engine keeps each vertex's ``max_influences`` largest weights without
    renormalising: ``sum_k w_k M_k co = sum_k w_k (M_k co - co) + (sum_k w_k) co``;
    unweighted vertices go to the armature origin (a zero matrix sum).
    """
    channel = mesh.bones.channel if channel is None else channel
    flat = mesh.flat_columns
    co = mesh.rest_armature
    v = mesh.vertex_count
    factor = mask_factor(mesh)
    values = weighted_displacements(mesh, channel)
    disp = _sum_per_vertex(flat.vertex, values, v)
    sensitive = np.zeros(v, dtype=bool)
    if not mesh.modifier.use_vertex_groups:
        # Blender ignores the groups: only envelopes (not reproduced) could move the mesh.
        out = co.copy()
    elif mesh.modifier.preserve_volume:
        dual = accumulate_dual(co, group_columns(mesh), _with_channel(mesh, channel))
        out = finish_dual(co, dual, factor)
        sensitive = dual.order_sensitive
    else:
        out = finish_linear(co, Accumulation(disp, flat.contrib, flat.count), factor)
    back = np.linalg.inv(mesh.mesh_to_armature)
    rec = Recomputed(apply_affine(back, out), flat.contrib, flat.count, sensitive)
    if max_influences is None:
        return rec, None
    dropped = ~np.concatenate(_top_n_mask(mesh, group_columns(mesh), max_influences) or [np.zeros(0, dtype=bool)])
    kept_disp, kept_contrib = disp, flat.contrib
    if dropped.any():
        kept_disp = disp - _sum_per_vertex(flat.vertex[dropped], values[dropped], v)
        kept_contrib = flat.contrib - np.bincount(flat.vertex[dropped], flat.weight[dropped], minlength=v)
    engine = kept_disp + kept_contrib[:, None] * co
    return rec, apply_affine(back, engine)


def _with_channel(mesh: SkinnedMesh, channel: F64) -> SkinnedMesh:
    if channel is mesh.bones.channel:
        return mesh
    from dataclasses import replace

    return replace(mesh, bones=replace(mesh.bones, channel=channel))


def engine_positions(mesh: SkinnedMesh, max_influences: int, channel: F64 | None = None) -> F64:
    """(V, 3) the strict engine deformation: top-N raw weights, no renormalisation, object space."""
    engine = deform_both(mesh, channel, max_influences)[1]
    assert engine is not None
    return engine


def _top_n_mask(
    mesh: SkinnedMesh, columns: list[tuple[int, NDArray[np.intp], F64]], n: int
) -> list[NDArray[np.bool_]]:
    """Per column, which of its weights survive keeping each vertex's ``n`` largest."""
    count = np.zeros(mesh.vertex_count, dtype=np.intp)
    for _, idx, _ in columns:
        count[idx] += 1
    keep = [np.ones(len(idx), dtype=bool) for _, idx, _ in columns]
    over = np.flatnonzero(count > n)
    if over.size == 0:
        return keep
    # Dense block only for the (usually few) vertices over the limit.
    block = np.zeros((len(columns), over.size))
    pos = np.full(mesh.vertex_count, -1, dtype=np.intp)
    pos[over] = np.arange(over.size)
    for c, (_, idx, w) in enumerate(columns):
        hit = pos[idx] >= 0
        block[c, pos[idx[hit]]] = w[hit]
    # Rank columns per vertex by weight (stable, so ties keep group order).
    order = np.argsort(-block, axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(len(columns))[:, None].repeat(over.size, 1), axis=0)
    for c, (_, idx, _) in enumerate(columns):
        hit = pos[idx] >= 0
        keep[c][hit] = rank[c, pos[idx[hit]]] < n
    return keep
