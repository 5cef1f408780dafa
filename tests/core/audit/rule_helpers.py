# SPDX-License-Identifier: GPL-3.0-or-later
"""Running the audit on numpy rigs and picking its findings apart (core tier, no bpy)."""

from __future__ import annotations

from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.report import MeshAudit
from skin_audit.core.audit.shape_checks import SpotChecker
from skin_audit.core.audit.skinned_mesh import SkinnedMesh
from skin_audit.core.findings import Finding
from tests.factories.audits import audit_skinned_mesh


def audit(mesh: SkinnedMesh, spot_checker: SpotChecker | None = None, **options: object) -> MeshAudit:
    """The whole audit of ``mesh``; the shape checks are off unless ``shape_checks=True``."""
    options.setdefault("shape_checks", False)
    return audit_skinned_mesh(mesh, AuditOptions(**options), spot_checker)  # type: ignore[arg-type]


def by_code(result: MeshAudit) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in result.findings:
        out.setdefault(f.code, []).append(f)
    return out


def codes(result: MeshAudit) -> set[str]:
    return {f.code for f in result.findings}


def only(result: MeshAudit, code: str, severity: str | None = None) -> Finding:
    """The one finding of ``code`` (and ``severity``); fails naming every code found otherwise."""
    found = [f for f in result.findings if f.code == code and severity in (None, f.severity)]
    assert len(found) == 1, f"expected one {code!r} {severity or ''} finding, got " \
                            f"{[(f.code, f.severity) for f in result.findings]}"
    return found[0]
