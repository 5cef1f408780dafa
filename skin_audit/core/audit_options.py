# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings of an audit, shared by the panel, the CLI and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from . import tolerances

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
