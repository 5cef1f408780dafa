# SPDX-License-Identifier: GPL-3.0-or-later
"""4x4 affine matrices: construction, validation, the two inverse helpers and
hierarchy evaluation.

Conventions (docs/twist-experiment.md): right-handed, column vectors, radians;
``p' = M @ p`` with ``p = (x, y, z, 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import tolerances
from ..errors import (
    HierarchyError,
    MatrixMagnitudeError,
    NonAffineMatrixError,
    NonFiniteMatrixError,
    NotRigidError,
    ShapeError,
    UnsupportedInverseError,
)

F64 = NDArray[np.float64]

_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])


def translation(x: float, y: float, z: float) -> F64:
    """Translation matrix ``T(x, y, z)`` : (4, 4) float64."""
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def rotation(axis: str, angle: float) -> F64:
    """Rotation about ``axis`` ('x', 'y' or 'z') by ``angle`` radians : (4, 4) float64."""
    c, s = np.cos(angle), np.sin(angle)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    m = np.eye(4)
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def as_matrices(matrices: ArrayLike, name: str = "matrices") -> F64:
    """Return ``matrices`` as float64 with shape (..., 4, 4), or raise ShapeError."""
    m = np.asarray(matrices, dtype=np.float64)
    if m.ndim < 2 or m.shape[-2:] != (4, 4):
        raise ShapeError(f"{name}: expected shape (..., 4, 4), got {m.shape}")
    return m


def _where(index: tuple[int, ...]) -> str:
    return f"[{', '.join(str(i) for i in index)}]" if index else ""


def validate_affine(matrices: ArrayLike, name: str = "matrix") -> F64:
    """Check that every matrix is finite, affine and of bounded magnitude.

    Parameters
    ----------
    matrices : (..., 4, 4) float
    name : str
        What the matrices are, for the error message ("bind matrix", ...).

    Returns
    -------
    (..., 4, 4) float64
    """
    m = as_matrices(matrices, name)
    finite = np.isfinite(m).all(axis=(-2, -1))
    if not finite.all():
        bad = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise NonFiniteMatrixError(
            f"{name}{_where(bad)} has a NaN or infinite entry; check the exporter or the pose"
        )
    row_err = np.abs(m[..., 3, :] - _LAST_ROW).max(axis=-1)
    if (row_err > tolerances.AFFINE_ROW).any():
        bad = tuple(int(i) for i in np.argwhere(row_err > tolerances.AFFINE_ROW)[0])
        raise NonAffineMatrixError(
            f"{name}{_where(bad)} is not affine: last row is {m[bad][3].tolist()}, "
            "expected [0, 0, 0, 1] (row-major / column-major mix-up?)"
        )
    big = np.abs(m).max(axis=(-2, -1))
    if (big > tolerances.MATRIX_MAGNITUDE).any():
        bad = tuple(int(i) for i in np.argwhere(big > tolerances.MATRIX_MAGNITUDE)[0])
        raise MatrixMagnitudeError(
            f"{name}{_where(bad)} has an entry of magnitude {big[bad]:.3g}, above "
            f"{tolerances.MATRIX_MAGNITUDE:.0e}; check units and scale"
        )
    return m


def translation_only_inverse(matrix: ArrayLike, name: str = "bind matrix") -> F64:
    """Invert a pure translation; refuse rotation or scale instead of guessing.

    Parameters
    ----------
    matrix : (..., 4, 4) float

    Returns
    -------
    (..., 4, 4) float64
        ``T(-t)`` for ``T(t)``.
    """
    m = validate_affine(matrix, name)
    linear = m[..., :3, :3]
    dev = np.abs(linear - np.eye(3)).max(axis=(-2, -1))
    if (dev > tolerances.TRANSLATION_ONLY).any():
        bad = tuple(int(i) for i in np.argwhere(dev > tolerances.TRANSLATION_ONLY)[0])
        lin = linear[bad]
        sv = np.linalg.svd(lin, compute_uv=False)
        # Orthonormal first: a 180-degree rotation has a diagonal 3x3 part, diag(-1, -1, 1).
        if np.abs(sv - 1.0).max() <= tolerances.ORTHONORMAL:
            kind = "rotation" if np.linalg.det(lin) > 0.0 else "a reflection"
        elif np.allclose(lin, np.diag(np.diag(lin))):
            kind = "scale"
        else:
            kind = "rotation and scale"
        raise UnsupportedInverseError(
            f"{name}{_where(bad)} contains {kind} (3x3 part differs from identity by "
            f"{dev[bad]:.3g}); this helper inverts pure translations only"
        )
    inv = np.broadcast_to(np.eye(4), m.shape).copy()
    inv[..., :3, 3] = -m[..., :3, 3]
    return inv


def rigid_inverse(matrix: ArrayLike, name: str = "matrix", tolerance: float = tolerances.ORTHONORMAL) -> F64:
    """Invert a rotation plus translation, checking that it is one.

    Parameters
    ----------
    matrix : (..., 4, 4) float
    tolerance : float
        Allowed |R^T R - I| and |det R - 1|; ``tolerances.ORTHONORMAL_FLOAT32``
        for matrices read from Blender.

    Returns
    -------
    (..., 4, 4) float64
        ``[R^T, -R^T t]``.
    """
    m = validate_affine(matrix, name)
    r = m[..., :3, :3]
    ortho = np.abs(np.swapaxes(r, -1, -2) @ r - np.eye(3)).max(axis=(-2, -1))
    det = np.linalg.det(r)
    bad_mask = (ortho > tolerance) | (np.abs(det - 1.0) > tolerance)
    if bad_mask.any():
        bad = tuple(int(i) for i in np.argwhere(bad_mask)[0])
        raise NotRigidError(
            f"{name}{_where(bad)} is not a rigid transform (|R^T R - I| = {ortho[bad]:.3g}, "
            f"det R = {det[bad]:.6g}); it holds scale, shear or a reflection"
        )
    inv = np.broadcast_to(np.eye(4), m.shape).copy()
    rt = np.swapaxes(r, -1, -2)
    inv[..., :3, :3] = rt
    inv[..., :3, 3] = -(rt @ m[..., :3, 3, None])[..., 0]
    return inv


def parent_first_order(parents: Sequence[int]) -> list[int]:
    """Joint indices ordered so every parent comes before its children (depth first).

    Joints whose parent chain never reaches a root (a cycle, a parent out of range) are
    left out; callers compare the length with ``len(parents)``.
    """
    children: dict[int, list[int]] = {}
    for j, p in enumerate(parents):
        children.setdefault(int(p), []).append(j)
    order: list[int] = []
    stack = list(reversed(children.get(-1, [])))
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(children.get(j, [])))
    return order


#: Measured: a batched product per depth level costs about as much as 15 single products, so a
#: tree with more levels than joints / 15 is walked joint by joint.
SEQUENTIAL_DEPTH_RATIO = 15


def evaluate_hierarchy(
    local: ArrayLike, parents: Sequence[int], fixed_rotation: ArrayLike | None = None,
    levels: Sequence[NDArray[np.intp]] | None = None,
) -> F64:
    """World matrices from local ones: ``G_root = L_root``, ``G_child = G_parent L_child``.

    The only hierarchy walk in skin_audit: the twist experiment, the stress poses and the
    pose sweep all come here.

    Parameters
    ----------
    local : (J, 4, 4) float
        Each joint's matrix relative to its parent.
    parents : (J,) int
        Parent index of each joint, -1 for a root. A parent must come before
        its children, which any tree can be ordered to satisfy (``parent_first_order``).
    fixed_rotation : (J, 3, 3) float, optional
        Where an entry is finite, that joint's world rotation is replaced by it after the
        product (Blender's *Inherit Rotation* off: the head follows the parent, the frame
        does not); NaN entries inherit as usual.

    Returns
    -------
    (J, 4, 4) float64
    """
    m = validate_affine(local, "local matrix")
    if m.ndim != 3:
        raise ShapeError(f"local matrices: expected shape (J, 4, 4), got {m.shape}")
    if len(parents) != m.shape[0]:
        raise ShapeError(f"parents: expected {m.shape[0]} entries, got {len(parents)}")
    fixed = None if fixed_rotation is None else np.asarray(fixed_rotation, dtype=np.float64)
    if fixed is not None and fixed.shape != (m.shape[0], 3, 3):
        raise ShapeError(f"fixed rotations: expected shape ({m.shape[0]}, 3, 3), got {fixed.shape}")
    keep = np.zeros(m.shape[0], dtype=bool) if fixed is None else np.isfinite(fixed).all(axis=(1, 2))
    world = np.empty_like(m)
    par = np.asarray(parents, dtype=np.intp)
    levels = hierarchy_levels(parents) if levels is None else levels
    if len(levels) * SEQUENTIAL_DEPTH_RATIO > len(par):
        # A deep, thin tree: one product per joint costs less than one batch per level.
        for j, p in enumerate(par):
            world[j] = m[j] if p < 0 else world[p] @ m[j]
            if keep[j] and fixed is not None:
                world[j, :3, :3] = fixed[j]
        return world
    # One batched product per depth level: every parent's world matrix is ready before its children's.
    for level in levels:
        roots = par[level] < 0
        world[level[roots]] = m[level[roots]]
        inner = level[~roots]
        if inner.size:
            world[inner] = world[par[inner]] @ m[inner]
        kept = level[keep[level]]
        if kept.size and fixed is not None:
            world[kept, :3, :3] = fixed[kept]
    return world


def hierarchy_levels(parents: Sequence[int]) -> list[NDArray[np.intp]]:
    """Joint indices grouped by depth (roots first), after checking every parent comes before its child."""
    depth = np.zeros(len(parents), dtype=np.intp)
    for j, p in enumerate(parents):
        if p == -1:
            continue
        if not 0 <= p < j:
            raise HierarchyError(
                f"joint {j} has parent {p}; parents must be -1 or an earlier joint "
                "(order joints parent-first)"
            )
        depth[j] = depth[p] + 1
    order = np.argsort(depth, kind="stable")
    cuts = np.flatnonzero(np.diff(depth[order])) + 1
    return [np.asarray(c, dtype=np.intp) for c in np.split(order, cuts)] if len(order) else []


def affine_inverse(m: F64) -> F64:
    """Inverse of (..., 4, 4) affine or (..., 3, 3) matrices by cofactors.

    Not ``np.linalg.inv``: the BLAS policy (``parallel``).  A singular matrix gives inf or NaN
    here, not an exception.
    """
    a = m[..., :3, :3]
    c0, c1, c2 = a[..., :, 0], a[..., :, 1], a[..., :, 2]
    inv3 = np.empty(a.shape)
    r0 = cross(c1, c2, inv3[..., 0, :])
    cross(c2, c0, inv3[..., 1, :])
    cross(c0, c1, inv3[..., 2, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        inv3 /= np.sum(c0 * r0, axis=-1)[..., None, None]
    if m.shape[-1] == 3:
        out3: F64 = inv3
        return out3
    out = np.zeros(m.shape)
    out[..., :3, :3] = inv3
    # ...ij,...j->...i: minus the inverse linear part applied to the translation.
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", inv3, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def cross(a: F64, b: F64, out: F64 | None = None) -> F64:
    """``np.cross`` of (..., 3) vectors, the same products, without its axis shuffling (it dominated
    the small-matrix maths of the B-Bones); into ``out`` when given."""
    if out is None:
        out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def local_from_world(world: F64, parents: Sequence[int]) -> F64:
    """(J, 4, 4) each joint's matrix relative to its parent's (its own for a root): the inverse of the walk."""
    w = np.asarray(world, dtype=np.float64)
    par = np.asarray(parents, dtype=np.intp)
    out = w.copy()
    child = par >= 0
    out[child] = affine_inverse(w[par[child]]) @ w[child]
    return out


def skinning_matrices(current: ArrayLike, bind_inverse: ArrayLike) -> F64:
    """``C_j = G_j B_j^-1``: undo the bind pose, then apply the current pose.

    Parameters
    ----------
    current : (J, 4, 4) float
    bind_inverse : (J, 4, 4) float

    Returns
    -------
    (J, 4, 4) float64
    """
    g = validate_affine(current, "current matrix")
    b = validate_affine(bind_inverse, "inverse bind matrix")
    if g.shape != b.shape:
        raise ShapeError(f"current {g.shape} and inverse bind {b.shape} matrices differ in shape")
    return g @ b


def apply_affine(m: F64, points: F64) -> F64:
    """(N, 3) points mapped by one (4, 4) matrix (returned as they are for the identity)."""
    if np.array_equal(m, np.eye(4)):
        return points
    linear = m[:3, :3].T
    out: F64 = np.empty((len(points), 3))
    # Blocks of AFFINE_ROWS rows (the BLAS policy: ``parallel``).
    for lo in range(0, len(points), AFFINE_ROWS):
        np.matmul(points[lo:lo + AFFINE_ROWS], linear, out=out[lo:lo + AFFINE_ROWS])
    out += m[:3, 3]
    return out


#: Rows per (N, 3) x (3, 3) block in ``apply_affine``: 9 rows <= ``parallel.GEMM_SIZE``.
AFFINE_ROWS = 16384


def distances(a: F64, b: F64) -> F64:
    """(N,) Euclidean distance between matching rows of two (N, 3) arrays.

    ``einsum`` sums each row's three squares in one pass; ``norm(axis=1)`` runs a reduction
    of length 3 per row, several times slower on a million rows.
    """
    d = a - b
    # vi,vi->v: each row's squared length.
    out: F64 = np.sqrt(np.einsum("vi,vi->v", d, d))
    return out


def largest_side(points: F64) -> float | None:
    """Largest side of the bounding box of the finite rows of (N, 3) ``points`` (None for none).

    One coordinate at a time: a reduction over axis 0 of an (N, 3) array runs numpy's
    3-wide inner loop N times, about 6x slower on a million rows.
    """
    if not np.isfinite(points).all():
        points = points[np.isfinite(points).all(axis=1)]
    if len(points) == 0:
        return None
    return max(float(column.max() - column.min()) for column in points.T)
