# SPDX-License-Identifier: GPL-3.0-or-later
"""Graph helpers on mesh edges and points: connected pieces, nearest neighbours."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]


def component_labels(vertex_count: int, edges: NDArray[np.intp]) -> NDArray[np.intp]:
    """(V,) label of each vertex's connected piece (the smallest vertex index in it).

    Parameters
    ----------
    vertex_count : number of vertices V
    edges : (E, 2) intp vertex pairs (any order, repeats and loops allowed)
    """
    a, b = edges[:, 0], edges[:, 1]
    return edge_labels(vertex_count, np.minimum(a, b), np.maximum(a, b))


def edge_labels(vertex_count: int, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> NDArray[np.intp]:
    """``component_labels`` with the edges given as two (E,) arrays of ends, ``lo <= hi``.

    1. Runs of consecutive vertices joined by an edge (i, i + 1) are one piece
       at once (meshes number their strips and rings in order; a run costs one
       cumsum instead of pointer chasing).
    2. On the runs, hook and jump until no edge joins two labels: each edge
       whose ends have different roots sets the larger root's parent to the
       smaller (any one such edge wins: parents only decrease, so no cycle),
       then parents are jumped to their roots.  Roots that could hook at least
       halve each pass; an edge whose ends share a root is done for good.
    The smallest run of a piece is never hooked, so it is the piece's root.

    Parameters
    ----------
    vertex_count : number of vertices V
    lo, hi : (E,) intp ends of each edge, ``lo <= hi``
    """
    # (Index arrays throughout: numpy selects with a mixed boolean mask several times slower.)
    linked = np.zeros(vertex_count, dtype=bool)
    linked[hi.take(np.flatnonzero(hi == lo + 1))] = True
    run_start = np.flatnonzero(~linked)  # first vertex of each run
    run_of = np.cumsum(~linked) - 1
    ra, rb = run_of[lo], run_of[hi]  # ra <= rb: runs are numbered in vertex order
    cross = np.flatnonzero(ra != rb)
    ra, rb = ra.take(cross), rb.take(cross)
    parent = np.arange(len(run_start), dtype=np.intp)
    while ra.size:
        parent[rb] = ra  # rb > ra, both roots
        _jump(parent)
        ra, rb = parent.take(ra), parent.take(rb)
        cross = np.flatnonzero(ra != rb)
        ra, rb = ra.take(cross), rb.take(cross)
        np.minimum(ra, rb, out=cross)  # smaller end first again (cross is a free buffer now)
        np.maximum(ra, rb, out=rb)
        ra = cross
    out: NDArray[np.intp] = run_start[parent[run_of]]
    return out


def _jump(parent: NDArray[np.intp]) -> None:
    """Point every entry of a forest (parent[i] <= i) at its root, in place; work shrinks as entries settle."""
    moving = np.flatnonzero(parent[parent] != parent)
    while moving.size:
        parent[moving] = parent.take(parent.take(moving))
        moving = moving.take(np.flatnonzero(parent.take(parent.take(moving)) != parent.take(moving)))


_HASH = np.array([73856093, 19349663, 83492791], dtype=np.int64)


def _cell_hash(cells: NDArray[np.int64]) -> NDArray[np.int64]:
    # Column by column (a sum over a short axis is several times slower); int64 wraps alike.
    out: NDArray[np.int64] = cells[:, 0] * _HASH[0]
    out += cells[:, 1] * _HASH[1]
    out += cells[:, 2] * _HASH[2]
    return out


#: nearest_within first looks for a partner in the query's own cell of side radius / FINE_CELLS.
FINE_CELLS = 4
#: Offset of nearest_within's fine grid, in cells (2 - golden ratio: far from simple fractions).
_GRID_SHIFT = 0.3819660112501051


def _lengths(v: F64) -> F64:
    """(N,) Euclidean length of each row of an (N, 3) array, axis by axis."""
    out: F64 = np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    return out


def nearest_within(points: F64, queries: F64, radius: float) -> NDArray[np.intp]:
    """(Q,) index of the nearest point within ``radius`` of each query, -1 when none.

    First pass: points and queries are hashed into fine cells (``radius /
    FINE_CELLS``) and each query takes the nearest point of its own cell when
    that point is closer than the cell's nearest wall, which no point outside
    the cell can beat (mirror partners usually coincide: nearly every query
    settles here, with one sorted lookup).  The rest are searched exactly in
    cells of side ``radius`` and their 26 neighbours.
    """
    best = np.full(len(queries), -1, dtype=np.intp)
    if len(points) == 0 or len(queries) == 0:
        return best
    fine = radius / FINE_CELLS
    # The cells start off round numbers: modelled and generated meshes put vertices on round
    # coordinates, which a grid through the origin puts exactly on its walls (every mirror
    # partner a rounding away across one: the slow search for a fifth of a million vertices).
    cells = np.floor(points / fine + _GRID_SHIFT).astype(np.int64)
    keys = _cell_hash(cells)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    scaled = queries / fine + _GRID_SHIFT
    qcells = np.floor(scaled).astype(np.int64)
    qk = _cell_hash(qcells)
    lo = np.searchsorted(sorted_keys, qk, "left")
    hi = np.searchsorted(sorted_keys, qk, "right")
    # Distance from each query to the nearest wall of its fine cell.
    frac = scaled - qcells
    near = np.minimum(frac, 1.0 - frac)
    wall = np.minimum(np.minimum(near[:, 0], near[:, 1]), near[:, 2]) * fine
    best_d = np.minimum(wall, radius)
    for c in range(int((hi - lo).max(initial=0))):
        q = np.flatnonzero(lo + c < hi)
        cand = order[lo[q] + c]
        # A hash collision is not the same cell (compared axis by axis: faster than .all(axis=1)).
        a, b = cells[cand], qcells[q]
        same = (a[:, 0] == b[:, 0]) & (a[:, 1] == b[:, 1]) & (a[:, 2] == b[:, 2])
        q, cand = q[same], cand[same]
        d = _lengths(points[cand] - queries[q])
        closer = d < best_d[q]
        best[q[closer]] = cand[closer]
        best_d[q[closer]] = d[closer]
    rest = np.flatnonzero(best < 0)
    if rest.size:
        best[rest] = _nearest_grid(points, queries[rest], radius)
    return best


def _nearest_grid(points: F64, queries: F64, radius: float) -> NDArray[np.intp]:
    """Points are hashed into cubic cells of side ``radius``; a query looks in its
    own cell and the 26 around it, so no pair closer than ``radius`` is missed."""
    if len(points) == 0 or len(queries) == 0:
        return np.full(len(queries), -1, dtype=np.intp)
    cells = np.floor(points / radius).astype(np.int64)
    keys = _cell_hash(cells)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    qcells = np.floor(queries / radius).astype(np.int64)
    best = np.full(len(queries), -1, dtype=np.intp)
    best_d = np.full(len(queries), radius)
    offsets = np.stack(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1], indexing="ij"), -1).reshape(-1, 3)
    for off in offsets:
        qk = _cell_hash(qcells + off)
        lo = np.searchsorted(sorted_keys, qk, "left")
        hi = np.searchsorted(sorted_keys, qk, "right")
        for c in range(int((hi - lo).max(initial=0))):
            has = lo + c < hi
            q = np.flatnonzero(has)
            cand = order[lo[q] + c]
            d = np.linalg.norm(points[cand] - queries[q], axis=1)
            closer = d <= best_d[q]
            best[q[closer]] = cand[closer]
            best_d[q[closer]] = d[closer]
    return best
