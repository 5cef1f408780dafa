# SPDX-License-Identifier: GPL-3.0-or-later
"""Strict linear blend skinning: ``p' = sum_j w_j C_j p``."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .influences import checked_skinning_inputs


def blend_matrices(
    indices: NDArray[np.intp], weights: NDArray[np.float64], skin: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Per-vertex blended matrix ``M_v = sum_k w_vk C_{i_vk}`` (no checks).

    Parameters
    ----------
    indices : (V, K) intp
    weights : (V, K) float64
    skin : (J, 4, 4) float64

    Returns
    -------
    (V, 4, 4) float64
    """
    # vk,vkij->vij: weight each influence's skinning matrix and sum over slots.
    blended: NDArray[np.float64] = np.einsum("vk,vkij->vij", weights, skin[indices])
    return blended


def linear_blend_skinning(
    points: ArrayLike, indices: ArrayLike, weights: ArrayLike, skin: ArrayLike
) -> NDArray[np.float64]:
    """Deform points by LBS after strict checks of every input.

    Parameters
    ----------
    points : (V, 3) float
        Bind-pose positions.
    indices : (V, K) int
        Slots into ``skin``.
    weights : (V, K) float
        Non-negative, rows summing to 1 (1e-12); never normalised here.
    skin : (J, 4, 4) float
        Skinning matrices ``C_j = G_j B_j^-1``.

    Returns
    -------
    (V, 3) float64
    """
    p, idx, w, c = checked_skinning_inputs(points, indices, weights, skin)
    m = blend_matrices(idx, w, c)
    # vij,vj->vi: the blended affine map applied to each homogeneous point.
    homo: NDArray[np.float64] = np.einsum("vij,vj->vi", m, np.column_stack([p, np.ones(len(p))]))
    return homo[:, :3]
