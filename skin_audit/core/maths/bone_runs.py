# SPDX-License-Identifier: GPL-3.0-or-later
"""Linear blending with the weights grouped by bone ("runs").

A per-vertex blend gathers every slot's matrix for every vertex (12 numbers per
weight) and multiplies row by row.  Grouped by bone, the weights of one bone
share its matrix: one (3, 4) x (4, n) product per bone over points laid out in
run order (with a row of ones, so the translation comes with the product), a
multiply by the weights, and one weighted ``bincount`` per coordinate back to
the vertices.  The layout (``gather_points``) depends only
on the rest positions and the weights, so a caller computes it once per mesh
and every pose costs the products and the sums: about half the per-vertex
blend's time on a million vertices, and the same result up to summation order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from .parallel import GEMM_SIZE, run_all, thread_count

F64 = NDArray[np.float64]

#: Columns per (3, 4) x (4, n) product, 12 n <= GEMM_SIZE (the BLAS policy: ``parallel``).
GEMM_COLUMNS = 16384
#: Weights from which a blend splits its work across threads (below, thread hand-offs cost more).
PARALLEL_FROM = 200_000


@dataclass(frozen=True)
class BoneRuns:
    """Weights grouped by bone: entries ``starts[r]:starts[r + 1]`` belong to ``bone[r]``.

    A bone may own several runs (one per vertex group naming it); zero weights are left out.
    """

    bone: NDArray[np.intp]  # (R,)
    starts: NDArray[np.intp]  # (R + 1,)
    vertex: NDArray[np.intp]  # (N,)
    weight: F64  # (N,)
    vertex_count: int


def runs_from_table(bones: NDArray[np.intp], weights: F64) -> BoneRuns:
    """The non-zero slots of a (V, K) influence table grouped by bone (vertices ascending in a run).

    Parameters
    ----------
    bones : (V, K) int, the bone of each slot (anything where the weight is 0)
    weights : (V, K) float
    """
    v = bones.shape[0]
    used = weights != 0.0  # NaN is used: it reaches the vertex
    flat_bone = bones[used].astype(np.intp)
    # Row-major boolean indexing walks vertices in order, so a stable sort by bone keeps them
    # ascending; numpy sorts 16-bit keys stably by radix, in linear time.
    vertex = np.repeat(np.arange(v, dtype=np.intp), used.sum(axis=1))
    i16 = np.iinfo(np.int16)
    small = len(flat_bone) == 0 or (flat_bone.min() >= i16.min and flat_bone.max() <= i16.max)
    order = np.argsort(flat_bone.astype(np.int16) if small else flat_bone, kind="stable")
    sorted_bone = flat_bone[order]
    cut = np.flatnonzero(np.diff(sorted_bone)) + 1
    starts = np.concatenate([[0], cut, [len(sorted_bone)]]).astype(np.intp)
    return BoneRuns(sorted_bone[starts[:-1]] if len(sorted_bone) else np.zeros(0, dtype=np.intp),
                    starts if len(sorted_bone) else np.zeros(1, dtype=np.intp),
                    vertex[order], np.asarray(weights, dtype=np.float64)[used][order], v)


def gather_points(runs: BoneRuns, points: F64) -> F64:
    """(4, N) ``points`` laid out in run order, one row per coordinate and a row of ones (computed
    once per mesh): a bone's (3, 4) matrix applies to them in one product, translation included."""
    # Each coordinate taken straight from its (strided) column: no transposed copy first.
    columns = np.asarray(points, dtype=np.float64)
    out: F64 = np.empty((4, len(runs.vertex)))
    out[3] = 1.0

    def gather(axis: int) -> None:
        np.take(columns[:, axis], runs.vertex, out=out[axis])

    if len(runs.vertex) < PARALLEL_FROM:
        for axis in range(3):
            gather(axis)
    else:
        run_all([lambda: gather(0), lambda: gather(1), lambda: gather(2)])
    return out


def select_runs(runs: BoneRuns, keep: NDArray[np.bool_], *per_weight: F64) -> tuple[BoneRuns, tuple[F64, ...]]:
    """The runs where ``keep`` (R,) is True, and the same slices of each (..., N) array given.

    A pose that moves few bones blends only their weights: the others' displacement is exactly
    zero, so leaving them out changes no sum.  Contiguous slices, copied once.
    """
    chosen = np.flatnonzero(keep)
    spans = [(int(runs.starts[r]), int(runs.starts[r + 1])) for r in chosen.tolist()]
    lengths = np.array([hi - lo for lo, hi in spans], dtype=np.intp)
    sub = BoneRuns(runs.bone[chosen], np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp),
                   np.concatenate([runs.vertex[lo:hi] for lo, hi in spans]) if spans else np.zeros(0, dtype=np.intp),
                   np.concatenate([runs.weight[lo:hi] for lo, hi in spans]) if spans else np.zeros(0),
                   runs.vertex_count)
    sliced = tuple(np.concatenate([a[..., lo:hi] for lo, hi in spans], axis=-1) if spans
                   else np.zeros(a.shape[:-1] + (0,)) for a in per_weight)
    return sub, sliced


def blend_runs(runs: BoneRuns, gathered: F64, matrices: F64, weight: F64 | None = None,
               add_to: F64 | None = None) -> F64:
    """(3, V) ``sum_n weight_n (A_b p_n + t_b)`` per vertex, ``[A_b | t_b]`` = ``matrices[b]``.

    Parameters
    ----------
    runs : BoneRuns
    gathered : (4, N) float64, ``gather_points(runs, points)``
    matrices : (J, 3, 4) or (J, 4, 4) float64, indexed by ``runs.bone``
    weight : (N,) float64, default ``runs.weight`` (a caller may fold a per-vertex factor in)
    add_to : (V, 3) float64, optional: the sums are added to it in place, column by column, and it
        is returned instead (no (3, V) result and no transposed copy)

    Returns
    -------
    (3, V) float64, one row per coordinate; vertices without weights get 0.  Non-finite
    matrices reach exactly the vertices weighted to them.  ``add_to`` when given.
    """
    (out,) = blend_runs_many(runs, gathered, np.asarray(matrices)[None], weight,
                             None if add_to is None else [add_to])
    return out


def blend_runs_many(runs: BoneRuns, gathered: F64, matrices: F64, weight: F64 | None = None,
                    add_to: Sequence[F64] | None = None) -> list[F64]:
    """``blend_runs`` at P poses at once, ``matrices`` (P, J, 3 or 4, 4): each run's product takes
    every pose's matrix together, (3 P, 4) x (4, n), so a rig of many small runs pays its per-run
    overhead once, not once per pose.  ``add_to``: P (V, 3) arrays, or None.  Returns P results."""
    poses = matrices.shape[0]
    n = int(runs.starts[-1])
    w = runs.weight if weight is None else weight
    products = np.empty((3 * poses, n))  # rows 3 k .. 3 k + 2: pose k
    # Columns per product: at most GEMM_SIZE multiply-adds (the BLAS policy: ``parallel``).
    columns = max(min(GEMM_COLUMNS, GEMM_SIZE // (12 * poses)), 1)
    stacked = np.ascontiguousarray(np.asarray(matrices)[:, :, :3, :].transpose(1, 0, 2, 3))  # (J, P, 3, 4)
    stacked = stacked.reshape(stacked.shape[0], 3 * poses, 4)

    def product(first: int, stop: int) -> None:
        for r in range(first, stop):
            lo, hi = runs.starts[r], runs.starts[r + 1]
            if lo == hi:
                continue
            bone = runs.bone[r]
            for a in range(lo, hi, columns):
                b = min(a + columns, hi)
                np.matmul(stacked[bone], gathered[:, a:b], out=products[:, a:b])
        lo, hi = runs.starts[first], runs.starts[stop]
        with np.errstate(invalid="ignore", over="ignore"):  # inf * weight stays for the audit to report
            products[:, lo:hi] *= w[lo:hi]

    outs = [np.empty((3, runs.vertex_count)) if add_to is None else add_to[k].T for k in range(poses)]

    def total(row: int) -> None:
        sums = np.bincount(runs.vertex, products[row], minlength=runs.vertex_count)
        if add_to is None:
            outs[row // 3][row % 3] = sums
        else:
            outs[row // 3][row % 3] += sums

    if n * poses < PARALLEL_FROM:
        product(0, len(runs.bone))
        for row in range(3 * poses):
            total(row)
    else:
        # Two halves of the weights (whole runs), then one coordinate of one pose per task.
        middle = int(np.searchsorted(runs.starts, n // 2))
        run_all([lambda: product(0, middle), lambda: product(middle, len(runs.bone))])
        # As many tasks as threads when the rows outnumber them: a hand-off per row (192 for a
        # 64-pose batch) costs more than a small mesh's sums.
        workers = thread_count()
        if 3 * poses <= workers:
            run_all([partial(total, row) for row in range(3 * poses)])
        else:
            run_all([partial(_each, total, range(first, 3 * poses, workers)) for first in range(workers)])
    return outs if add_to is None else list(add_to)


def _each(task: Callable[[int], None], rows: range) -> None:
    for row in rows:
        task(row)
