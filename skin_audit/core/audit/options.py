# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings of an audit, shared by the panel, the CLI and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .. import tolerances
from ..engines.targets import DEFAULT_TARGET

#: glTF's accessor rule: the weight sum may be off by 2e-7 per non-zero weight.
GLTF_TOLERANCE_PER_WEIGHT = 2e-7


@dataclass(frozen=True)
class AuditOptions:
    """What to check and how strictly.

    ``weight_tolerance`` is a number, or 'gltf' for 2e-7 x the number of
    non-zero weights of each vertex.
    """

    max_influences: int = 4
    weight_tolerance: float | str = 1e-4
    fail_on: str = "error"
    #: Bend/twist angle of the standard test poses, degrees.
    test_pose_degrees: float = 90.0
    #: Vertices that move apart more than this fraction of the mesh size are reported.
    divergence_relative: float = 1e-3
    #: Bind drift beyond float32 precision of this relative size is reported.
    drift_relative: float = tolerances.FLOAT32_RELATIVE * 10
    #: Extreme poses, symmetry and stray weights (the shape checks); off for a faster CI gate.
    shape_checks: bool = True
    #: With the shape checks: interpenetration at the contact poses, joint placement and chain roll
    #: (interpenetration.py, joints.py); off to time or skip them alone.
    contact_checks: bool = True
    #: Pose sweep: each deform bone bent and twisted by these angles (and to its own limits).
    sweep_degrees: tuple[float, ...] = (90.0, 180.0)
    #: twist-collapse below this smallest singular value; volume-loss below this determinant.
    collapse_threshold: float = 0.5
    #: (0.5 is exactly a 50/50 vertex at 90 degrees: left to rounding, so a little lower.)
    volume_threshold: float = 0.4
    #: Mirror vertices must lie within this fraction of the mesh size of each other.
    mirror_radius_relative: float = 1e-3
    #: weight-asymmetry when a weight differs from its mirror by more than this.
    asymmetry_tolerance: float = 0.05
    #: Fewer matched mirror vertices than this fraction: the mesh is not symmetric.
    symmetric_fraction: float = 0.9
    #: How many of the worst sweep poses are re-evaluated in Blender.
    spot_checks: int = 3
    #: Engine target the divergence is measured for (engines/targets.py TARGETS; docs/engines.md).
    target: str = DEFAULT_TARGET
    #: Frame audited (None: the file's current frame); for glTF, animation time frame / fps.
    frame: int | None = None
    #: glTF animation played at ``frame`` (name or index as text; None: the first).
    clip: str | None = None
    #: The rest pose the pipeline wants ("t" or "a"); None: measured and reported, not judged.
    rest_pose: str | None = None
    #: Actions played by the animation audit: None for none (no animation audit), () for every
    #: action that animates the rig, else their names.
    animation: tuple[str, ...] | None = None
    #: Frames between two evaluated frames of an action, and the frames to play (None: the action's own).
    animation_step: float = 1.0
    animation_frames: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
