# SPDX-License-Identifier: GPL-3.0-or-later
"""Weight smoothness: abrupt steps of a bone's weight across a mesh edge (the edge creases
rigidly when the joint bends), and vertices whose weight is shared by too many bones of one
chain (each twists by its own amount: the candy wrapper).  numpy only."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding, Severity
from .skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]
Ints = NDArray[np.intp]

#: Every code the weight smoothness rules can report.
SMOOTHNESS_CODES = frozenset({"weight-step", "twist-region-crowded"})

#: How many offenders a message names.
_SHOWN = 4


def _normalised(mesh: SkinnedMesh) -> tuple[Ints, F64]:
    """The influence table's bones (-1 in empty slots) and weights divided by each vertex's sum."""
    table = mesh.influence_table
    total = table.weights.sum(axis=1)
    scaled = table.weights / np.maximum(total, tolerances.DIVISION_GUARD)[:, None]
    bones = np.where(table.weights != 0, table.bones, -1)
    scaled[total <= tolerances.BLENDER_MIN_CONTRIB] = 0.0
    return bones, scaled


def _weight_of(bones: Ints, scaled: F64, vertices: Ints, bone: Ints) -> F64:
    """(n,) normalised weight of ``bone[i]`` at ``vertices[i]``."""
    out: F64 = np.where(bones[vertices] == bone[:, None], scaled[vertices], 0.0).sum(axis=1)
    return out


def _related(mesh: SkinnedMesh, a: Ints, b: Ints) -> NDArray[np.bool_]:
    """(n,) whether bones ``a[i]`` and ``b[i]`` meet at a joint: one the other's parent, or siblings."""
    parents = np.asarray(mesh.bones.parents, dtype=np.intp)
    pa, pb = parents[a], parents[b]
    out: NDArray[np.bool_] = (pa == b) | (pb == a) | ((pa == pb) & (pa >= 0))
    return out


def step_edges(mesh: SkinnedMesh) -> tuple[Ints, Ints, F64]:
    """Mesh edges across which a bone's normalised weight changes by at least ``WEIGHT_STEP`` and
    passes to a bone it shares a joint with (parent, child or sibling).

    Returns
    -------
    edges : (S,) index into ``mesh.edges``
    bone : (S,) the bone whose weight steps (the one heavier at the edge's first vertex)
    step : (S,) the change of its weight across the edge
    """
    edges = np.asarray(mesh.edges, dtype=np.intp).reshape(-1, 2)
    none = np.zeros(0, dtype=np.intp)
    if not len(edges) or mesh.vertex_count == 0:
        return none, none, np.zeros(0)
    bones, scaled = _normalised(mesh)
    # The heaviest bone of each vertex: a step of half the weight or more moves it.
    top = np.argmax(scaled, axis=1)
    rows = np.arange(mesh.vertex_count)
    heavy, heavy_w = bones[rows, top], scaled[rows, top]
    # Only edges whose ends have different heaviest bones can step from one to another.
    differ = np.flatnonzero(heavy[edges[:, 0]] != heavy[edges[:, 1]])
    a, b = edges[differ, 0], edges[differ, 1]
    ha, hb = heavy[a], heavy[b]
    # The first vertex's heaviest bone measured at the second, and the other way round.
    wa_at_b = _weight_of(bones, scaled, b, ha)
    wb_at_a = _weight_of(bones, scaled, a, hb)
    step_a = heavy_w[a] - wa_at_b
    step_b = heavy_w[b] - wb_at_a
    step = np.maximum(step_a, step_b)
    bone = np.where(step_a >= step_b, ha, hb)
    other = np.where(step_a >= step_b, hb, ha)
    hit = (step >= tolerances.WEIGHT_STEP - tolerances.UNIT_MEASURE) & (ha >= 0) & (hb >= 0) & (ha != hb)
    idx = np.flatnonzero(hit)
    idx = idx[_related(mesh, bone[idx], other[idx])]
    bone, other, step, a, b = bone[idx], other[idx], step[idx], a[idx], b[idx]
    # Abrupt for this mesh: the edge is shorter than the limb is thick there, so the mesh had room
    # to blend over several edges (a low-poly joint one edge wide blends as smoothly as it can).
    p = mesh.rest_armature
    ends_a, ends_b = p[a], p[b]
    length = np.linalg.norm(ends_b - ends_a, axis=1)
    mid = 0.5 * (ends_a + ends_b)
    radius = np.minimum(_segment_distance(mesh, mid, bone), _segment_distance(mesh, mid, other))
    dense = length < tolerances.WEIGHT_STEP_EDGE_RADIUS * radius
    return differ[idx[dense]], bone[dense], step[dense]


def _segment_distance(mesh: SkinnedMesh, points: F64, bones: Ints) -> F64:
    """(n,) distance of ``points[i]`` (armature space) to the rest segment of bone ``bones[i]``."""
    head, tail = mesh.bones.heads[bones], mesh.bones.tails[bones]
    axis = tail - head
    t = np.einsum("ni,ni->n", points - head, axis) / np.maximum(np.einsum("ni,ni->n", axis, axis),
                                                                 tolerances.DIVISION_GUARD)
    foot = head + np.clip(t, 0.0, 1.0)[:, None] * axis
    out: F64 = np.linalg.norm(points - foot, axis=1)
    return out


def seam_edges(mesh: SkinnedMesh) -> tuple[Ints, Ints, F64, NDArray[np.bool_]]:
    """``step_edges`` and, per edge, whether it belongs to a seam: a step of at least
    ``WEIGHT_STEP_HARD`` between one pair of bones along ``WEIGHT_STEP_SEAM_EDGES`` edges or more
    (a joint's whole loop switching bone at once, as a hard 0 -> 1 step round a wrist does)."""
    idx, bone, step = step_edges(mesh)
    seam = np.zeros(len(idx), dtype=bool)
    if not idx.size:
        return idx, bone, step, seam
    edges = np.asarray(mesh.edges, dtype=np.intp).reshape(-1, 2)[idx]
    bones, scaled = _normalised(mesh)
    top = np.argmax(scaled, axis=1)
    heavy = bones[np.arange(mesh.vertex_count), top]
    a, b = heavy[edges[:, 0]], heavy[edges[:, 1]]
    pair = np.minimum(a, b).astype(np.int64) * len(mesh.bones.names) + np.maximum(a, b)
    hard = step >= tolerances.WEIGHT_STEP_HARD - tolerances.UNIT_MEASURE
    keys, inverse, counts = np.unique(pair[hard], return_inverse=True, return_counts=True)
    seam[np.flatnonzero(hard)] = counts[inverse.reshape(-1)] >= tolerances.WEIGHT_STEP_SEAM_EDGES
    return idx, bone, step, seam


def weight_step_findings(mesh: SkinnedMesh,
                         seams: tuple[Ints, Ints, F64, NDArray[np.bool_]] | None = None) -> list[Finding]:
    """``weight-step``: a WARNING for the seams (hard steps round a joint), INFO for other steps;
    each names the bones whose weight steps, worst first (``seams``: ``seam_edges(mesh)``)."""
    idx, bone, step, seam = seam_edges(mesh) if seams is None else seams
    out: list[Finding] = []
    levels: tuple[tuple[Severity, NDArray[np.bool_]], ...] = (("WARNING", seam), ("INFO", ~seam))
    for severity, sel in levels:
        if sel.any():
            out.append(_step_finding(mesh, severity, idx[sel], bone[sel], step[sel]))
    return out


def _step_finding(mesh: SkinnedMesh, severity: Severity, idx: Ints, bone: Ints, step: F64) -> Finding:
    names = mesh.bones.names
    edges = np.asarray(mesh.edges, dtype=np.intp).reshape(-1, 2)[idx]
    vertices = np.unique(edges)
    worst: dict[str, float] = {}
    for b, s in zip(bone.tolist(), step.tolist(), strict=True):
        worst[names[b]] = max(s, worst.get(names[b], s))
    ranked = sorted(worst, key=lambda n: (-worst[n], n))
    k = int(np.argmax(step))
    shown = ", ".join(ranked[:_SHOWN]) + (f" and {len(ranked) - _SHOWN} more" if len(ranked) > _SHOWN else "")
    what = ("a hard seam: a joint's loop of edges switching bone at once" if severity == "WARNING" else
            "short of a seam round a joint (a few edges, or a step below a hard one)")
    return Finding(
        "weight-step", severity,
        f"{len(idx)} mesh edges ({len(vertices)} vertices) carry an abrupt weight step of {tolerances.WEIGHT_STEP:g} "
        f"or more from one bone to the bone it joins, over edges shorter than half the limb's thickness ({what}; "
        f"worst {float(step[k]):.3g} across edge {int(idx[k])}, vertices {int(edges[k, 0])}-{int(edges[k, 1])}); "
        f"bones: {shown}. The edge creases rigidly when the joint bends: smooth the weights there (the fix "
        "smooths them over the region)",
        len(vertices), tuple(vertices.tolist()), tuple(ranked), tuple(ranked),
        {"edges": len(idx), "worst_step": float(step[k]), "worst_edge": int(idx[k]),
         "worst_vertex": int(edges[k, 0])},
    )


def crowded_vertices(mesh: SkinnedMesh) -> tuple[NDArray[np.bool_], Ints]:
    """Vertices weighted by more than ``TWIST_CROWD_BONES`` bones of one chain pointing within
    ``TWIST_CROWD_ANGLE`` of its deepest one, each with at least ``TWIST_CROWD_WEIGHT``; and per
    vertex the deepest of those bones (-1 elsewhere)."""
    v = mesh.vertex_count
    bones, scaled = _normalised(mesh)
    strong = np.where(scaled >= tolerances.TWIST_CROWD_WEIGHT, bones, -1)
    out = np.zeros(v, dtype=bool)
    deepest = np.full(v, -1, dtype=np.intp)
    if strong.shape[1] <= tolerances.TWIST_CROWD_BONES:
        return out, deepest
    count = (strong >= 0).sum(axis=1)
    rows = np.flatnonzero(count > tolerances.TWIST_CROWD_BONES)
    if not rows.size:
        return out, deepest
    parents = mesh.bones.parents
    depth = np.zeros(len(parents), dtype=np.intp)
    for j in range(len(parents)):
        p, d = parents[j], 0
        while p >= 0:
            p, d = parents[p], d + 1
        depth[j] = d
    # Per distinct bone set (few), the longest run of it along one chain whose bones point the way
    # its deepest one does (one twist axis: a forearm and its twist bones, not a shoulder where
    # the spine meets the arm).
    axis = mesh.bones.tails - mesh.bones.heads
    axis = axis / np.maximum(np.linalg.norm(axis, axis=1), tolerances.DIVISION_GUARD)[:, None]
    along = np.cos(np.radians(tolerances.TWIST_CROWD_ANGLE))
    keys, inverse = np.unique(np.sort(strong[rows], axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for u, key in enumerate(keys.tolist()):
        members = sorted({b for b in key if b >= 0}, key=lambda j: -depth[j])
        best, best_bone = 0, -1
        for start in members:
            chain = {start}
            p = parents[start]
            while p >= 0:
                chain.add(p)
                p = parents[p]
            on = [m for m in members if m in chain and float(axis[m] @ axis[start]) >= along]
            if len(on) > best:
                best, best_bone = len(on), start
        if best > tolerances.TWIST_CROWD_BONES:
            sel = rows[inverse == u]
            out[sel] = True
            deepest[sel] = best_bone
    return out, deepest


def crowded_findings(mesh: SkinnedMesh) -> list[Finding]:
    """``twist-region-crowded``: a WARNING naming the chains whose twist is spread too thin."""
    crowded, deepest = crowded_vertices(mesh)
    if not crowded.any():
        return []
    names = mesh.bones.names
    counts: dict[str, int] = {}
    for b in deepest[crowded].tolist():
        counts[names[b]] = counts.get(names[b], 0) + 1
    ranked = sorted(counts, key=lambda n: (-counts[n], n))
    verts = np.flatnonzero(crowded)
    # A whole ring wrings visibly; a few vertices where several joints meet (a shoulder) do not.
    severity: Severity = "WARNING" if len(verts) >= tolerances.TWIST_CROWD_VERTICES else "INFO"
    return [Finding(
        "twist-region-crowded", severity,
        f"{len(verts)} vertices blend more than {tolerances.TWIST_CROWD_BONES} bones of one chain (pointing within "
        f"{tolerances.TWIST_CROWD_ANGLE:g} degrees of each other: one twist axis) with at least "
        f"{tolerances.TWIST_CROWD_WEIGHT:g} each (chains ending at {', '.join(ranked[:_SHOWN])}): each bone twists "
        "them by its own amount, so the region wrings like a candy wrapper when the chain twists; keep two or three "
        "bones per vertex along a twist",
        len(verts), tuple(verts.tolist()), tuple(ranked), (), {"chains": counts},
    )]


def smoothness_findings(mesh: SkinnedMesh,
                        seams: tuple[Ints, Ints, F64, NDArray[np.bool_]] | None = None) -> list[Finding]:
    """Every weight smoothness finding of one mesh (``seams``: ``seam_edges(mesh)``)."""
    return weight_step_findings(mesh, seams) + crowded_findings(mesh)
