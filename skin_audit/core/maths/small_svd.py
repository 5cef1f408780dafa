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


#: Rows of scratch ``smallest_singular_and_det`` needs per matrix (see ``workspace``).
WORKSPACE_ROWS = 24


def smallest_singular_and_det(a: F64, workspace: F64 | None = None,
                              out: tuple[F64, F64] | None = None) -> tuple[F64, F64]:
    """Smallest singular value and determinant of each 3x3 matrix.

    Parameters
    ----------
    a : (N, 3, 3) float64 or (N, 9) float64 (row-major)
    workspace : (WORKSPACE_ROWS, >= N) float64, optional
        Scratch for the intermediate values (its contents are overwritten).  A caller that
        measures many blocks passes one, so no block allocates its ~40 temporaries (large
        temporaries are mapped and faulted in afresh each time, which cost more than the
        arithmetic); the results do not depend on it.
    out : two (N,) float64 arrays, optional
        Where to write ``smallest`` and ``det`` (returned).

    Returns
    -------
    smallest : (N,) float64, as ``np.linalg.svd(a, compute_uv=False)[:, -1]``
    det : (N,) float64
    """
    a9 = np.asarray(a, dtype=np.float64).reshape(-1, 9)
    n = len(a9)
    if workspace is None or workspace.shape[0] < WORKSPACE_ROWS or workspace.shape[1] < n:
        workspace = np.empty((WORKSPACE_ROWS, n))
    smallest, det = (np.empty(n), np.empty(n)) if out is None else out
    l1, l2 = _closed_form(a9, workspace[:, :n], smallest, det)
    rows = np.flatnonzero(~(l2 > (SVD_FALLBACK_RATIO * SVD_FALLBACK_RATIO) * l1))
    if rows.size:
        rows = rows[np.isfinite(a9[rows]).all(axis=1)]  # (LAPACK rejects NaN; they stay NaN)
        smallest[rows] = np.linalg.svd(a9[rows].reshape(-1, 3, 3), compute_uv=False)[:, -1]
    return smallest, det


def _closed_form(a9: F64, ws: F64, smallest: F64, det: F64) -> tuple[F64, F64]:
    """Steps 1 to 3 of the module's method into ``smallest`` and ``det``; returns ``l1`` and ``l2``
    (views of ``ws``).  Every value is computed in place in a row of ``ws``, by the same
    operations in the same order as the expressions in the comments."""
    mul, add, sub, div = np.multiply, np.add, np.subtract, np.divide
    t, u = ws[22], ws[23]

    def products(out: F64, x0: F64, y0: F64, x1: F64, y1: F64, x2: F64, y2: F64) -> F64:
        """out = x0 * y0 + x1 * y1 + x2 * y2 (uses t)."""
        mul(x0, y0, out=out)
        mul(x1, y1, out=t)
        add(out, t, out=out)
        mul(x2, y2, out=t)
        return add(out, t, out=out)  # type: ignore[no-any-return]

    def difference(out: F64, x0: F64, y0: F64, x1: F64, y1: F64) -> F64:
        """out = x0 * y0 - x1 * y1 (uses t)."""
        mul(x0, y0, out=out)
        mul(x1, y1, out=t)
        return sub(out, t, out=out)  # type: ignore[no-any-return]

    a00, a01, a02, a10, a11, a12, a20, a21, a22 = ws[0:9]
    np.copyto(ws[0:9], a9.T)
    m00, m11, m22, m01, m02, m12 = ws[9:15]
    # det = a00 (a11 a22 - a12 a21) + a01 (a12 a20 - a10 a22) + a02 (a10 a21 - a11 a20)
    mul(a00, difference(u, a11, a22, a12, a21), out=det)
    add(det, mul(a01, difference(u, a12, a20, a10, a22), out=u), out=det)
    add(det, mul(a02, difference(u, a10, a21, a11, a20), out=u), out=det)
    # M = A^T A
    products(m00, a00, a00, a10, a10, a20, a20)
    products(m11, a01, a01, a11, a11, a21, a21)
    products(m22, a02, a02, a12, a12, a22, a22)
    products(m01, a00, a01, a10, a11, a20, a21)
    products(m02, a00, a02, a10, a12, a20, a22)
    products(m12, a01, a02, a11, a12, a21, a22)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Eigenvalues of M: q + 2 p cos(phi + 2 pi k / 3) (trigonometric form of the cubic).
        q, d0, d1, d2, p, ps, r, iso = ws[0:8]
        div(add(add(m00, m11, out=q), m22, out=q), 3.0, out=q)  # q = (m00 + m11 + m22) / 3
        sub(m00, q, out=d0)
        sub(m11, q, out=d1)
        sub(m22, q, out=d2)
        # p = sqrt((d0 d0 + d1 d1 + d2 d2 + 2 (m01 m01 + m02 m02 + m12 m12)) / 6)
        products(p, d0, d0, d1, d1, d2, d2)
        mul(products(u, m01, m01, m02, m02, m12, m12), 2.0, out=u)
        np.sqrt(div(add(p, u, out=p), 6.0, out=p), out=p)
        np.copyto(ps, 1.0)
        np.copyto(ps, p, where=p > 0.0)  # ps = where(p > 0, p, 1)
        # r = 0.5 (d0 (d1 d2 - m12 m12) - m01 (m01 d2 - m12 m02) + m02 (m01 m12 - d1 m02)) / (ps ps ps)
        mul(d0, difference(u, d1, d2, m12, m12), out=r)
        sub(r, mul(m01, difference(u, m01, d2, m12, m02), out=u), out=r)
        add(r, mul(m02, difference(u, m01, m12, d1, m02), out=u), out=r)
        div(mul(r, 0.5, out=r), mul(mul(ps, ps, out=u), ps, out=u), out=r)
        phi = r
        div(np.arccos(np.clip(r, -1.0, 1.0, out=phi), out=phi), 3.0, out=phi)
        top = phi < np.pi / 6.0  # the largest is the isolated one; else the smallest is
        # iso = q + 2 p cos(where(top, phi, phi + 2 pi / 3))
        add(phi, 2.0 * np.pi / 3.0, out=u)
        np.copyto(u, phi, where=top)
        add(q, mul(mul(p, 2.0, out=iso), np.cos(u, out=u), out=iso), out=iso)
        # Its eigenvector: the longest cross product of two rows of M - iso I.
        e0, e1, e2 = ws[0:3]
        sub(m00, iso, out=e0)
        sub(m11, iso, out=e1)
        sub(m22, iso, out=e2)
        x0, y0, z0, x1, y1, z1, x2, y2, z2 = (*ws[3:7], *ws[15:20])
        difference(x0, m01, m12, m02, e1)
        difference(y0, m02, m01, e0, m12)
        difference(z0, e0, e1, m01, m01)
        difference(x1, m01, e2, m02, m12)
        difference(y1, m02, m02, e0, e2)
        difference(z1, e0, m12, m01, m02)
        difference(x2, e1, e2, m12, m12)
        difference(y2, m12, m02, m01, e2)
        difference(z2, m01, m12, e1, m02)
        n0, n1, n2 = ws[0:3]  # (e0, e1, e2 are spent)
        products(n0, x0, x0, y0, y0, z0, z0)
        products(n1, x1, x1, y1, y1, z1, z1)
        products(n2, x2, x2, y2, y2, z2, z2)
        # v = where(use, row 1, row 0), nn = maximum(n0, n1); then the same with row 2.
        vx, vy, vz, nn = x0, y0, z0, n0
        use = n1 > n0
        np.copyto(vx, x1, where=use)
        np.copyto(vy, y1, where=use)
        np.copyto(vz, z1, where=use)
        np.maximum(n0, n1, out=nn)
        use = n2 > nn
        np.copyto(vx, x2, where=use)
        np.copyto(vy, y2, where=use)
        np.copyto(vz, z2, where=use)
        np.maximum(nn, n2, out=nn)
        # All three eigenvalues equal: any direction is an eigenvector.
        flat = ~(nn > 0.0)
        if flat.any():
            vx[flat], vy[flat], vz[flat], nn[flat] = 1.0, 0.0, 0.0, 1.0
        div(1.0, np.sqrt(nn, out=u), out=u)  # inv = 1 / sqrt(nn)
        mul(vx, u, out=vx)
        mul(vy, u, out=vy)
        mul(vz, u, out=vz)
        # u = v x (the axis v is least along), w = v x u: a basis of the plane orthogonal to v.
        ax, ay, az = np.abs(vx, out=x1), np.abs(vy, out=y1), np.abs(vz, out=z1)
        kx = (ax <= ay) & (ax <= az)
        ky = ~kx & (ay <= az)
        ux, uy, uz = x1, y1, z1  # (ax, ay, az are spent once kx, ky are known)
        np.negative(vz, out=ux)  # ux = where(kx, 0, where(ky, -vz, vy))
        np.copyto(ux, vy, where=~ky)
        np.copyto(ux, 0.0, where=kx)
        np.negative(vx, out=uy)  # uy = where(kx, vz, where(ky, 0, -vx))
        np.copyto(uy, 0.0, where=ky)
        np.copyto(uy, vz, where=kx)
        uz.fill(0.0)  # uz = where(kx, -vy, where(ky, vx, 0))
        np.copyto(uz, vx, where=ky)
        np.copyto(uz, np.negative(vy, out=u), where=kx)
        products(u, ux, ux, uy, uy, uz, uz)
        div(1.0, np.sqrt(u, out=u), out=u)  # inv = 1 / sqrt(ux ux + uy uy + uz uz)
        mul(ux, u, out=ux)
        mul(uy, u, out=uy)
        mul(uz, u, out=uz)
        wx, wy, wz = x2, y2, z2
        difference(wx, vy, uz, vz, uy)
        difference(wy, vz, ux, vx, uz)
        difference(wz, vx, uy, vy, ux)
        # M in that plane: [[pa, pb], [pb, pc]]; its eigenvalues mean +- half.
        mwx, mwy, mwz, pa, pb, pc = (*ws[0:3], *ws[20:22], ws[4])  # (n0, n1, n2 and vy are spent)
        products(mwx, m00, wx, m01, wy, m02, wz)
        products(mwy, m01, wx, m11, wy, m12, wz)
        products(mwz, m02, wx, m12, wy, m22, wz)
        # pa = ux (m00 ux + m01 uy + m02 uz) + uy (m01 ux + m11 uy + m12 uz) + uz (m02 ux + m12 uy + m22 uz)
        mul(ux, products(u, m00, ux, m01, uy, m02, uz), out=pa)
        add(pa, mul(uy, products(u, m01, ux, m11, uy, m12, uz), out=u), out=pa)
        add(pa, mul(uz, products(u, m02, ux, m12, uy, m22, uz), out=u), out=pa)
        products(pb, ux, mwx, uy, mwy, uz, mwz)
        products(pc, wx, mwx, wy, mwy, wz, mwz)
        mean, half, l1, l2 = ws[5], ws[6], ws[0], ws[1]  # (p, ps, r and mwx, mwy are spent)
        mul(add(pa, pc, out=mean), 0.5, out=mean)  # mean = 0.5 (pa + pc)
        sub(pa, pc, out=half)  # half = sqrt(0.25 (pa - pc)^2 + pb pb)
        mul(mul(half, half, out=half), 0.25, out=half)
        np.sqrt(add(half, mul(pb, pb, out=u), out=half), out=half)
        add(mean, half, out=l1)  # l1 = where(top, iso, mean + half)
        np.copyto(l1, iso, where=top)
        sub(mean, half, out=l2)  # l2 = where(top, mean + half, mean - half)
        np.copyto(l2, add(mean, half, out=u), where=top)
        div(np.abs(det, out=smallest), np.sqrt(mul(l1, l2, out=u), out=u), out=smallest)
    return l1, l2
