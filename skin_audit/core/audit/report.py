# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit report as data: per mesh, per file, per run; and its JSON form.

The JSON contract is documented in docs/report-format.md; bump
REPORT_VERSION on any incompatible change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..findings import Finding, worst_severity
from .rig_audit import RigAudit

REPORT_FORMAT = "skin_audit.report"
#: 2: each file gains ``rigs`` (one entry per armature, its findings reported once); mesh
#: entries keep what belongs to one mesh.
REPORT_VERSION = 2


@dataclass(frozen=True)
class MeshAudit:
    """The audit of one mesh deformed by an armature."""

    object: str
    armature: str
    vertices: int
    metrics: Mapping[str, float | int | None]
    findings: tuple[Finding, ...]
    #: Per-vertex measures for heatmaps and selection, (V,) float64 each; not serialised.
    measures: Mapping[str, NDArray[np.float64]] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": self.object,
            "armature": self.armature,
            "vertices": self.vertices,
            "metrics": dict(self.metrics),
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class FileAudit:
    """The audit of one input file: ``status`` is 'ok' or 'error' (with ``message``).

    ``rigs`` holds one entry per armature (what belongs to the armature, reported once),
    ``meshes`` one per (mesh, Armature modifier).
    """

    path: str
    status: str
    message: str = ""
    #: For an 'error': 'input' (the file cannot be audited) or 'internal' (a bug of ours, exit 3).
    error_kind: str = ""
    meshes: tuple[MeshAudit, ...] = ()
    rigs: tuple[RigAudit, ...] = ()

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for r in self.rigs for f in r.findings) + tuple(f for m in self.meshes for f in m.findings)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "status": self.status}
        if self.message:
            out["message"] = self.message
        if self.error_kind:
            out["error_kind"] = self.error_kind
        out["rigs"] = [r.to_dict() for r in self.rigs]
        out["meshes"] = [m.to_dict() for m in self.meshes]
        return out


@dataclass(frozen=True)
class AuditReport:
    tool_version: str
    blender_version: str
    options: Mapping[str, Any]
    files: tuple[FileAudit, ...]

    def to_dict(self) -> dict[str, Any]:
        from ..skeleton import skeleton_groups

        findings = [f for fa in self.files for f in fa.findings]
        groups = skeleton_groups(self.files)
        return {
            "format": REPORT_FORMAT,
            "format_version": REPORT_VERSION,
            "tool": {"name": "skin_audit", "version": self.tool_version},
            "version": self.tool_version,
            "blender_version": self.blender_version,
            "options": dict(self.options),
            "summary": {
                "files": len(self.files),
                "files_with_errors": sum(fa.status != "ok" for fa in self.files),
                "rigs": sum(len(fa.rigs) for fa in self.files),
                "meshes": sum(len(fa.meshes) for fa in self.files),
                "worst_severity": worst_severity(findings),
            },
            "files": [fa.to_dict() for fa in self.files],
            **({"skeletons": groups} if len(groups) > 1 or any(len(g["members"]) > 1 for g in groups) else {}),
        }
