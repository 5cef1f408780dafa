# SPDX-License-Identifier: GPL-3.0-or-later
"""Dual quaternion skinning (Kavan et al. 2007, "Skinning with Dual
Quaternions", sec. 3.1 and 3.3).

A dual quaternion is stored as (8,) float64: real part (w, x, y, z) then dual
part (w, x, y, z).  Not in the original experiment; added to show that blending rigid
transforms as dual quaternions keeps the twisted ring's radius.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import tolerances
from .affine import rigid_inverse, validate_affine
from .influences import checked_skinning_inputs
from .quaternions import matrix_to_quaternion, quaternion_multiply, quaternion_to_matrix

F64 = NDArray[np.float64]


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
