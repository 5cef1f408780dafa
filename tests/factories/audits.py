# SPDX-License-Identifier: GPL-3.0-or-later
"""One mesh audited as a whole character, through the audit's own entry point (``audit_character``)."""

from __future__ import annotations

from dataclasses import replace

from skin_audit.core.audit.mesh_audit import audit_character
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.report import MeshAudit
from skin_audit.core.audit.shape_checks import SpotChecker
from skin_audit.core.audit.skinned_mesh import SkinnedMesh


def audit_skinned_mesh(mesh: SkinnedMesh, options: AuditOptions,
                       spot_checker: SpotChecker | None = None) -> MeshAudit:
    """Every check on one mesh seen alone, its armature's findings included (the mesh is the
    whole character); returns findings, metrics and per-vertex measures.

    ``spot_checker`` lets Blender re-evaluate a few of the sweep's test poses.
    """
    rig, (audit,) = audit_character(mesh.armature_object, [mesh], options, [spot_checker])
    return replace(audit, findings=audit.findings + rig.findings)
