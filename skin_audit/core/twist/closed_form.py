# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed forms of the two-bone twist (docs/twist-experiment.md).

With ``C_root = I`` and ``C_child = Rz(theta)``, a point blended with child
weight ``w`` is ``(1 - w) p + w Rz(theta) p``; its distance to the axis scales
by ``sqrt(1 - 4 w (1 - w) sin^2(theta / 2))``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def twisted_positions(points: ArrayLike, child_weight: ArrayLike, theta: float) -> NDArray[np.float64]:
    """Closed-form LBS positions: the 2D weighted rotation written out per coordinate.

    Parameters
    ----------
    points : (V, 3) float
    child_weight : (V,) float
    theta : float
        Child twist about +z, radians.

    Returns
    -------
    (V, 3) float64
    """
    p = np.asarray(points, dtype=np.float64)
    w = np.asarray(child_weight, dtype=np.float64)
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    c, s = np.cos(theta), np.sin(theta)
    return np.column_stack(
        [(1.0 - w) * x + w * (c * x - s * y), (1.0 - w) * y + w * (s * x + c * y), z]
    )


def radius_ratio(child_weight: ArrayLike, theta: float) -> NDArray[np.float64]:
    """``r'/r = sqrt(1 - 4 w (1 - w) sin^2(theta/2))`` : same shape as ``child_weight``."""
    w = np.asarray(child_weight, dtype=np.float64)
    shrink = 4.0 * w * (1.0 - w) * np.sin(theta / 2.0) ** 2
    ratio: NDArray[np.float64] = np.sqrt(np.maximum(1.0 - shrink, 0.0))
    return ratio
