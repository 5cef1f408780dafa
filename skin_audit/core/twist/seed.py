# SPDX-License-Identifier: GPL-3.0-or-later
"""The seed's twist experiment in pure float64 numpy (docs/twist-experiment.md).

No Blender here: the rig is ``B_0 = I``, ``B_1 = Tz(1)``, ``L_1 = Tz(1) Rz(theta)``,
the hierarchy gives ``G``, and the strict core skins the float64 cylinder.
These are the figures the seed reports, reproduced from first principles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..maths.affine import evaluate_hierarchy, rotation, skinning_matrices, translation, translation_only_inverse
from ..maths.lbs import linear_blend_skinning
from ..maths.quaternions import quaternion_multiply
from .checks import radial_ratio
from .closed_form import radius_ratio, twisted_positions
from .cylinder import MID_RING, Cylinder, build_cylinder, linear_height_weights

F64 = NDArray[np.float64]

#: Where the child joint sits on the axis; any height gives C_child = Rz(theta).
CHILD_JOINT_Z = 1.0
PARENTS = (-1, 0)


def seed_rig(theta: float) -> tuple[F64, F64]:
    """Bind and current world matrices of the two-joint rig : both (2, 4, 4) float64."""
    bind_local = np.stack([np.eye(4), translation(0.0, 0.0, CHILD_JOINT_Z)])
    pose_local = np.stack([np.eye(4), translation(0.0, 0.0, CHILD_JOINT_Z) @ rotation("z", theta)])
    return evaluate_hierarchy(bind_local, PARENTS), evaluate_hierarchy(pose_local, PARENTS)


def seed_skin(theta: float) -> F64:
    """Skinning matrices ``G B^-1`` with the translation-only bind inverse : (2, 4, 4)."""
    bind, current = seed_rig(theta)
    return skinning_matrices(current, translation_only_inverse(bind))


def _rotate_by_quaternion(points: F64, angles: F64) -> F64:
    """Rotate each point about +z by its own angle as ``q p q*`` (a path independent of matrices).

    points : (V, 3) float64; angles : (V,) float64.
    """
    zero = np.zeros(len(points))
    q = np.column_stack([np.cos(angles / 2.0), zero, zero, np.sin(angles / 2.0)])
    qc = q * np.array([1.0, -1.0, -1.0, -1.0])
    pure = np.column_stack([zero, points])
    return quaternion_multiply(quaternion_multiply(q, pure), qc)[:, 1:]


@dataclass(frozen=True)
class SeedFigures:
    """The seed's table, measured by this run."""

    angles_deg: tuple[float, ...]
    bind_drift: float
    mid_ring_radius: tuple[float, ...]
    ring_radius_max_error: float
    ring_count: int
    height_max_error: float
    position_max_error: float
    position_count: int
    end_ring_vs_quaternion: float


def seed_figures(
    angles_deg: Sequence[float] = (0.0, 90.0, 180.0), cyl: Cylinder | None = None
) -> SeedFigures:
    """Run the experiment at ``angles_deg`` and measure every figure of docs/twist-experiment.md."""
    cyl = cyl or build_cylinder()
    idx, w = linear_height_weights(cyl.vertices, cyl.height)
    ring_of = cyl.ring_of()
    rest = linear_blend_skinning(cyl.vertices, idx, w, seed_skin(0.0))
    bind_drift = float(np.abs(rest - cyl.vertices).max())
    mids, ring_err, height_err, pos_err, end_err = [], 0.0, 0.0, 0.0, 0.0
    ends = (ring_of == 0) | (ring_of == cyl.rings - 1)
    for deg in angles_deg:
        theta = np.radians(deg)
        out = linear_blend_skinning(cyl.vertices, idx, w, seed_skin(theta))
        ratio = radial_ratio(cyl.vertices, out)
        expected = radius_ratio(w[:, 1], theta)
        for ring in range(cyl.rings):
            sel = ring_of == ring
            ring_err = max(ring_err, float(np.abs(ratio[sel] - expected[sel]).max()))
        mids.append(float(np.hypot(out[ring_of == MID_RING, 0], out[ring_of == MID_RING, 1]).max()))
        height_err = max(height_err, float(np.abs(out[:, 2] - cyl.vertices[:, 2]).max()))
        pos_err = max(pos_err, float(np.abs(out - twisted_positions(cyl.vertices, w[:, 1], theta)).max()))
        # End rings follow one bone rigidly (w is 0 or 1 there): rotate by w * theta.
        rigid = _rotate_by_quaternion(cyl.vertices[ends], w[ends, 1] * theta)
        end_err = max(end_err, float(np.abs(out[ends] - rigid).max()))
    return SeedFigures(
        angles_deg=tuple(float(a) for a in angles_deg),
        bind_drift=bind_drift,
        mid_ring_radius=tuple(mids),
        ring_radius_max_error=ring_err,
        ring_count=len(angles_deg) * cyl.rings,
        height_max_error=height_err,
        position_max_error=pos_err,
        position_count=len(angles_deg) * len(cyl.vertices),
        end_ring_vs_quaternion=end_err,
    )
