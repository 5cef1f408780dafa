# SPDX-License-Identifier: GPL-3.0-or-later
"""Weights that bleed: vertices far from their bone compared with the bone's
other vertices, and a bone's weighted region split into islands on one piece
of the mesh (weights bleeding across parts)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths.mesh_graph import edge_labels

F64 = NDArray[np.float64]

#: A vertex is far when its distance to the bone exceeds FAR_FACTOR times the
#: bone's 90th-percentile distance plus FAR_MARGIN of the mesh size.
FAR_FACTOR = tolerances.STRAY_FAR_FACTOR
FAR_MARGIN = tolerances.STRAY_FAR_MARGIN
#: Bones with fewer weighted vertices are not judged for distance.
MIN_VERTICES = 8
#: Vertices closer than this fraction of the mesh size are one point of the surface.
WELD_RELATIVE = tolerances.STRAY_WELD_RELATIVE
#: Rows per (N, 3) matrix-vector product, 3 rows <= ``parallel.GEMV_SIZE`` (the BLAS policy).
BLAS_ROWS = 2048
#: A region of at least this many runs is labelled alone (its arrays stay in cache); smaller
#: ones are labelled together (one call instead of one each).
OWN_LABELLING = 4096
#: A region made of at most this many ranges of consecutive vertices is read range by range.
FEW_RANGES = 8


def weld_ids(points: F64, tolerance: float) -> NDArray[np.intp]:
    """(V,) one id per distinct position (positions rounded to ``tolerance``), ids in the order of the positions."""
    if len(points) == 0:
        return np.zeros(0, dtype=np.intp)
    cells = np.round(points / max(tolerance, tolerances.DIVISION_GUARD)).astype(np.int64)
    cells -= cells.min(axis=0)
    span = cells.max(axis=0) + 1
    if np.prod(span.astype(np.float64)) < 2.0**62:
        # One int64 key per point (exact, no hashing): a 1-D unique is far faster than rows.
        keys = (cells[:, 0] * span[1] + cells[:, 1]) * span[2] + cells[:, 2]
        _, inverse = np.unique(keys, return_inverse=True)
    else:
        _, inverse = np.unique(cells, axis=0, return_inverse=True)
    out: NDArray[np.intp] = inverse.reshape(-1).astype(np.intp)
    return out


def segment_distance(points: F64, head: F64, tail: F64) -> F64:
    """(N,) distance of each point to the segment head-tail."""
    return _column_distance(np.asarray(points, dtype=np.float64).T, head, tail)


def _column_distance(columns: F64, head: F64, tail: F64) -> F64:
    """``segment_distance`` of the points given as (3, N) coordinate rows.

    Each coordinate is its own 1-D pass (numpy broadcasts over an axis of 3 slowly),
    in place where it can.  The arithmetic is the (N, 3) formula's, operation for
    operation, so the rounding is the same:
    t = clip(((p - head) @ axis) / |axis|^2, 0, 1), d = |p - (head + t axis)|.
    """
    n = columns.shape[1]
    axis = tail - head
    length2 = float(axis @ axis)
    if length2 == 0.0:
        t = np.zeros(n)
    else:
        offset = np.empty((n, 3))  # (N, 3) rows: the projection stays BLAS's matrix-vector product
        for k in range(3):
            np.subtract(columns[k], head[k], out=offset[:, k])
        t = np.empty(n)
        for i in range(0, n, BLAS_ROWS):  # row by row the same numbers, on this thread
            np.matmul(offset[i:i + BLAS_ROWS], axis, out=t[i:i + BLAS_ROWS])
        t /= length2
        np.clip(t, 0.0, 1.0, out=t)
    total = np.empty(n)
    c = np.empty(n)
    for k in range(3):  # squares summed x, y, z in order, as np.linalg.norm does
        np.multiply(t, axis[k], out=c)
        c += head[k]
        np.subtract(columns[k], c, out=c)
        c *= c
        if k == 0:
            total[:] = c
        else:
            total += c
    np.sqrt(total, out=total)
    return total


def _percentile_and_max(values: F64, q: float) -> tuple[float, float]:
    """``np.percentile(values, q)`` (linear, numpy's own arithmetic step by step) and ``values.max()``.

    One partition gives both; np.percentile's general machinery costs more than the
    partition on the many small groups of a production rig.  NaN anywhere gives NaN.
    """
    n = values.size
    virtual = (n - 1) * (q / 100)  # numpy: get_virtual_index of "linear"
    lower = math.floor(virtual)
    upper = lower + 1
    if virtual >= n - 1:  # numpy takes the last value (indexes -1) and keeps gamma against them
        lower = upper = -1
    gamma = virtual - lower
    part = np.partition(values, sorted({lower % n, upper % n, n - 1}))
    last = float(part[-1])  # the largest value, or NaN (partition sorts NaN last)
    if math.isnan(last):
        return last, last
    a, b = float(part[lower]), float(part[upper])
    diff = b - a  # numpy's _lerp
    return (b - diff * (1 - gamma)) if gamma >= 0.5 else (a + diff * gamma), last


def stray_displacement(points: F64, weights: NDArray[np.float32], group_bones: NDArray[np.intp], group: int,
                       vertices: NDArray[np.intp], channels: F64) -> F64:
    """(N,) how far the weight of ``group`` moves each of ``vertices`` at worst over the poses.

    Each vertex is blended Blender's way (``p' = p + sum_g w_g (C_g p - p) / sum_g w_g`` over
    the groups naming a deform bone; a vertex whose sum is at most BLENDER_MIN_CONTRIB stays at
    rest) with all its weights and without ``group``'s, and the two positions are compared.

    Parameters
    ----------
    points : (V, 3) float64, armature space rest positions
    weights : (G, V) float32
    group_bones : (G,) deform bone of each group, -1 for none
    group : the stray group (its bone ``group_bones[group]`` >= 0)
    vertices : (N,) intp
    channels : (P, J, 4, 4) float64 skinning matrices of the poses, armature space
    """
    vertices = np.asarray(vertices, dtype=np.intp)
    channels = np.asarray(channels, dtype=np.float64)
    if vertices.size == 0:
        return np.zeros(0)
    w = np.take(weights, vertices, axis=1).astype(np.float64)  # (G, N)
    w[group_bones < 0] = 0.0
    w[~np.isfinite(w)] = 0.0  # (the weight checks report them)
    used = np.flatnonzero((w != 0.0).any(axis=1))  # groups weighing something here
    if group not in used:
        return np.zeros(len(vertices))  # its weights here are all non-finite: the weight checks report them
    w, bones = w[used], group_bones[used]
    stray = int(np.flatnonzero(used == group)[0])
    p = points[vertices]  # (N, 3)
    # pgij,nj->pgni: each pose's matrix of each used group applied to each vertex, less the vertex.
    turns = channels[:, bones]  # (P, G', 4, 4)
    moved = np.einsum("pgij,nj->pgni", turns[:, :, :3, :3], p) + turns[:, :, None, :3, 3] - p
    total = w.sum(axis=0)  # (N,)
    rest_of = total - w[stray]
    # gn,pgni->pni: the weighted sum of the moves over the groups.
    blend = np.einsum("gn,pgni->pni", w, moved)
    without = blend - w[stray][None, :, None] * moved[:, stray]
    full = np.where(total[:, None] > tolerances.BLENDER_MIN_CONTRIB,
                    blend / np.maximum(total, tolerances.DIVISION_GUARD)[:, None], 0.0)
    other = np.where(rest_of[:, None] > tolerances.BLENDER_MIN_CONTRIB,
                     without / np.maximum(rest_of, tolerances.DIVISION_GUARD)[:, None], 0.0)
    out: F64 = np.linalg.norm(full - other, axis=2).max(axis=0)
    return out


@dataclass(frozen=True)
class StrayGroup:
    group: int
    bone: int
    far: NDArray[np.intp]  # vertex indices far from the bone
    islands: NDArray[np.intp]  # vertex indices in the smaller separate pieces
    worst_distance: float


def find_stray_weights(points: F64, weights: NDArray[np.float32], group_bones: NDArray[np.intp],
                       heads: F64, tails: F64, edges: NDArray[np.intp], size: float) -> list[StrayGroup]:
    """Per deform group, its far vertices and its island vertices (empty groups skipped).

    Islands: the group's weighted region (vertices with weight > 0, coincident
    vertices welded, joined by mesh edges) split into parts; on each connected
    piece of the mesh the part with the most vertices is the main one (a tie goes to
    the part holding the smallest rounded position, by x, then y, then z), and the
    vertices of the other parts are islands.

    Parameters
    ----------
    points : (V, 3) float64, armature space rest positions
    weights : (G, V) float32
    group_bones : (G,) bone of each group, -1 for none
    heads, tails : (J, 3) float64 rest bone segments, armature space
    edges : (E, 2) intp mesh edges
    """
    # Weld coincident vertices (UV seams, unmerged glTF imports): a seam must not
    # cut a weighted region in two.
    columns = np.ascontiguousarray(points.T)  # (3, V): 1-D passes and gathers per coordinate
    weld = _Weld.of(columns, WELD_RELATIVE * size)
    lo, hi = weld.edges(edges)
    graph = _Graph.of(weld.nodes, lo, hi)
    weighted = np.empty(weights.shape[1], dtype=bool)  # one buffer for every group's test

    # 1. Per group: far vertices, and its weighted region as a graph of runs (numbered from 0).
    judged = []
    ends_lo, ends_hi = [lo[:0]], [hi[:0]]  # small regions' edges, their runs numbered on from `start`
    start = 0
    for g, bone in enumerate(group_bones):
        if bone < 0:
            continue
        idx = np.flatnonzero(np.greater(weights[g], 0, out=weighted))
        if idx.size == 0:
            continue
        far = np.zeros(0, dtype=np.intp)
        worst = 0.0
        if idx.size >= MIN_VERTICES:
            d = _column_distance(np.take(columns, idx, axis=1), heads[bone], tails[bone])
            reach, worst = _percentile_and_max(d, 90)
            far = idx[d > FAR_FACTOR * reach + FAR_MARGIN * size]
        region_nodes, node_of = weld.region_nodes(idx)
        run, a, b = graph.region(region_nodes)
        runs = int(run[-1]) + 1
        own = None
        if runs >= OWN_LABELLING:  # labelled alone: its arrays stay in cache
            own = edge_labels(runs, a, b)
        else:  # labelled with the other small regions, in one call
            ends_lo.append(a + start)
            ends_hi.append(b + start)
        judged.append(_Judged(g, int(bone), idx, far, worst, region_nodes, node_of, run, start, runs, own))
        if own is None:
            start += runs

    # 2. The small regions' parts in one labelling, each region's runs labelled from its `start`.
    labels = edge_labels(start, np.concatenate(ends_lo), np.concatenate(ends_hi))
    pieces: NDArray[np.intp] | None = None  # connected pieces of the whole mesh (per vertex), when first needed
    out = []
    for j in judged:
        # Per run, the first run of its part of the region.
        part = j.own if j.own is not None else labels[j.start:j.start + j.runs] - j.start
        islands = np.zeros(0, dtype=np.intp)
        if part.max() > 0:  # more than one part
            if pieces is None:
                pieces = weld.of_vertices(edge_labels(weld.nodes, lo, hi))
            region = part[j.run]  # per region node
            islands = j.idx[_off_main_region(pieces[j.idx], region if j.node_of is None else region[j.node_of],
                                             _first_position(weld, j.nodes, region))]
        if j.far.size or islands.size:
            out.append(StrayGroup(j.group, j.bone, j.far, islands, j.worst))
    return out


@dataclass(frozen=True)
class _Judged:
    """One group on its way through find_stray_weights."""

    group: int
    bone: int
    idx: NDArray[np.intp]  # its weighted vertices
    far: NDArray[np.intp]
    worst: float
    nodes: NDArray[np.intp]  # its weighted region's nodes, sorted
    node_of: NDArray[np.intp] | None  # per weighted vertex, its index in `nodes` (None: the same index)
    run: NDArray[np.intp]  # per region node, its run
    start: int  # its first run in the joint labelling of small regions
    runs: int
    own: NDArray[np.intp] | None  # per run, the first run of its part, when labelled alone


@dataclass(frozen=True)
class _Weld:
    """Vertices welded into nodes, a node per rounded position (as ``weld_ids``).

    Without coincident vertices (the usual mesh, checked with one sort of 1-D keys)
    a node is its vertex (``node`` is None); else the smallest vertex at its position.
    """

    node: NDArray[np.intp] | None  # (V,) node of each vertex; None: the vertex itself
    nodes: int  # node ids are below this
    columns: F64  # (3, V) positions
    step: float  # rounding step; 0.0: ``node`` is weld_ids' own numbering

    @staticmethod
    def of(columns: F64, tolerance: float) -> _Weld:
        count = columns.shape[1]
        step = max(tolerance, tolerances.DIVISION_GUARD)
        if count == 0:
            return _Weld(None, 0, columns, step)
        cells = [c / step for c in columns]
        for c in cells:
            np.rint(c, out=c)  # np.round with no decimals is rint
        low = [float(c.min()) for c in cells]
        span = [float(c.max()) - lo + 1.0 for c, lo in zip(cells, low, strict=True)]
        if not (max(map(abs, low)) + max(span) < 2.0**52 and span[0] * span[1] * span[2] < 2.0**62):
            node = weld_ids(columns.T, tolerance)  # not finite, or no int64 key: weld_ids' own numbering
            return _Weld(node, int(node.max()) + 1, columns, 0.0)
        # The check key puts the longest axis first: meshes often number their vertices
        # along it, and a nearly sorted array sorts several times faster.
        axes = sorted(range(3), key=lambda k: -span[k])
        for c, lo in zip(cells, low, strict=True):
            c -= lo  # exact: whole numbers below 2**52
        keys = cells[axes[0]].astype(np.int64)
        for k in axes[1:]:
            keys *= int(span[k])
            keys += cells[k].astype(np.int64)
        ordered = np.sort(keys)
        if not (ordered[1:] == ordered[:-1]).any():
            return _Weld(None, count, columns, step)
        order = np.argsort(keys, kind="stable")
        first = np.ones(count, dtype=bool)
        first[1:] = keys[order[1:]] != keys[order[:-1]]
        node = np.empty(count, dtype=np.intp)
        node[order] = order[first][np.cumsum(first) - 1]  # stable: the first of a position is its smallest vertex
        return _Weld(node, count, columns, step)

    def key(self, nodes: NDArray[np.intp]) -> NDArray[np.int64]:
        """(N,) keys ordering ``nodes`` as weld_ids numbers their positions (rounded x, then y, then z)."""
        if self.step == 0.0:
            return nodes.astype(np.int64)
        return _position_key(self.columns[:, nodes], self.step)

    def edges(self, edges: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """(E',) smaller and (E',) larger node of each edge; edges welded shut are left out."""
        ends = edges if self.node is None else self.node[edges]
        lo, hi = np.minimum(ends[:, 0], ends[:, 1]), np.maximum(ends[:, 0], ends[:, 1])
        if self.node is not None:
            open_ = lo != hi
            lo, hi = lo[open_], hi[open_]
        return lo, hi

    def region_nodes(self, idx: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp] | None]:
        """Sorted nodes of the vertices ``idx`` (sorted) and each vertex's index among them (None: the same)."""
        if self.node is None:
            return idx, None
        nodes = self.node[idx]
        if np.array_equal(nodes, idx):
            return idx, None
        unique, node_of = np.unique(nodes, return_inverse=True)
        return unique, node_of.reshape(-1)

    def of_vertices(self, per_node: NDArray[np.intp]) -> NDArray[np.intp]:
        """(V,) a per-node array read at each vertex's node."""
        return per_node if self.node is None else per_node[self.node]


def _position_key(columns: F64, step: float) -> NDArray[np.int64]:
    """(N,) one int64 per rounded position, ordering them by x, then y, then z."""
    cells = [np.rint(c / step).astype(np.int64) for c in columns]
    key = cells[0] - cells[0].min()
    for c in cells[1:]:
        low = c.min()
        key *= c.max() - low + 1
        key += c - low
    out: NDArray[np.int64] = key
    return out


def _first_position(weld: _Weld, nodes: NDArray[np.intp], region: NDArray[np.intp]
                    ) -> Callable[[NDArray[np.intp]], NDArray[np.int64]]:
    """For some labels of ``region`` (per node of ``nodes``), a key per label ordering them by
    their smallest rounded position (x, then y, then z): how weld_ids' numbering breaks ties."""
    def key(labels: NDArray[np.intp]) -> NDArray[np.int64]:
        names = np.unique(labels)
        at = np.flatnonzero(np.isin(region, names))
        inverse = np.searchsorted(names, region[at])
        smallest = np.full(names.size, np.iinfo(np.int64).max)
        np.minimum.at(smallest, inverse, weld.key(nodes[at]))
        out: NDArray[np.int64] = smallest[np.searchsorted(names, labels)]
        return out
    return key


@dataclass(frozen=True)
class _Graph:
    """The welded mesh's edges, arranged so a region finds its own in time of its own size.

    Meshes number their strips and rings in order: an edge (n, n + 1) is only a flag
    on n + 1 (``joined``), and a region's runs of such nodes are one node each in its
    labelling.  The other edges are kept once, under their smaller end, sorted by it
    (CSR): edge k joins ``owner[k]`` to ``forward[k]``, node n owns ``indptr[n]:indptr[n + 1]``.
    """

    joined: NDArray[np.bool_]  # (N,) node n is joined to node n - 1
    indptr: NDArray[np.intp]  # (N + 1,)
    owner: NDArray[np.intp]  # (C,)
    forward: NDArray[np.intp]  # (C,)
    local: NDArray[np.intp]  # (N,) scratch: -1, or a node's run while a region is labelled

    @staticmethod
    def of(nodes: int, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> _Graph:
        gap = hi - lo
        chain = gap == 1
        joined = np.zeros(nodes, dtype=bool)
        joined[hi.take(np.flatnonzero(chain))] = True
        cross = np.flatnonzero(~chain)  # (index arrays: a mixed boolean mask indexes several times slower)
        cross_lo, cross_hi = lo.take(cross), hi.take(cross)
        order = np.argsort(cross_lo, kind="stable")  # edges come nearly in vertex order: this sort runs fast
        indptr = np.zeros(nodes + 1, dtype=np.intp)
        np.cumsum(np.bincount(cross_lo, minlength=nodes), out=indptr[1:])
        return _Graph(joined, indptr, cross_lo.take(order), cross_hi.take(order), np.full(nodes, -1, dtype=np.intp))

    def region(self, nodes: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]:
        """The region of sorted ``nodes`` as runs numbered from 0: (n,) run of each node, and
        (E',) and (E',) runs joined by its edges, smaller first (runs joined twice in a row: once)."""
        consecutive = nodes[1:] == nodes[:-1] + 1
        step = np.ones(nodes.size, dtype=bool)  # a node that starts a run
        step[1:] = ~(consecutive & self.joined[nodes[1:]])
        run = np.cumsum(step)
        run -= 1
        # Nodes with consecutive ids own consecutive CSR slots: expand ranges of ids, not nodes.
        first = np.flatnonzero(np.concatenate(([True], ~consecutive)))
        last = np.append(first[1:], nodes.size) - 1
        begin, end = self.indptr[nodes[first]], self.indptr[nodes[last] + 1]
        if first.size <= FEW_RANGES:  # slices: copies and views instead of scatters and gathers
            for f, l_ in zip(first.tolist(), last.tolist(), strict=True):
                self.local[nodes[f]:nodes[l_] + 1] = run[f:l_ + 1]
            pieces = [(self.owner[i:j], self.forward[i:j]) for i, j in zip(begin.tolist(), end.tolist(), strict=True)]
            owner = pieces[0][0] if len(pieces) == 1 else np.concatenate([o for o, _ in pieces])
            forward = pieces[0][1] if len(pieces) == 1 else np.concatenate([f for _, f in pieces])
        else:
            length = end - begin
            stop = np.cumsum(length)
            slots = np.arange(int(stop[-1])) + np.repeat(begin - (stop - length), length)
            self.local[nodes] = run
            owner, forward = self.owner[slots], self.forward[slots]
        a = self.local[owner]
        b = self.local[forward]
        self.local[nodes] = -1
        keep = b > a  # the far end inside the region (outside is -1), in another run
        keep[1:] &= (a[1:] != a[:-1]) | (b[1:] != b[:-1])
        return run, a[keep], b[keep]


def _off_main_region(piece: NDArray[np.intp], region: NDArray[np.intp],
                     tie_key: Callable[[NDArray[np.intp]], NDArray[np.int64]]) -> NDArray[np.bool_]:
    """(N,) True where a vertex's region is not its piece's largest.

    ``region`` labels are >= 0; a tie of size goes to the region with the smallest
    ``tie_key`` (called only if there is a tie, with the tied labels; one key each).
    """
    width = int(region.max()) + 1
    combos, inverse, counts = np.unique(piece.astype(np.int64) * width + region, return_inverse=True,
                                        return_counts=True)
    combo_piece, combo_region = combos // width, combos % width
    order = np.lexsort((-counts, combo_piece))  # per piece, the largest first
    first = np.ones(len(order), dtype=bool)
    first[1:] = combo_piece[order][1:] != combo_piece[order][:-1]
    best = counts[order][first][np.cumsum(first) - 1]  # its piece's largest count, per combo in order
    contender = order[counts[order] == best]
    main = np.zeros(len(combos), dtype=bool)
    if contender.size == first.sum():  # no ties
        main[contender] = True
    else:  # per piece, the contender with the smallest key
        by_key = np.lexsort((tie_key(combo_region[contender]), combo_piece[contender]))
        winner = np.ones(len(by_key), dtype=bool)
        winner[1:] = combo_piece[contender][by_key][1:] != combo_piece[contender][by_key][:-1]
        main[contender[by_key[winner]]] = True
    off: NDArray[np.bool_] = ~main[inverse.ravel()]
    return off
