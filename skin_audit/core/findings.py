# SPDX-License-Identifier: GPL-3.0-or-later
"""Findings and reports as frozen data, read alike by the panel, the CLI,
the report files and the tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["INFO", "WARNING", "ERROR"]
SEVERITY_RANK: dict[str, int] = {"INFO": 0, "WARNING": 1, "ERROR": 2}

#: A report lists at most this many vertex indices per finding, with the full count.
MAX_LISTED_VERTICES = 1000


@dataclass(frozen=True)
class Finding:
    """One problem (or fact) found, with everything needed to act on it."""

    code: str
    severity: Severity
    message: str
    count: int = 0
    vertices: tuple[int, ...] = ()
    bones: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    #: Extra numbers (worst value, pose, angle...) keyed by name.
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "count": self.count,
            "vertices": list(self.vertices[:MAX_LISTED_VERTICES]),
            "vertices_total": len(self.vertices),
            "bones": list(self.bones),
            "groups": list(self.groups),
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


def worst_severity(findings: Iterable[Finding]) -> Severity | None:
    """Highest severity among ``findings``, or None when there are none."""
    worst: Severity | None = None
    for f in findings:
        if worst is None or SEVERITY_RANK[f.severity] > SEVERITY_RANK[worst]:
            worst = f.severity
    return worst


def at_or_above(findings: Iterable[Finding], threshold: str) -> list[Finding]:
    """Findings whose severity is at least ``threshold`` ('never' matches none)."""
    if threshold.upper() == "NEVER":
        return []
    rank = SEVERITY_RANK[threshold.upper()]
    return [f for f in findings if SEVERITY_RANK[f.severity] >= rank]
