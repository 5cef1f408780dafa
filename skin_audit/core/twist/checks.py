# SPDX-License-Identifier: GPL-3.0-or-later
"""Judging the twist experiment: bind drift, numpy vs Blender, closed forms,
ring radii and degenerate triangles, per pose and method.

Inputs are plain arrays, so the same checks serve the Blender run, the seed
reproduction in pure float64 and the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding
from .closed_form import radius_ratio, twisted_positions
from .cylinder import count_degenerate, triangle_areas

F64 = NDArray[np.float64]

METHODS = ("lbs", "dqs")


def dqs_twist_positions(points: F64, child_weight: F64, theta: float) -> F64:
    """Closed form of DQS on the two-bone twist: a rigid rotation about z.

    Blending the identity and ``Rz(theta)`` as normalised quaternions gives a
    rotation by ``2 atan2(w sin(theta/2), 1 - w + w cos(theta/2))``; the
    radius is kept exactly.  DQS takes ``Rz(theta)``'s quaternion on the
    identity's hemisphere (w >= 0), so it blends along the shorter arc:
    theta is first wrapped into [-pi, pi] (270 degrees blends as -90).

    Parameters
    ----------
    points : (V, 3) float64
    child_weight : (V,) float64

    Returns
    -------
    (V, 3) float64
    """
    half = math.remainder(theta, 2.0 * math.pi) / 2.0
    angle = 2.0 * np.arctan2(child_weight * np.sin(half), 1.0 - child_weight + child_weight * np.cos(half))
    c, s = np.cos(angle), np.sin(angle)
    x, y = points[:, 0], points[:, 1]
    return np.column_stack([c * x - s * y, s * x + c * y, points[:, 2]])


def closed_form_positions(method: str, points: F64, child_weight: F64, theta: float) -> F64:
    """(V, 3) closed-form positions for ``method`` ('lbs' or 'dqs')."""
    if method == "lbs":
        return twisted_positions(points, child_weight, theta)
    return dqs_twist_positions(points, child_weight, theta)


def closed_form_ratio(method: str, child_weight: F64, theta: float) -> F64:
    """Radius ratio the closed form predicts: LBS shrinks, DQS keeps 1."""
    if method == "lbs":
        return radius_ratio(child_weight, theta)
    return np.ones_like(child_weight)


def radial_ratio(bind: F64, deformed: F64) -> F64:
    """(V,) distance to the z axis after deformation over the distance before."""
    ratio: F64 = np.hypot(deformed[:, 0], deformed[:, 1]) / np.hypot(bind[:, 0], bind[:, 1])
    return ratio


@dataclass(frozen=True)
class RingRow:
    """One ring at one pose: measured and analytic radius ratios."""

    method: str
    angle_deg: float
    ring: int
    z: float
    child_weight: float
    analytic: float
    numpy: float
    numpy_error: float
    blender: float
    blender_error: float


@dataclass(frozen=True)
class PoseCheck:
    """Every number the experiment reports for one method at one twist angle."""

    method: str
    angle_deg: float
    numpy_vs_blender: float
    numpy_vs_closed_form: float
    blender_vs_closed_form: float
    mid_ring_analytic: float
    mid_ring_numpy: float
    mid_ring_blender: float
    ring_error_numpy: float
    ring_error_blender: float
    height_error_numpy: float
    degenerate_numpy: int
    degenerate_blender: int
    rings: tuple[RingRow, ...]


@dataclass(frozen=True)
class BindCheck:
    """Displacement with the armature at rest: must be zero up to precision."""

    method: str
    numpy_drift: float
    blender_drift: float


def check_pose(
    method: str,
    angle_deg: float,
    bind: F64,
    triangles: NDArray[np.intp],
    child_weight: F64,
    ring_of: NDArray[np.intp],
    numpy_positions: F64,
    blender_positions: F64,
) -> PoseCheck:
    """Compare numpy and Blender deformations with each other and with the closed form.

    Parameters
    ----------
    bind : (V, 3) float64
    triangles : (T, 3) intp
    child_weight : (V,) float64
    ring_of : (V,) intp
    numpy_positions, blender_positions : (V, 3) float64
    """
    theta = np.radians(angle_deg)
    expected = closed_form_positions(method, bind, child_weight, theta)
    analytic = closed_form_ratio(method, child_weight, theta)
    r_np = radial_ratio(bind, numpy_positions)
    r_bl = radial_ratio(bind, blender_positions)
    rows = []
    for ring in range(int(ring_of.max()) + 1):
        sel = ring_of == ring
        rows.append(
            RingRow(
                method,
                float(angle_deg),
                ring,
                float(bind[sel, 2].mean()),
                float(child_weight[sel].mean()),
                float(analytic[sel].mean()),
                float(r_np[sel].mean()),
                float(np.abs(r_np[sel] - analytic[sel]).max()),
                float(r_bl[sel].mean()),
                float(np.abs(r_bl[sel] - analytic[sel]).max()),
            )
        )
    mid = int(np.argmin(np.abs(child_weight - 0.5)))
    mid_sel = ring_of == ring_of[mid]
    bind_areas = triangle_areas(bind, triangles)
    return PoseCheck(
        method=method,
        angle_deg=float(angle_deg),
        numpy_vs_blender=float(np.abs(numpy_positions - blender_positions).max()),
        numpy_vs_closed_form=float(np.abs(numpy_positions - expected).max()),
        blender_vs_closed_form=float(np.abs(blender_positions - expected).max()),
        mid_ring_analytic=float(analytic[mid_sel].mean()),
        mid_ring_numpy=float(r_np[mid_sel].max()),
        mid_ring_blender=float(r_bl[mid_sel].max()),
        ring_error_numpy=max(r.numpy_error for r in rows),
        ring_error_blender=max(r.blender_error for r in rows),
        height_error_numpy=float(np.abs(numpy_positions[:, 2] - bind[:, 2]).max()),
        degenerate_numpy=count_degenerate(numpy_positions, triangles, bind_areas),
        degenerate_blender=count_degenerate(blender_positions, triangles, bind_areas),
        rings=tuple(rows),
    )


def twist_findings(binds: list[BindCheck], poses: list[PoseCheck], size: float) -> list[Finding]:
    """The verdict of the experiment as findings: data errors versus algorithm limits."""
    tol32 = tolerances.float32_tolerance(size)
    out: list[Finding] = []
    for b in binds:
        worst = max(b.numpy_drift, b.blender_drift)
        if b.numpy_drift > tolerances.BIND_DRIFT_FLOAT64 or b.blender_drift > tol32:
            out.append(Finding("bind-pose-drift", "ERROR",
                               f"{b.method.upper()}: the bind pose moves vertices by up to {worst:.3g}",
                               details={"numpy": b.numpy_drift, "blender": b.blender_drift}))
    for p in poses:
        label = f"{p.method.upper()} {p.angle_deg:g} deg"
        if p.numpy_vs_blender > tol32:
            out.append(Finding("skinning-mismatch", "ERROR",
                               f"{label}: Blender and numpy differ by {p.numpy_vs_blender:.3g} "
                               f"(float32 tolerance {tol32:.1g})",
                               details={"max_difference": p.numpy_vs_blender}))
        # Blender's matrices are float32, so numpy from them meets the float64
        # closed form only to float32 precision.
        if p.numpy_vs_closed_form > tol32:
            out.append(Finding("closed-form-mismatch", "ERROR",
                               f"{label}: numpy is {p.numpy_vs_closed_form:.3g} from the closed form"))
        if p.mid_ring_analytic < 0.5:
            out.append(Finding("twist-collapse", "WARNING",
                               f"{label}: mid ring shrinks to {p.mid_ring_blender:.3g} of its radius "
                               f"(closed form {p.mid_ring_analytic:.3g}); the data is right, this is "
                               "linear blend skinning itself. Preserve Volume (DQS) keeps it.",
                               count=p.degenerate_blender,
                               details={"angle_deg": p.angle_deg, "ratio": p.mid_ring_blender,
                                        "degenerate_triangles": p.degenerate_blender}))
    return out
