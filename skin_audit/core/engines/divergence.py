# SPDX-License-Identifier: GPL-3.0-or-later
"""How far a target draws a mesh from a reference (Blender's deformation, or another target),
per vertex and per pose, and the finding that names the target."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeError
from ..findings import Finding
from ..maths.affine import distances
from .targets import Target


def divergence(drawn: ArrayLike, reference: ArrayLike) -> NDArray[np.float64]:
    """Distance of each vertex from its reference position; a non-finite position is infinitely far.

    Parameters
    ----------
    drawn : (V, 3) float
        Positions a target draws (may hold NaN or inf, e.g. a joint past the skin).
    reference : (V, 3) float

    Returns
    -------
    (V,) float64
    """
    a = np.asarray(drawn, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
        raise ShapeError(f"drawn {a.shape} and reference {b.shape} must both be (V, 3)")
    with np.errstate(invalid="ignore", over="ignore"):
        d = distances(a, b)
    out: NDArray[np.float64] = np.where(np.isfinite(d), d, np.inf)
    return out


def divergence_by_pose(per_pose: Mapping[str, NDArray[np.float64]]) -> dict[str, float]:
    """The largest distance per pose (JSON ``metrics.engine_divergence_by_pose``).

    Parameters
    ----------
    per_pose : mapping of pose name to (V,) float64
        From :func:`divergence`; ``"current"`` is the audited frame.

    Returns
    -------
    dict of pose name to float (``inf`` when a vertex has no finite position)
    """
    return {name: float(d.max(initial=0.0)) for name, d in per_pose.items()}


def distance_text(distance: float, size: float, scale: float = 1.0) -> str:
    """``distance`` (in the units of ``size``) for a message: in world units (``scale`` world units per
    unit) and as a fraction of ``size``, the mesh's largest bounding-box side."""
    fraction = distance / size if size > 0 else float("inf")
    return f"{distance * scale:.3g} world units ({fraction:.2g} of the mesh's size, {size * scale:.3g})"


def divergence_finding(
    per_pose: Mapping[str, NDArray[np.float64]], size: float, relative: float, target: Target, reference: str,
    scale: float = 1.0, mesh_size: float | None = None,
) -> Finding | None:
    """``engine-divergence`` naming the target: vertices farther than ``relative * size`` at any pose.

    Parameters
    ----------
    per_pose : mapping of pose name to (V,) float64
    size : float
        The mesh's size (the audit's scale for tolerances), in the units of ``per_pose``.
    relative : float
        Threshold as a fraction of ``size``.
    target : Target
    reference : str
        What the target is compared with (``"Blender"``, ``"the glTF specification"``).
    scale : float
        World units per unit of ``per_pose`` (the mesh object's world scale), for the message.
    mesh_size : float or None
        The mesh's own size for the message's fraction when ``size`` is floored (default ``size``).

    Returns
    -------
    Finding or None
    """
    if not per_pose:
        return None
    worst_each = functools.reduce(np.maximum, per_pose.values())
    far = np.flatnonzero(worst_each > relative * max(size, 1e-12))
    if not len(far):
        return None
    by_pose = divergence_by_pose(per_pose)
    worst_pose = max(by_pose, key=lambda k: by_pose[k])
    worst = by_pose[worst_pose]
    how = "verified against the real engine" if target.verified else "modelled from its documentation"
    return Finding(
        code="engine-divergence",
        severity="WARNING",
        message=(
            f"{len(far)} vertices land up to {distance_text(worst, mesh_size or size, scale)} away in {target.name} "
            f"({target.description}; {how}) from where {reference} puts them; worst at pose '{worst_pose}'"
        ),
        count=int(len(far)),
        vertices=tuple(far.tolist()),  # (tolist: Python ints at C speed; a generator took 30 ms on 36k)
        details={
            "target": target.name,
            "target_verified": target.verified,
            "reference": reference,
            "pose": worst_pose,
            "max_divergence": worst,
            "max_divergence_world": worst * scale,
            "by_pose": by_pose,
        },
    )
