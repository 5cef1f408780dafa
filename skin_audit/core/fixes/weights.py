# SPDX-License-Identifier: GPL-3.0-or-later
"""Repaired weights for a finding, computed on (G, V) arrays and never written here.

Every function takes the mesh's weights as Blender stores them (float32, row g is
vertex group g), which rows are deform groups (their name is a deform bone of the
armature) and which are locked (``VertexGroup.lock_weight``).  It returns a
:class:`WeightFix`: the new array and exactly the (group, vertex) cells whose stored
value changes.  Non-deform rows and locked rows never change; normalising spreads
over the unlocked deform groups only, as Blender's Normalize All with "Lock Active"
and locked groups does.  Arithmetic is float64, stored back as float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError, ShapeError

F32 = NDArray[np.float32]
F64 = NDArray[np.float64]
B = NDArray[np.bool_]

#: A vertex whose unlocked deform weights sum to no more than this has nothing to scale
#: (Blender's Armature modifier ignores such a small sum, tolerances.BLENDER_MIN_CONTRIB).
NOTHING_TO_SCALE = 1e-12


@dataclass(frozen=True)
class WeightFix:
    """What a weight fix writes.

    weights : (G, V) float32, the whole repaired array
    changed : (N, 2) intp, (group, vertex) of every cell whose value differs from the input
    skipped : (K,) intp, vertices the fix was asked to repair but could not (said in ``message``)
    """

    weights: F32
    changed: NDArray[np.intp]
    message: str
    skipped: NDArray[np.intp]


def _check(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike) -> tuple[F32, B, B]:
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise ShapeError(f"weights must have shape (G, V), got {w.shape}")
    deform = np.asarray(deform_rows, dtype=bool)
    locked = np.asarray(locked_rows, dtype=bool)
    for name, rows in (("deform_rows", deform), ("locked_rows", locked)):
        if rows.shape != (w.shape[0],):
            raise ShapeError(f"{name} must have shape ({w.shape[0]},) (one flag per group), got {rows.shape}")
    if not np.isfinite(w).all():
        raise InputError("weights hold NaN or infinity; fix the non-finite-weights finding first (clear "
                         "those vertices' weights and repaint them)")
    return w, deform, locked


def _result(before: F32, after: F64 | F32, message: str, skipped: NDArray[np.intp] | None = None) -> WeightFix:
    new = np.asarray(after, dtype=np.float32)
    changed = np.argwhere(new != before).astype(np.intp)
    return WeightFix(new, changed, message, np.zeros(0, np.intp) if skipped is None else skipped)


def _normalized_columns(w: F64, free: B, locked_deform: B, vertices: NDArray[np.intp]) -> tuple[F64, NDArray[np.intp]]:
    """Scale the free rows of ``vertices`` so every deform row sums to 1; returns (weights, skipped)."""
    out = w.copy()
    cols = out[:, vertices]
    locked_sum = cols[locked_deform].sum(axis=0)
    free_sum = cols[free].sum(axis=0)
    room = np.clip(1.0 - locked_sum, 0.0, None)  # locked weights >= 1 leave nothing for the others
    ok = free_sum > NOTHING_TO_SCALE
    scale = np.where(ok, room / np.where(ok, free_sum, 1.0), 1.0)
    cols[np.ix_(free, ok)] *= scale[ok]
    out[:, vertices] = cols
    return out, vertices[~ok]


def normalize(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike,
              vertices: ArrayLike | None = None, tolerance: float = 0.0) -> WeightFix:
    """Deform weights of each vertex scaled to sum to 1 over the unlocked deform groups.

    Parameters
    ----------
    weights : (G, V) float32
    deform_rows, locked_rows : (G,) bool
    vertices : (K,) int, vertices to repair (default: every vertex whose deform sum is off 1
        by more than ``tolerance`` and has some unlocked deform weight)
    tolerance : a vertex within it of 1 is left as it is

    A vertex whose unlocked deform weights are all 0 cannot be scaled and is listed in
    ``skipped``; a vertex whose locked deform weights already reach 1 gets 0 in every
    unlocked deform group (the locked ones are never changed).
    """
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    w64 = w.astype(np.float64)
    total = w64[deform].sum(axis=0)
    if vertices is None:
        idx = np.flatnonzero((np.abs(total - 1.0) > tolerance) & (w64[deform & ~locked].sum(axis=0) > 0))
    else:
        idx = np.unique(np.asarray(vertices, dtype=np.intp))
    out, skipped = _normalized_columns(w64, deform & ~locked, deform & locked, idx)
    fix = _result(w, out, "", skipped)
    moved = np.unique(fix.changed[:, 1]).size
    message = f"normalised {moved} vertices over the unlocked deform groups"
    if skipped.size:
        message += f"; {skipped.size} vertices have no unlocked deform weight to scale (paint them first)"
    return WeightFix(fix.weights, fix.changed, message, skipped)


def limit_and_normalize(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike, n: int) -> WeightFix:
    """At most ``n`` non-zero deform weights per vertex, then those vertices normalised.

    The smallest unlocked deform weights go first (ties: the later group goes first);
    locked groups are kept and count towards ``n``.  Only vertices over the limit change:
    Blender's Limit Total alone would leave their sums below 1.

    Parameters
    ----------
    weights : (G, V) float32
    deform_rows, locked_rows : (G,) bool
    n : int >= 1
    """
    if n < 1:
        raise InputError(f"the influence limit must be at least 1, got {n}")
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    w64 = w.astype(np.float64)
    nonzero = (w64 != 0.0) & deform[:, None]
    over = np.flatnonzero(nonzero.sum(axis=0) > n)
    out = w64.copy()
    skipped: list[int] = []
    free = deform & ~locked
    for v in over:  # vertices over the limit are few; one sort each keeps the order rule plain
        kept_locked = int((nonzero[:, v] & locked).sum())
        candidates = np.flatnonzero(nonzero[:, v] & free)
        room = n - kept_locked
        if room < 0:
            skipped.append(int(v))
            room = 0
        # Largest first; among equals the earlier group first (stable sort of -weight).
        order = candidates[np.argsort(-w64[candidates, v], kind="stable")]
        out[order[room:], v] = 0.0
    out, unscaled = _normalized_columns(out, free, deform & locked, over)
    skipped_all = np.union1d(np.asarray(skipped, dtype=np.intp), unscaled).astype(np.intp)
    fix = _result(w, out, "", skipped_all)
    message = f"limited {over.size} vertices to {n} deform weights and normalised them"
    if skipped:
        message += f"; {len(skipped)} vertices keep more than {n} because their locked groups alone exceed it"
    return WeightFix(fix.weights, fix.changed, message, skipped_all)


def remove_below(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike, threshold: float,
                 renormalize: bool = True) -> WeightFix:
    """Unlocked deform weights below ``threshold`` set to 0 (removed from the group), and the
    vertices that lost one normalised again (``renormalize``).

    A vertex whose every unlocked deform weight is below the threshold keeps them (it would be
    left unweighted) and is listed in ``skipped``.
    """
    if not threshold > 0.0:
        raise InputError(f"the threshold must be a positive weight, got {threshold}")
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    w64 = w.astype(np.float64)
    free = deform & ~locked
    small = free[:, None] & (w64 > 0.0) & (w64 < threshold)
    # What is left of the vertex after the removal: an unlocked weight at or above it, or a locked one.
    left = ((free[:, None] & (w64 >= threshold)) | ((deform & locked)[:, None] & (w64 > 0.0))).any(axis=0)
    hit = small.any(axis=0)
    skipped = np.flatnonzero(hit & ~left).astype(np.intp)
    small[:, skipped] = False
    out = np.where(small, 0.0, w64)
    touched = np.flatnonzero(small.any(axis=0))
    if renormalize:
        out, _ = _normalized_columns(out, free, deform & locked, touched)
    fix = _result(w, out, "", skipped)
    message = f"removed {int(small.sum())} deform weights below {threshold:g} on {touched.size} vertices"
    if skipped.size:
        message += f"; {skipped.size} vertices have only such weights and keep them (paint them instead)"
    return WeightFix(fix.weights, fix.changed, message, skipped)


def remove_cells(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike,
                 cells: ArrayLike, renormalize: bool = True) -> WeightFix:
    """The given (group, vertex) cells set to 0 (stray islands, far vertices), then those
    vertices normalised over what is left.  Cells of locked or non-deform groups are refused;
    a vertex the removal would leave with no deform weight keeps its cells (``skipped``)."""
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    c = np.asarray(cells, dtype=np.intp).reshape(-1, 2)
    if c.size and ((c < 0).any() or (c[:, 0] >= w.shape[0]).any() or (c[:, 1] >= w.shape[1]).any()):
        raise ShapeError(f"cells must index a {w.shape} weight array")
    bad = c[~deform[c[:, 0]] | locked[c[:, 0]]]
    if bad.size:
        raise InputError(f"{len(bad)} cells are in locked or non-deform groups (group {int(bad[0, 0])}); "
                         "unlock the group or leave it out")
    out = w.astype(np.float64)
    out[c[:, 0], c[:, 1]] = 0.0
    emptied = np.flatnonzero((out[deform] == 0.0).all(axis=0) & (w[deform] != 0.0).any(axis=0))
    keep = np.isin(c[:, 1], emptied)
    out[c[keep, 0], c[keep, 1]] = w[c[keep, 0], c[keep, 1]]
    c = c[~keep]
    touched = np.unique(c[:, 1])
    skipped = emptied.astype(np.intp)
    if renormalize:
        out, _ = _normalized_columns(out, deform & ~locked, deform & locked, touched)
    fix = _result(w, out, "", skipped)
    message = f"removed {len(c)} stray weights on {touched.size} vertices"
    if skipped.size:
        message += f"; {skipped.size} vertices have only stray weights and keep them (paint them instead)"
    return WeightFix(fix.weights, fix.changed, message, skipped)


def merge_rows(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike, source: int,
               target: int, renormalize: bool = True) -> WeightFix:
    """Row ``source`` added onto row ``target`` and cleared (merge a group into a bone's group).

    The sum is clipped to 1, as Blender stores a vertex-group weight; with ``renormalize`` the
    vertices that received weight are then normalised over the unlocked deform groups (the
    merged weight now deforms, and would otherwise push their sums above 1).  The source row
    may be any group (that is the point: a group no deform bone reads).  Locked rows are refused.
    """
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    g = w.shape[0]
    if not (0 <= source < g and 0 <= target < g) or source == target:
        raise InputError(f"merge needs two different groups among {g}, got {source} -> {target}")
    if locked[source] or locked[target]:
        raise InputError("a locked group's weights never change; unlock it to merge")
    out = w.astype(np.float64)
    received = np.flatnonzero(out[source] != 0.0)
    out[target] = np.minimum(out[target] + out[source], 1.0)
    out[source] = 0.0
    skipped = np.zeros(0, np.intp)
    if renormalize and deform[target]:
        out, skipped = _normalized_columns(out, deform & ~locked, deform & locked, received)
    fix = _result(w, out, "", skipped)
    return WeightFix(fix.weights, fix.changed,
                     f"moved {received.size} weights from group {source} to group {target}", skipped)


def transfer_from_neighbours(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike,
                             edges: ArrayLike, vertices: ArrayLike) -> WeightFix:
    """Unweighted ``vertices`` given the weights of their nearest weighted neighbours along edges.

    Breadth-first from the weighted vertices: a vertex k edges away takes the mean of the
    unlocked deform weights of its neighbours k - 1 edges away (original or already filled),
    then is normalised.  Vertices on a piece with no weighted vertex stay as they are
    (``skipped``).

    Parameters
    ----------
    weights : (G, V) float32
    deform_rows, locked_rows : (G,) bool
    edges : (E, 2) int mesh edges
    vertices : (K,) int, the unweighted vertices to fill
    """
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    e = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    targets = np.unique(np.asarray(vertices, dtype=np.intp))
    free = deform & ~locked
    out = w.astype(np.float64)
    filled = np.ones(w.shape[1], dtype=bool)
    filled[targets] = False
    filled &= out[free].sum(axis=0) > NOTHING_TO_SCALE  # a neighbour must have something to give
    ends = np.concatenate([e, e[:, ::-1]])
    free_rows = np.flatnonzero(free)
    while True:
        # Edges from a filled vertex to an unfilled target: this ring of the search.
        step = ends[filled[ends[:, 0]] & ~filled[ends[:, 1]]]
        step = step[np.isin(step[:, 1], targets)]
        if not len(step):
            break
        ring, slot = np.unique(step[:, 1], return_inverse=True)
        sums = np.zeros((free_rows.size, ring.size))
        np.add.at(sums.T, slot.reshape(-1), out[np.ix_(free_rows, step[:, 0])].T)
        counts = np.bincount(slot.reshape(-1), minlength=ring.size)
        out[np.ix_(free_rows, ring)] = sums / counts
        filled[ring] = True
    reached = targets[filled[targets]]
    out, unscaled = _normalized_columns(out, free, deform & locked, reached)
    skipped = np.union1d(targets[~filled[targets]], unscaled).astype(np.intp)
    fix = _result(w, out, "", skipped)
    message = f"gave {reached.size} unweighted vertices the weights of their nearest weighted neighbours"
    if skipped.size:
        message += f"; {skipped.size} vertices lie on a piece with no weighted vertex (paint them)"
    return WeightFix(fix.weights, fix.changed, message, skipped)


def mirror_side(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike, partner: ArrayLike,
                mirror_group: ArrayLike, destination: ArrayLike, centre: ArrayLike | None = None) -> WeightFix:
    """Destination vertices take their mirror vertex's weights, each group through its mirror group.

    For a destination vertex v with mirror vertex p (not itself a destination) and each unlocked
    deform group g whose mirror group m is a deform group: ``new[g, v] = weights[m, p]``.  Groups
    without a mirror group, locked groups and non-deform groups keep their values.  A ``centre``
    vertex (on the mirror plane, its own partner) gets, for each pair of unlocked deform groups
    g / m, the mean of its two weights in both: symmetric, with the same sum.

    Parameters
    ----------
    weights : (G, V) float32
    deform_rows, locked_rows : (G,) bool
    partner : (V,) int, mirror vertex of each vertex or -1 (core.audit.symmetry.mirror_weights)
    mirror_group : (G,) int, group holding each group's mirrored weights or -1 (symmetry.mirror_groups)
    destination : (V,) bool, the side written (e.g. the right side for left-to-right)
    centre : (V,) bool, vertices on the plane to make symmetric (default none)
    """
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    v_count = w.shape[1]
    p = np.asarray(partner, dtype=np.intp)
    mg = np.asarray(mirror_group, dtype=np.intp)
    dest = np.asarray(destination, dtype=bool)
    mid = np.zeros(v_count, bool) if centre is None else np.asarray(centre, dtype=bool)
    if p.shape != (v_count,) or dest.shape != (v_count,) or mid.shape != (v_count,):
        raise ShapeError(f"partner, destination and centre must have shape ({v_count},), got "
                         f"{p.shape}, {dest.shape}, {mid.shape}")
    if mg.shape != (w.shape[0],):
        raise ShapeError(f"mirror_group must have shape ({w.shape[0]},), got {mg.shape}")
    out = w.astype(np.float64)
    source_ok = (p >= 0) & ~dest[np.maximum(p, 0)]
    targets = np.flatnonzero(dest & source_ok)
    skipped = np.flatnonzero(dest & ~source_ok).astype(np.intp)
    rows = [g for g in range(w.shape[0]) if deform[g] and not locked[g] and mg[g] >= 0 and deform[mg[g]]]
    for g in rows:
        out[g, targets] = w[mg[g], p[targets]]
    middle = np.flatnonzero(mid)
    for g in rows:
        m = int(mg[g])
        if m > g and not locked[m]:  # each pair once; a group that is its own mirror is symmetric already
            mean = 0.5 * (w[g, middle].astype(np.float64) + w[m, middle])
            out[g, middle] = mean
            out[m, middle] = mean
    fix = _result(w, out, "", skipped)
    message = f"mirrored the weights of {targets.size} vertices from their mirror vertices"
    if middle.size:
        message += f" and evened {middle.size} vertices on the mirror plane"
    if skipped.size:
        message += f"; {skipped.size} vertices have no mirror vertex and keep their weights"
    return WeightFix(fix.weights, fix.changed, message, skipped)


def smooth_region(weights: ArrayLike, deform_rows: ArrayLike, locked_rows: ArrayLike, edges: ArrayLike,
                  vertices: ArrayLike, factor: float = 0.5, repeat: int = 20, expand: int = 1) -> WeightFix:
    """The unlocked deform weights of ``vertices`` (and ``expand`` rings of edges around them)
    smoothed as Blender's Smooth Vertex Weights does, then normalised; nothing else changes.

    Each of ``repeat`` passes gives every vertex of the region ``(1 - factor) w + factor x`` the
    mean of its edge neighbours' weights (neighbours outside the region are read, never
    written), in every unlocked deform group at once.  The region's vertices are then scaled to
    sum to 1 over the unlocked deform groups beside the locked ones (``normalize``).

    Parameters
    ----------
    weights : (G, V) float32
    deform_rows, locked_rows : (G,) bool
    edges : (E, 2) int mesh edges
    vertices : (K,) int, the finding's vertices
    """
    w, deform, locked = _check(weights, deform_rows, locked_rows)
    if not 0.0 < factor <= 1.0 or repeat < 1 or expand < 0:
        raise InputError(f"smoothing needs 0 < factor <= 1, repeat >= 1 and expand >= 0; got {factor}, "
                         f"{repeat}, {expand}")
    e = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    v = w.shape[1]
    region = np.zeros(v, dtype=bool)
    region[np.asarray(vertices, dtype=np.intp)] = True
    for _ in range(expand):
        grown = region.copy()
        grown[e[region[e[:, 0]], 1]] = True
        grown[e[region[e[:, 1]], 0]] = True
        region = grown
    free_rows = np.flatnonzero(deform & ~locked)
    ends = np.concatenate([e, e[:, ::-1]])
    ends = ends[region[ends[:, 0]] & (ends[:, 0] != ends[:, 1])]  # edges into the region, both ways
    out = w.astype(np.float64)
    idx = np.flatnonzero(region)
    if ends.size and free_rows.size:
        degree = np.bincount(ends[:, 0], minlength=v).astype(np.float64)
        has = degree[idx] > 0
        idx_n = idx[has]
        rows = out[free_rows]  # (F, V) the smoothed groups
        for _ in range(repeat):
            sums = np.zeros((free_rows.size, v))
            np.add.at(sums.T, ends[:, 0], rows[:, ends[:, 1]].T)
            mean = sums[:, idx_n] / degree[idx_n]
            rows[:, idx_n] = (1.0 - factor) * rows[:, idx_n] + factor * mean
        out[free_rows] = rows
    out, skipped = _normalized_columns(out, deform & ~locked, deform & locked, idx)
    fix = _result(w, out, "", skipped)
    moved = np.unique(fix.changed[:, 1]).size
    message = (f"smoothed the unlocked deform weights of {moved} vertices ({idx.size} in the region: the "
               f"finding's vertices and {expand} rings around them; {repeat} passes at factor {factor:g})")
    if skipped.size:
        message += f"; {skipped.size} vertices have no unlocked deform weight (paint them)"
    return WeightFix(fix.weights, fix.changed, message, skipped)
