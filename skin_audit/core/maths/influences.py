# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks on per-vertex influences (joint index + weight slots) and points.

The strict core never normalises: a sum that is not 1 is an export or
indexing bug to report, not to hide (docs/twist-experiment.md).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import tolerances
from ..errors import (
    JointIndexError,
    NegativeWeightError,
    NonFinitePointError,
    NonFiniteWeightError,
    ShapeError,
    WeightSumError,
)
from .affine import validate_affine


def as_points(points: ArrayLike, name: str = "points") -> NDArray[np.float64]:
    """Return ``points`` as finite (V, 3) float64, or raise with the first bad vertex."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ShapeError(f"{name}: expected shape (V, 3), got {p.shape}")
    finite = np.isfinite(p).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise NonFinitePointError(
            f"{name}: vertex {int(bad[0])} is {p[bad[0]].tolist()} "
            f"({bad.size} non-finite vertices in all)"
        )
    return p


def validate_influences(
    indices: ArrayLike,
    weights: ArrayLike,
    joint_count: int,
    vertex_count: int | None = None,
    sum_tolerance: float = tolerances.WEIGHT_SUM,
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Check influence slots strictly and return them as arrays.

    Parameters
    ----------
    indices : (V, K) int
        Joint palette slot of each influence; checked even where the weight is 0.
    weights : (V, K) float
        Finite, >= 0, each row summing to 1 within ``sum_tolerance``.
    joint_count : int
        J, the number of skinning matrices.
    vertex_count : int, optional
        V, when the caller knows it (from the points).

    Returns
    -------
    indices : (V, K) intp
    weights : (V, K) float64
    """
    idx_raw = np.asarray(indices)
    w = np.asarray(weights, dtype=np.float64)
    if idx_raw.ndim != 2 or w.ndim != 2 or idx_raw.shape != w.shape:
        raise ShapeError(
            f"influences: indices {idx_raw.shape} and weights {w.shape} must both be (V, K)"
        )
    if vertex_count is not None and w.shape[0] != vertex_count:
        raise ShapeError(f"influences: {w.shape[0]} rows for {vertex_count} vertices")
    if idx_raw.size and not np.issubdtype(idx_raw.dtype, np.integer):
        raise ShapeError(f"joint indices must be integers, got dtype {idx_raw.dtype}")
    idx = idx_raw.astype(np.intp, copy=False)

    out_of_range = (idx < 0) | (idx >= joint_count)
    if out_of_range.any():
        v, k = (int(i) for i in np.argwhere(out_of_range)[0])
        raise JointIndexError(
            f"vertex {v}, slot {k}: joint index {int(idx[v, k])} is outside 0..{joint_count - 1} "
            f"(weight {w[v, k]:g}; {int(out_of_range.sum())} bad slots in all). "
            "Indices must be valid even where the weight is zero."
        )
    nan = np.isnan(w)
    if nan.any():
        v, k = (int(i) for i in np.argwhere(nan)[0])
        raise NonFiniteWeightError(f"vertex {v}, slot {k}: weight is NaN ({int(nan.sum())} NaN weights)")
    inf = np.isinf(w)
    if inf.any():
        v, k = (int(i) for i in np.argwhere(inf)[0])
        raise NonFiniteWeightError(
            f"vertex {v}, slot {k}: weight is infinite ({w[v, k]}; {int(inf.sum())} in all)"
        )
    neg = w < 0.0
    if neg.any():
        v, k = (int(i) for i in np.argwhere(neg)[0])
        raise NegativeWeightError(
            f"vertex {v}, slot {k}: weight {w[v, k]:g} is negative ({int(neg.sum())} in all)"
        )
    err = np.abs(w.sum(axis=1) - 1.0)
    bad = err > sum_tolerance
    if bad.any():
        worst = int(np.argmax(err))
        raise WeightSumError(
            f"vertex {worst}: weights sum to {w[worst].sum():.17g}, not 1 "
            f"(|error| {err[worst]:.3g} > {sum_tolerance:g}; {int(bad.sum())} vertices in all). "
            "skin_audit does not normalise silently: fix the weights at the source."
        )
    return idx, w


def checked_skinning_inputs(
    points: ArrayLike, indices: ArrayLike, weights: ArrayLike, skin: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]:
    """Every strict check a skinning method needs, in one place.

    Returns
    -------
    points : (V, 3) float64
    indices : (V, K) intp
    weights : (V, K) float64
    skin : (J, 4, 4) float64
    """
    p = as_points(points)
    c = validate_affine(skin, "skinning matrix")
    if c.ndim != 3:
        raise ShapeError(f"skinning matrices: expected shape (J, 4, 4), got {c.shape}")
    idx, w = validate_influences(indices, weights, c.shape[0], p.shape[0])
    return p, idx, w, c


def row_sums(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """(V,) each row's sum of a (V, K) table: column by column, left to right.

    numpy reduces a short last axis with a K-long inner loop per row, several times slower
    on a million rows; below 8 columns its own order is also left to right (the same
    result), so only wider tables go to ``sum``.
    """
    if table.shape[1] >= 8 or table.shape[1] == 0:
        wide: NDArray[np.float64] = table.sum(axis=1)
        return wide
    out = table[:, 0].copy()
    for k in range(1, table.shape[1]):
        out += table[:, k]
    return out


def rows_with(mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """(V,) whether each row of a (V, K) boolean table has any True, column by column."""
    out = np.zeros(mask.shape[0], dtype=bool)
    for k in range(mask.shape[1]):
        out |= mask[:, k]
    return out
