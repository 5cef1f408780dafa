# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's linear blend for one pose, by one matrix product over the weights as stored.

Grouped by bone (``bone_runs``) a pose costs one product per bone and a weighted sum, but
laying the weights out that way (finding the non-zero ones, gathering the points in run
order) costs more than a pose: it pays when a mesh is blended at many poses, as the audit
does.  For one pose of a mesh with few groups, the (G, V) weights go through one product
instead, block by block::

    [D_g | 1]^T (13, G)  @  W (G, n)  ->  each vertex's summed displacement matrix and weight sum

then ``p + a (D_v p + d_v) / sum w`` per vertex.  A block takes only the groups with a weight
in it: vertices stored in modelling order (ring after ring along a limb) meet few bones per
block, so the product's work follows the weights, not vertices x groups.  In a random vertex
order every block meets every group, and the work is 13 multiply-adds per group and vertex:
the path is chosen only when groups are few (``MAX_GROUPS``).  float64 throughout: float32
weights convert exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .parallel import GEMM_SIZE, run_all

F64 = NDArray[np.float64]

#: Vertices per product: the weights' float64 block (groups x BLOCK) stays in cache.
BLOCK = 16384
#: Deform groups at most for the dense product: beyond, in a random vertex order (every block
#: meets every group) its work would exceed the layout's (non-zero weights only) even for one pose.
MAX_GROUPS = 64
#: Vertices from which the blocks are split between threads.
PARALLEL_FROM = 65536


def blend_dense(weights: NDArray[np.floating[Any]], rows: NDArray[np.intp], displacement: F64, points: F64,
                mask: F64, min_contrib: float) -> tuple[F64, F64, NDArray[np.intp]]:
    """Blender's blend ``p + a sum_g w_g (D_g p + d_g) / sum_g w_g`` at every vertex.

    Parameters
    ----------
    weights : (G, V) float, every vertex group as stored
    rows : (R,) int, the groups that deform (each names a bone with Deform on)
    displacement : (R, 3, 4) float64, ``[D | d]`` of each row's bone: its deform matrix minus the
        identity, in the points' space.  Must be finite: every product reads every row.
    points : (V, 3) float64
    mask : (V,) float64, the modifier's mask weight ``a``
    min_contrib : float, a vertex whose weight sum is not above it does not move (Blender's 1e-4)

    Returns
    -------
    positions : (V, 3) float64
    contrib : (V,) float64, the sum of each vertex's deform weights
    count : (V,) intp, its non-zero deform weights (NaN counts)
    """
    v = points.shape[0]
    r = len(rows)
    # Rows 0-11 the matrices' entries, row 12 ones (the weight sum comes out of the same product).
    table = np.empty((13, r))
    table[:12] = displacement.reshape(r, 12).T
    table[12] = 1.0
    positions = np.empty((v, 3))
    contrib = np.empty(v)
    count = np.empty(v, dtype=np.intp)
    contiguous = r > 0 and int(rows[-1]) - int(rows[0]) + 1 == r and bool(np.all(np.diff(rows) == 1))
    first = int(rows[0]) if r else 0

    def block(lo: int, hi: int) -> None:
        stored = weights[first:first + r, lo:hi] if contiguous else weights[rows, lo:hi]
        used = stored != 0  # NaN is used: it reaches the vertex
        active = np.flatnonzero(used.any(axis=1))
        block_table = table
        if len(active) < r:  # groups without a weight here add nothing
            stored, used, block_table = stored[active], used[active], table[:, active]
        w = stored.astype(np.float64)
        summed = np.empty((13, hi - lo))
        # Columns of at most GEMM_SIZE / (13 k) (the BLAS policy: ``parallel``).
        step = max(GEMM_SIZE // (13 * max(len(w), 1)), 256)
        for a in range(0, hi - lo, step):
            np.matmul(block_table, w[:, a:a + step], out=summed[:, a:a + step])
        count[lo:hi] = np.add.reduce(used, axis=0, dtype=np.intp)
        total = summed[12]
        contrib[lo:hi] = total
        moved = total > min_contrib
        # Blender's a / sum w, 0 where the vertex does not move (NaN sums do not move either).
        scale = np.divide(mask[lo:hi], total, out=np.zeros(hi - lo), where=moved)
        p = points[lo:hi]
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite weights reach their vertex
            for axis in range(3):
                d = summed[4 * axis] * p[:, 0]
                d += summed[4 * axis + 1] * p[:, 1]
                d += summed[4 * axis + 2] * p[:, 2]
                d += summed[4 * axis + 3]
                d *= scale
                np.add(p[:, axis], d, out=positions[lo:hi, axis])

    def span(start: int, stop: int) -> None:
        for lo in range(start, stop, BLOCK):
            block(lo, min(lo + BLOCK, stop))

    if v < PARALLEL_FROM:
        span(0, v)
    else:
        middle = (v // 2 // BLOCK) * BLOCK
        run_all([lambda: span(0, middle), lambda: span(middle, v)])
    return positions, contrib, count
