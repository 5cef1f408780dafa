# SPDX-License-Identifier: GPL-3.0-or-later
"""Quaternions (w, x, y, z) as (..., 4) float64 arrays: product, from and to rotation matrices.

The one place these formulas live; DQS, Blender's Preserve Volume and the squash measures
all use them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]


def quaternion_multiply(a: F64, b: F64) -> F64:
    """Hamilton product of (..., 4) quaternions (w, x, y, z)."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def matrix_to_quaternion(rot: F64) -> F64:
    """Unit quaternions (w, x, y, z) with w >= 0 from (..., 3, 3) rotations.

    Uses the largest of the four diagonal combinations, which keeps the
    square root away from zero for every rotation (Shepperd's method).
    """
    r = np.asarray(rot, dtype=np.float64)
    tr = np.trace(r, axis1=-2, axis2=-1)
    diag = np.stack([tr, r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]], axis=-1)
    choice = np.argmax(diag, axis=-1)
    q = np.empty(r.shape[:-2] + (4,))
    # Case 0: w is largest.
    s = np.sqrt(np.maximum(1.0 + tr, 0.0)) * 2.0
    q0 = np.stack(
        [0.25 * s, (r[..., 2, 1] - r[..., 1, 2]) / np.where(s == 0, 1, s),
         (r[..., 0, 2] - r[..., 2, 0]) / np.where(s == 0, 1, s),
         (r[..., 1, 0] - r[..., 0, 1]) / np.where(s == 0, 1, s)], axis=-1)
    cases = [q0]
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        s = np.sqrt(np.maximum(1.0 + r[..., i, i] - r[..., j, j] - r[..., k, k], 0.0)) * 2.0
        safe = np.where(s == 0, 1, s)
        qi = np.empty(r.shape[:-2] + (4,))
        qi[..., 0] = (r[..., k, j] - r[..., j, k]) / safe
        qi[..., 1 + i] = 0.25 * s
        qi[..., 1 + j] = (r[..., j, i] + r[..., i, j]) / safe
        qi[..., 1 + k] = (r[..., k, i] + r[..., i, k]) / safe
        cases.append(qi)
    for c, qc in enumerate(cases):
        q[choice == c] = qc[choice == c]
    q *= np.where(q[..., :1] < 0, -1.0, 1.0)
    unit: F64 = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return unit


def scaled_rotation_matrix(q: F64) -> F64:
    """(..., 3, 3) matrices of ``p -> q p q*`` for quaternions of any length: ``|q|^2`` times a rotation.

    Blender's ``mul_v3m3_dq`` applies a blended, unnormalised dual quaternion this way and
    divides by ``|q|^2`` afterwards; for a unit quaternion this is the rotation itself.
    """
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack(
        [
            np.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), w * w + y * y - x * x - z * z, 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w + z * z - x * x - y * y], -1),
        ],
        axis=-2,
    )


def quaternion_to_matrix(q: F64) -> F64:
    """(..., 3, 3) rotation matrices from unit quaternions (..., 4)."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )
