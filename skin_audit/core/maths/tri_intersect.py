# SPDX-License-Identifier: GPL-3.0-or-later
"""Exact triangle-triangle intersection, vectorised, with a hashed uniform grid so a mesh's
intersecting pairs are found without testing every pair.

The narrow phase is Moller's interval test (T. Moller, "A Fast Triangle-Triangle Intersection
Test", Journal of Graphics Tools 2(2), 1997): each triangle's vertices are signed against the
other's plane; when both triangles straddle the other's plane, each cuts the line where the two
planes meet in an interval, and the triangles intersect exactly when the two intervals overlap.
Touching (an interval end on the other's) counts as intersecting.  Coplanar pairs (every signed
distance exactly zero) are not counted: a posed mesh has none but by accident, and a contact
between coplanar faces has no depth.

The broad phase hashes each triangle's bounding box into the cells of a uniform grid (cell side
a multiple of the triangles' mean box size), so the pairs tested grow with the triangles that
share cells, not with the square of their number.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
IntP = NDArray[np.intp]

#: The grid's cell side, in mean triangle box sides: one or two cells per triangle.
CELL_SIDES = 2.0
#: Cells a triangle may span per axis before the grid coarsens (a few huge triangles beside many
#: small ones would otherwise fill millions of cells).
MAX_CELLS_PER_AXIS = 8


def _lone_vertex(d: F64) -> tuple[IntP, NDArray[np.bool_]]:
    """Per row of signed distances (n, 3): the vertex alone on its side of the other plane
    (Moller's case analysis) and whether the row is coplanar (every distance zero)."""
    d0, d1, d2 = d[:, 0], d[:, 1], d[:, 2]
    lone = np.full(len(d), -1, dtype=np.intp)
    # Moller's order: d0 d1 > 0 -> 2; d0 d2 > 0 -> 1; d1 d2 > 0 or d0 != 0 -> 0; d1 != 0 -> 1; d2 != 0 -> 2.
    rules = (((d0 * d1) > 0, 2), ((d0 * d2) > 0, 1), (((d1 * d2) > 0) | (d0 != 0), 0), (d1 != 0, 1), (d2 != 0, 2))
    for cond, k in rules:
        lone = np.where((lone < 0) & cond, k, lone)
    return lone, lone < 0


def _interval(p: F64, d: F64, lone: IntP) -> tuple[F64, F64]:
    """Where a triangle cuts the planes' line: projections ``p`` (n, 3) of its vertices on the
    line, signed distances ``d`` (n, 3), ``lone`` the vertex alone on its side; (lo, hi)."""
    rows = np.arange(len(p))
    a = (lone + 1) % 3
    b = (lone + 2) % 3
    pk, dk = p[rows, lone], d[rows, lone]
    with np.errstate(invalid="ignore", divide="ignore"):
        t1 = pk + (p[rows, a] - pk) * dk / (dk - d[rows, a])
        t2 = pk + (p[rows, b] - pk) * dk / (dk - d[rows, b])
    return np.minimum(t1, t2), np.maximum(t1, t2)


def triangles_intersect(a: F64, b: F64) -> NDArray[np.bool_]:
    """Whether triangle ``a[i]`` intersects triangle ``b[i]``, for every row.

    Parameters
    ----------
    a, b : (n, 3, 3) float64, each row a triangle's three vertices

    Returns
    -------
    (n,) bool; coplanar pairs are False
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 3 or a.shape[1:] != (3, 3):
        raise ValueError(f"expected two (n, 3, 3) arrays of the same shape, got {a.shape} and {b.shape}")
    out = np.zeros(len(a), dtype=bool)
    if not len(a):
        return out
    # 1. Each triangle's vertices signed against the other's plane (n . x + c).
    na = np.cross(a[:, 1] - a[:, 0], a[:, 2] - a[:, 0])
    nb = np.cross(b[:, 1] - b[:, 0], b[:, 2] - b[:, 0])
    db = np.einsum("nkc,nc->nk", b - a[:, :1], na)  # b's vertices against a's plane
    da = np.einsum("nkc,nc->nk", a - b[:, :1], nb)  # a's vertices against b's plane
    apart = ((db > 0).all(axis=1) | (db < 0).all(axis=1) | (da > 0).all(axis=1) | (da < 0).all(axis=1))
    live = np.flatnonzero(~apart)
    if not live.size:
        return out
    a, b, da, db, na, nb = a[live], b[live], da[live], db[live], na[live], nb[live]
    lone_a, flat_a = _lone_vertex(da)
    lone_b, flat_b = _lone_vertex(db)
    keep = ~(flat_a | flat_b)
    # 2. Project on the line's direction, by its largest coordinate (Moller's simplification).
    line = np.cross(na, nb)
    axis = np.argmax(np.abs(line), axis=1)
    rows = np.arange(len(a))
    pa = a[rows, :, axis]
    pb = b[rows, :, axis]
    lo_a, hi_a = _interval(pa, da, np.maximum(lone_a, 0))
    lo_b, hi_b = _interval(pb, db, np.maximum(lone_b, 0))
    # 3. The intervals overlap (closed).
    out[live] = keep & (np.maximum(lo_a, lo_b) <= np.minimum(hi_a, hi_b))
    return out


def candidate_pairs(lo: F64, hi: F64, side: NDArray[np.int8] | None = None) -> tuple[IntP, IntP]:
    """Pairs ``(i, j)``, ``i < j``, of boxes that share a grid cell and overlap.

    Parameters
    ----------
    lo, hi : (n, 3) float64, each box's corners
    side : (n,) int8, optional; 0, 1 or 2 (both): only pairs of a 0 with a 1 or a 2 with anything
        are kept (the two sides of a contact; pairs within one side are never asked for)

    Returns
    -------
    two (m,) intp arrays, each pair once
    """
    n = len(lo)
    empty = np.zeros(0, dtype=np.intp)
    if n < 2:
        return empty, empty
    extent = hi - lo
    cell = CELL_SIDES * float(extent.max(axis=1).mean())
    span = float((hi.max(axis=0) - lo.min(axis=0)).max())
    cell = max(cell, float(extent.max()) / MAX_CELLS_PER_AXIS, span * 1e-9, 1e-300)
    origin = lo.min(axis=0)
    first = np.floor((lo - origin) / cell).astype(np.int64)
    last = np.floor((hi - origin) / cell).astype(np.int64)
    count = last - first + 1  # (n, 3) cells per axis
    per = count.prod(axis=1)
    owner = np.repeat(np.arange(n, dtype=np.intp), per)
    # The k-th cell of a box: its offsets along x, y, z from k (row-major in its own block).
    k = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
    cy, cz = count[owner, 1], count[owner, 2]
    ox, rem = np.divmod(k, cy * cz)
    oy, oz = np.divmod(rem, cz)
    ix, iy, iz = first[owner, 0] + ox, first[owner, 1] + oy, first[owner, 2] + oz
    dims = last.max(axis=0) + 1
    key = (ix * dims[1] + iy) * dims[2] + iz
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    sizes = np.diff(np.append(starts, len(key)))
    if side is not None:
        # Cells holding one side only make no pair that is asked for.
        s = np.asarray(side, dtype=np.int8)[owner]
        has0 = np.add.reduceat((s == 0).astype(np.intp), starts) > 0
        has1 = np.add.reduceat((s == 1).astype(np.intp), starts) > 0
        has2 = np.add.reduceat((s == 2).astype(np.intp), starts) > 0
        useful = (has0 & has1) | has2
        kept = np.repeat(useful, sizes)
        key, owner = key[kept], owner[kept]
        if not len(key):
            return empty, empty
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        sizes = np.diff(np.append(starts, len(key)))
    # Every pair within a cell: entry p pairs with the entries after it in its cell.
    group_end = np.repeat(starts + sizes, sizes)
    after = group_end - np.arange(len(key)) - 1
    left = np.repeat(np.arange(len(key), dtype=np.intp), after)
    offset = np.arange(len(left), dtype=np.intp) - np.repeat(np.cumsum(after) - after, after)
    right = left + 1 + offset
    i, j = owner[left], owner[right]
    i, j = np.minimum(i, j), np.maximum(i, j)
    keep = i != j
    if side is not None:
        si, sj = side[i], side[j]
        keep &= (si == 2) | (sj == 2) | (si != sj)
    i, j = i[keep], j[keep]
    # Boxes overlap on every axis.
    overlap = ((lo[i] <= hi[j]) & (lo[j] <= hi[i])).all(axis=1)
    i, j = i[overlap], j[overlap]
    pair = np.unique(i.astype(np.int64) * n + j)
    return (pair // n).astype(np.intp), (pair % n).astype(np.intp)
