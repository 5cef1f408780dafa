# SPDX-License-Identifier: GPL-3.0-or-later
"""Smallest singular value and determinant of many 3x3 matrices in closed form.

``np.linalg.svd`` on (N, 3, 3) runs LAPACK once per matrix (about 3 to 10 us each
here); the pose sweep needs it for every vertex a bent B-Bone moves at every pose.
This computes the same two numbers with array operations over all N at once:

1. ``det`` from cofactors;
2. the two largest eigenvalues ``l1 >= l2`` of ``M = A^T A``: the eigenvalue the
   trigonometric formula isolates best (the largest when the other two are the close
   pair, else the smallest), its eigenvector from the rows of ``M - l I``, and the other
   two from ``M`` restricted to the orthogonal plane (a 2x2 symmetric problem whose
   square root holds a sum of squares, so a close or double pair stays exact);
3. ``smallest = |det| / sqrt(l1 l2)`` (= ``s3`` since ``s1 s2 s3 = |det|``): exact near a
   collapse, where ``sqrt(l3)`` would lose half the digits.

Where ``s2`` itself is tiny (rank one or less) that quotient is ill-conditioned: those
rows go to ``np.linalg.svd``.  Measured against it: within 5e-14 on random matrices,
rotation blends and near collapses.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]

#: Below ``s2 / s1`` of this, a row goes to LAPACK's SVD (the quotient would lose
#: ``eps / ratio`` of absolute accuracy: 2e-13 at the limit).
SVD_FALLBACK_RATIO = 1e-3


def smallest_singular_and_det(a: F64) -> tuple[F64, F64]:
    """Smallest singular value and determinant of each 3x3 matrix.

    Parameters
    ----------
    a : (N, 3, 3) float64 or (N, 9) float64 (row-major)

    Returns
    -------
    smallest : (N,) float64, as ``np.linalg.svd(a, compute_uv=False)[:, -1]``
    det : (N,) float64
    """
    a9 = np.asarray(a, dtype=np.float64).reshape(-1, 9)
    a00, a01, a02, a10, a11, a12, a20, a21, a22 = np.ascontiguousarray(a9.T)
    det = a00 * (a11 * a22 - a12 * a21) + a01 * (a12 * a20 - a10 * a22) + a02 * (a10 * a21 - a11 * a20)
    m00 = a00 * a00 + a10 * a10 + a20 * a20
    m11 = a01 * a01 + a11 * a11 + a21 * a21
    m22 = a02 * a02 + a12 * a12 + a22 * a22
    m01 = a00 * a01 + a10 * a11 + a20 * a21
    m02 = a00 * a02 + a10 * a12 + a20 * a22
    m12 = a01 * a02 + a11 * a12 + a21 * a22
    with np.errstate(divide="ignore", invalid="ignore"):
        # Eigenvalues of M: q + 2 p cos(phi + 2 pi k / 3) (trigonometric form of the cubic).
        q = (m00 + m11 + m22) / 3.0
        d0, d1, d2 = m00 - q, m11 - q, m22 - q
        p = np.sqrt((d0 * d0 + d1 * d1 + d2 * d2 + 2.0 * (m01 * m01 + m02 * m02 + m12 * m12)) / 6.0)
        ps = np.where(p > 0.0, p, 1.0)
        r = 0.5 * (d0 * (d1 * d2 - m12 * m12) - m01 * (m01 * d2 - m12 * m02)
                   + m02 * (m01 * m12 - d1 * m02)) / (ps * ps * ps)
        phi = np.arccos(np.clip(r, -1.0, 1.0)) / 3.0
        top = phi < np.pi / 6.0  # the largest is the isolated one; else the smallest is
        iso = q + 2.0 * p * np.cos(np.where(top, phi, phi + 2.0 * np.pi / 3.0))
        # Its eigenvector: the longest cross product of two rows of M - iso I.
        e0, e1, e2 = m00 - iso, m11 - iso, m22 - iso
        x0, y0, z0 = m01 * m12 - m02 * e1, m02 * m01 - e0 * m12, e0 * e1 - m01 * m01
        x1, y1, z1 = m01 * e2 - m02 * m12, m02 * m02 - e0 * e2, e0 * m12 - m01 * m02
        x2, y2, z2 = e1 * e2 - m12 * m12, m12 * m02 - m01 * e2, m01 * m12 - e1 * m02
        n0, n1, n2 = x0 * x0 + y0 * y0 + z0 * z0, x1 * x1 + y1 * y1 + z1 * z1, x2 * x2 + y2 * y2 + z2 * z2
        use = n1 > n0
        vx, vy, vz, nn = np.where(use, x1, x0), np.where(use, y1, y0), np.where(use, z1, z0), np.maximum(n0, n1)
        use = n2 > nn
        vx, vy, vz, nn = np.where(use, x2, vx), np.where(use, y2, vy), np.where(use, z2, vz), np.maximum(nn, n2)
        # All three eigenvalues equal: any direction is an eigenvector.
        flat = ~(nn > 0.0)
        if flat.any():
            vx[flat], vy[flat], vz[flat], nn[flat] = 1.0, 0.0, 0.0, 1.0
        inv = 1.0 / np.sqrt(nn)
        vx, vy, vz = vx * inv, vy * inv, vz * inv
        # u = v x (the axis v is least along), w = v x u: a basis of the plane orthogonal to v.
        ax, ay, az = np.abs(vx), np.abs(vy), np.abs(vz)
        kx = (ax <= ay) & (ax <= az)
        ky = ~kx & (ay <= az)
        ux = np.where(kx, 0.0, np.where(ky, -vz, vy))
        uy = np.where(kx, vz, np.where(ky, 0.0, -vx))
        uz = np.where(kx, -vy, np.where(ky, vx, 0.0))
        inv = 1.0 / np.sqrt(ux * ux + uy * uy + uz * uz)
        ux, uy, uz = ux * inv, uy * inv, uz * inv
        wx, wy, wz = vy * uz - vz * uy, vz * ux - vx * uz, vx * uy - vy * ux
        # M in that plane: [[pa, pb], [pb, pc]]; its eigenvalues mean +- half.
        mwx, mwy, mwz = m00 * wx + m01 * wy + m02 * wz, m01 * wx + m11 * wy + m12 * wz, m02 * wx + m12 * wy + m22 * wz
        pa = ux * (m00 * ux + m01 * uy + m02 * uz) + uy * (m01 * ux + m11 * uy + m12 * uz) \
            + uz * (m02 * ux + m12 * uy + m22 * uz)
        pb = ux * mwx + uy * mwy + uz * mwz
        pc = wx * mwx + wy * mwy + wz * mwz
        mean = 0.5 * (pa + pc)
        half = np.sqrt(0.25 * (pa - pc) ** 2 + pb * pb)
        l1 = np.where(top, iso, mean + half)
        l2 = np.where(top, mean + half, mean - half)
        smallest: F64 = np.abs(det) / np.sqrt(l1 * l2)
    rows = np.flatnonzero(~(l2 > (SVD_FALLBACK_RATIO * SVD_FALLBACK_RATIO) * l1))
    if rows.size:
        rows = rows[np.isfinite(a9[rows]).all(axis=1)]  # (LAPACK rejects NaN; they stay NaN)
        smallest[rows] = np.linalg.svd(a9[rows].reshape(-1, 3, 3), compute_uv=False)[:, -1]
    return smallest, det
