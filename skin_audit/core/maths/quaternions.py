# SPDX-License-Identifier: GPL-3.0-or-later
"""Quaternions (w, x, y, z) as (..., 4) float64 arrays: product, from and to rotation matrices.

The one place these formulas live; DQS, Blender's Preserve Volume, the B-Bone rolls and the
squash measures all use them.  ``blender_matrix_to_quaternion`` is Blender's own
``mat3_to_quat`` (its branches, so its last bits), for what is compared with Blender.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .affine import cross

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


def _normalized_to_quaternion(m: F64) -> F64:
    """(N, 4) Blender's mat3_normalized_to_quat_fast over (N, 3, 3), same branches, normalised, w >= 0."""
    # Blender indexes mat[col][row]; e(c, r) = m[:, r, c].
    def e(c: int, r: int) -> F64:
        out: F64 = m[:, r, c]
        return out

    n = len(m)
    q = np.zeros((n, 4))
    # (branch condition, index of the 0.25 s component, trace, sign test, the other three components)
    xx, yy, zz = e(0, 0), e(1, 1), e(2, 2)
    b1 = (zz < 0.0) & (xx > yy)
    b2 = (zz < 0.0) & ~b1
    b3 = ~(zz < 0.0) & (xx < -yy)
    b4 = ~(b1 | b2 | b3)
    branches = (
        (b1, 1, 1.0 + xx - yy - zz, e(1, 2) < e(2, 1),
         ((0, e(1, 2) - e(2, 1)), (2, e(0, 1) + e(1, 0)), (3, e(2, 0) + e(0, 2)))),
        (b2, 2, 1.0 - xx + yy - zz, e(2, 0) < e(0, 2),
         ((0, e(2, 0) - e(0, 2)), (1, e(0, 1) + e(1, 0)), (3, e(1, 2) + e(2, 1)))),
        (b3, 3, 1.0 - xx - yy + zz, e(0, 1) < e(1, 0),
         ((0, e(0, 1) - e(1, 0)), (1, e(2, 0) + e(0, 2)), (2, e(1, 2) + e(2, 1)))),
        (b4, 0, 1.0 + xx + yy + zz, np.zeros(n, dtype=bool),
         ((1, e(1, 2) - e(2, 1)), (2, e(2, 0) - e(0, 2)), (3, e(0, 1) - e(1, 0)))),
    )
    for mask, main, trace, negate, others in branches:
        if not mask.any():
            continue
        sq = 2.0 * np.sqrt(np.maximum(trace[mask], 0.0))
        sq = np.where(negate[mask], -sq, sq)
        q[mask, main] = 0.25 * sq
        for k, num in others:
            q[mask, k] = num[mask] / sq
    q /= np.sqrt(np.add.reduce(q * q, axis=1))[:, None]
    out: F64 = np.where(q[:, :1] < 0.0, -q, q)
    return out


def blender_matrix_to_quaternion(m: F64) -> F64:
    """(N, 4) Blender's mat3_to_quat over (N, 3, 3): axes normalised, a reflection negated."""
    unit = m / np.sqrt(np.add.reduce(m * m, axis=1))[:, None, :]
    c0, c1, c2 = unit[:, :, 0], unit[:, :, 1], unit[:, :, 2]
    negative = np.sum(c0 * cross(c1, c2), axis=1) < 0.0
    unit = np.where(negative[:, None, None], -unit, unit)
    return _normalized_to_quaternion(unit)

