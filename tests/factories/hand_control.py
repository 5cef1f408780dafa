# SPDX-License-Identifier: GPL-3.0-or-later
"""The hand-computed control that catches matrix-order mistakes (docs/twist-experiment.md).

The cylinder cannot: its joint translation is along the rotation axis and
commutes with the rotation.  Here ``B_1 = Ty(1)``, ``G_1 = Ty(1) Rz(90)``,
``C_0 = I``, ``p = (1, 1, 0)`` and equal weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from skin_audit.core.maths.affine import rotation, translation, translation_only_inverse
from skin_audit.core.maths.lbs import linear_blend_skinning

POINT = (1.0, 1.0, 0.0)
EXPECTED = (0.5, 1.5, 0.0)

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class HandControl:
    correct: Vec3
    inverse_bind_forgotten: Vec3
    order_reversed: Vec3
    forgotten_error: float
    reversed_error: float


def run_hand_control() -> HandControl:
    """Blend the control point three ways: right, without ``B^-1``, and as ``B^-1 G``."""
    bind1 = translation(0.0, 1.0, 0.0)
    current1 = translation(0.0, 1.0, 0.0) @ rotation("z", np.pi / 2.0)
    inv1 = translation_only_inverse(bind1)
    point = np.array([POINT])
    idx = np.array([[0, 1]])
    w = np.array([[0.5, 0.5]])

    def blend(c1: NDArray[np.float64]) -> NDArray[np.float64]:
        blended: NDArray[np.float64] = linear_blend_skinning(point, idx, w, np.stack([np.eye(4), c1]))[0]
        return blended

    def xyz(v: NDArray[np.float64]) -> Vec3:
        return (float(v[0]), float(v[1]), float(v[2]))

    correct = blend(current1 @ inv1)
    forgotten = blend(current1)
    reversed_ = blend(inv1 @ current1)
    return HandControl(
        xyz(correct),
        xyz(forgotten),
        xyz(reversed_),
        float(np.linalg.norm(forgotten - correct)),
        float(np.linalg.norm(reversed_ - correct)),
    )
