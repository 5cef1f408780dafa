# SPDX-License-Identifier: GPL-3.0-or-later
"""What a rule family returns: the one result shape the orchestrator (``mesh_audit``) gathers.

A family judges one mesh (weights, the recomputation, drift, engines, the shape checks) or a
character (``rig_audit``: structure, symmetry, stray weights, contacts, joints); a character's
family says what it found on each mesh in ``parts``, by the mesh's index.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..findings import Finding

F64 = NDArray[np.float64]


@dataclass
class Judged:
    """Findings, metrics (report values by name) and per-vertex measures (heatmaps, of the mesh
    judged) of one rule family; ``parts``: what a character's family found on each mesh."""

    findings: list[Finding] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    measures: dict[str, F64] = field(default_factory=dict)
    parts: dict[int, Judged] = field(default_factory=dict)

    @staticmethod
    def of(findings: Iterable[Finding]) -> Judged:
        """A family's findings alone."""
        return Judged(list(findings))

    def add(self, other: Judged) -> Judged:
        """``other``'s findings, metrics, measures and parts gathered into this one (returned)."""
        self.findings += other.findings
        self.metrics.update(other.metrics)
        self.measures.update(other.measures)
        for k, part in other.parts.items():
            self.part(k).add(part)
        return self

    def part(self, k: int) -> Judged:
        """What this family found on mesh ``k`` (created empty on first use)."""
        return self.parts.setdefault(k, Judged())
