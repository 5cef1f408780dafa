# SPDX-License-Identifier: GPL-3.0-or-later
"""Dual quaternion skinning (Kavan et al. 2007, "Skinning with Dual
Quaternions", sec. 3.1 and 3.3).

A dual quaternion is stored as (8,) float64: real part (w, x, y, z) then dual
part (w, x, y, z).  Not in seed 000; added to show that blending rigid
transforms as dual quaternions keeps the twisted ring's radius.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import tolerances
from .affine import rigid_inverse, validate_affine
from .influences import checked_skinning_inputs

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


def quaternion_to_matrix(q: F64) -> F64:
    """(..., 3, 3) rotation matrices from unit quaternions (..., 4)."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def matrix_to_dual_quaternion(
    matrices: ArrayLike, name: str = "skinning matrix", rigid_tolerance: float = tolerances.ORTHONORMAL
) -> F64:
    """Unit dual quaternions from rigid 4x4 matrices.

    Parameters
    ----------
    matrices : (J, 4, 4) float
        Must be rigid (checked): DQS blends rotations and translations only.

    Returns
    -------
    (J, 8) float64
        ``real = q``, ``dual = 0.5 * (0, t) * q``.
    """
    m = validate_affine(matrices, name)
    rigid_inverse(m, name, rigid_tolerance)  # raises NotRigidError naming the joint
    q = matrix_to_quaternion(m[..., :3, :3])
    t = np.concatenate([np.zeros(m.shape[:-2] + (1,)), m[..., :3, 3]], axis=-1)
    return np.concatenate([q, 0.5 * quaternion_multiply(t, q)], axis=-1)


def blend_dual_quaternions(
    indices: NDArray[np.intp], weights: F64, dual: F64
) -> F64:
    """Weighted, sign-corrected, normalised dual quaternion per vertex (no checks).

    Each influence is flipped onto the hemisphere of the vertex's heaviest
    influence (antipodality: q and -q are the same rotation, but blending them
    would cancel), then the sum is divided by the norm of its real part.

    Parameters
    ----------
    indices : (V, K) intp
    weights : (V, K) float64
    dual : (J, 8) float64

    Returns
    -------
    (V, 8) float64
    """
    dq = dual[indices]  # (V, K, 8)
    pivot = dq[np.arange(len(indices)), np.argmax(weights, axis=1), :4]
    # vkc,vc->vk: dot product of each influence's rotation with the pivot's.
    sign = np.where(np.einsum("vkc,vc->vk", dq[..., :4], pivot) < 0.0, -1.0, 1.0)
    # vk,vkc->vc: sum of the signed, weighted dual quaternions.
    b: F64 = np.einsum("vk,vkc->vc", weights * sign, dq)
    unit: F64 = b / np.linalg.norm(b[:, :4], axis=1, keepdims=True)
    return unit


def apply_dual_quaternions(dual: F64, points: F64) -> F64:
    """Transform (V, 3) points by (V, 8) unit dual quaternions."""
    real, eps = dual[:, :4], dual[:, 4:]
    conj = real * np.array([1.0, -1.0, -1.0, -1.0])
    t = 2.0 * quaternion_multiply(eps, conj)[:, 1:]
    # vij,vj->vi: rotate each point by its own rotation matrix.
    rotated: F64 = np.einsum("vij,vj->vi", quaternion_to_matrix(real), points)
    return rotated + t


def dual_quaternion_skinning(
    points: ArrayLike,
    indices: ArrayLike,
    weights: ArrayLike,
    skin: ArrayLike,
    rigid_tolerance: float = tolerances.ORTHONORMAL,
) -> F64:
    """Deform points by DQS after the same strict checks as LBS.

    Parameters
    ----------
    points : (V, 3) float
    indices : (V, K) int
    weights : (V, K) float
        Non-negative, rows summing to 1 (1e-12).
    skin : (J, 4, 4) float
        Rigid skinning matrices ``C_j = G_j B_j^-1``.
    rigid_tolerance : float
        How far from orthonormal a rotation may be (float32 data needs more).

    Returns
    -------
    (V, 3) float64
    """
    p, idx, w, c = checked_skinning_inputs(points, indices, weights, skin)
    dual = matrix_to_dual_quaternion(c, rigid_tolerance=rigid_tolerance)
    return apply_dual_quaternions(blend_dual_quaternions(idx, w, dual), p)
