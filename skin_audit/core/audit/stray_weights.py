# SPDX-License-Identifier: GPL-3.0-or-later
"""Weights that bleed: vertices far from their bone compared with the bone's
other vertices, and a bone's weighted region split into islands on one piece
of the mesh (weights bleeding across parts)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths.mesh_graph import component_labels

F64 = NDArray[np.float64]

#: A vertex is far when its distance to the bone exceeds FAR_FACTOR times the
#: bone's 90th-percentile distance plus FAR_MARGIN of the mesh size.
FAR_FACTOR = tolerances.STRAY_FAR_FACTOR
FAR_MARGIN = tolerances.STRAY_FAR_MARGIN
#: Bones with fewer weighted vertices are not judged for distance.
MIN_VERTICES = 8
#: Vertices closer than this fraction of the mesh size are one point of the surface.
WELD_RELATIVE = tolerances.STRAY_WELD_RELATIVE


def weld_ids(points: F64, tolerance: float) -> NDArray[np.intp]:
    """(V,) one id per distinct position (positions rounded to ``tolerance``)."""
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
    axis = tail - head
    length2 = float(axis @ axis)
    t = np.zeros(len(points)) if length2 == 0.0 else np.clip((points - head) @ axis / length2, 0.0, 1.0)
    out: F64 = np.linalg.norm(points - (head + t[:, None] * axis), axis=1)
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
    node = weld_ids(points, WELD_RELATIVE * size)
    nodes = int(node.max()) + 1 if len(node) else 0
    node_edges = node[edges]
    node_edges = node_edges[node_edges[:, 0] != node_edges[:, 1]]  # edges welded shut
    pieces: NDArray[np.intp] | None = None  # connected pieces of the whole mesh, when first needed
    adjacency: tuple[NDArray[np.intp], NDArray[np.intp]] | None = None  # CSR, when first needed
    local = np.zeros(0, dtype=np.intp)
    out = []
    for g, bone in enumerate(group_bones):
        if bone < 0:
            continue
        weighted = weights[g] > 0
        idx = np.flatnonzero(weighted)
        if idx.size == 0:
            continue
        far = np.zeros(0, dtype=np.intp)
        worst = 0.0
        if idx.size >= MIN_VERTICES:
            d = segment_distance(points[idx], heads[bone], tails[bone])
            limit = FAR_FACTOR * float(np.percentile(d, 90)) + FAR_MARGIN * size
            far = idx[d > limit]
            worst = float(d.max())
        # Islands: pieces of the weighted region within one connected piece of the mesh.
        # Labels on the region's own (compacted) subgraph keep this proportional to the region.
        region_nodes, node_of = np.unique(node[idx], return_inverse=True)
        if adjacency is None:
            adjacency = _adjacency(nodes, node_edges)
            local = np.full(nodes, -1, dtype=np.intp)  # node -> index among the current region's nodes
        local[region_nodes] = np.arange(region_nodes.size)
        inner = _inner_edges(region_nodes, *adjacency, local)
        local[region_nodes] = -1
        region = component_labels(region_nodes.size, inner)[node_of.reshape(-1)]
        if np.unique(region).size == 1:  # one connected region: no islands
            if far.size:
                out.append(StrayGroup(g, int(bone), far, np.zeros(0, dtype=np.intp), worst))
            continue
        if pieces is None:
            pieces = component_labels(nodes, node_edges)[node]
        islands = idx[_off_main_region(pieces[idx], region)]
        if far.size or islands.size:
            out.append(StrayGroup(g, int(bone), far, islands, worst))
    return out


def _adjacency(nodes: int, edges: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """CSR adjacency: ``neighbour[indptr[n]:indptr[n + 1]]`` are the nodes joined to node n."""
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(nodes + 1, dtype=np.intp)
    np.cumsum(np.bincount(src, minlength=nodes), out=indptr[1:])
    return indptr, dst[order]


def _inner_edges(group_nodes: NDArray[np.intp], indptr: NDArray[np.intp], neighbour: NDArray[np.intp],
                 local: NDArray[np.intp]) -> NDArray[np.intp]:
    """(E', 2) edges between the group's nodes, in local numbering; work in the group's size only."""
    degree = indptr[group_nodes + 1] - indptr[group_nodes]
    ends = np.cumsum(degree)
    slots = np.arange(int(ends[-1]) if len(ends) else 0) + np.repeat(indptr[group_nodes] - (ends - degree), degree)
    a = np.repeat(np.arange(group_nodes.size), degree)
    b = local[neighbour[slots]]
    keep = b > a  # each edge once, both ends in the group
    return np.column_stack([a[keep], b[keep]])


def _off_main_region(piece: NDArray[np.intp], region: NDArray[np.intp]) -> NDArray[np.bool_]:
    """(N,) True where a vertex's region is not its piece's largest (ties: the smallest label)."""
    key = piece.astype(np.int64) * (len(region) + 1) + region
    combos, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    combo_piece = combos // (len(region) + 1)
    combo_region = combos % (len(region) + 1)
    order = np.lexsort((combo_region, -counts, combo_piece))
    first = np.ones(len(order), dtype=bool)
    first[1:] = combo_piece[order][1:] != combo_piece[order][:-1]
    main = np.zeros(len(combos), dtype=bool)
    main[order[first]] = True
    off: NDArray[np.bool_] = ~main[inverse.ravel()]
    return off
