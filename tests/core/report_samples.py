# SPDX-License-Identifier: GPL-3.0-or-later
"""Reports built by hand from real ``Finding`` objects, for the report-file tests.

Imported as ``report_samples`` (pytest puts this folder on sys.path): a
``tests`` package installed in site-packages (mutmut 3.3.1 ships one) would
shadow ``tests.report_samples``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skin_audit.core.findings import Finding, worst_severity

TWIST = Finding("twist-collapse", "WARNING", "120 vertices shrink to 6.1e-17 of their size at Bone.001 twist Y 180",
                120, tuple(range(64, 184)), ("Bone.001",), (), {"worst": 6.1e-17, "pose": "Bone.001 twist Y 180"})
UNWEIGHTED = Finding("unweighted-vertices", "ERROR", "32 vertices have no deform weights", 32, tuple(range(32)))
PRESERVE = Finding("preserve-volume-on", "INFO", "Preserve Volume is on (modifier 'Armature')")
GROUP = Finding("group-without-bone", "WARNING", "group 'Bone.OLD' names no bone", 1, (), (), ("Bone.OLD",))
INFLUENCES = Finding("too-many-influences", "WARNING", "5 vertices have more than 4 influences", 5,
                     (3, 4, 5, 6, 7), (), (), {"max": 6})
ROOTS = Finding("multiple-root-bones", "WARNING", "2 deform roots: Hips, Prop", 2, (), ("Hips", "Prop"))
INFLUENCES_2 = Finding("too-many-influences", "WARNING", "2 more vertices on a second modifier", 2, (8, 9))


def mesh(obj: str, findings: tuple[Finding, ...], vertices: int = 216) -> dict[str, Any]:
    return {"object": obj, "armature": "Armature", "vertices": vertices,
            "metrics": {"max_bind_drift": 0.0, "max_numpy_vs_blender": 4.3e-07, "max_influences": 6,
                        "collapse_by_bone": {"Bone.001": 6.1e-17}},
            "findings": [f.to_dict() for f in findings]}


def sample_report() -> dict[str, Any]:
    """Two audited files (a rig, three meshes, one clean) and one that could not be read."""
    files = [
        {"path": "rigs/cylinder.blend", "status": "ok",
         "rigs": [{"armature": "Armature", "meshes": ["Cylinder", "Clean"], "metrics": {"deform_bones": 2},
                   "findings": [ROOTS.to_dict()]}],
         "meshes": [mesh("Cylinder", (TWIST, UNWEIGHTED, PRESERVE)), mesh("Clean", ())]},
        {"path": "rigs/character v2.glb", "status": "ok",
         "meshes": [mesh("Body.001", (GROUP, INFLUENCES, INFLUENCES_2))]},
        {"path": "missing.glb", "status": "error", "message": "missing.glb: no such file or folder", "meshes": []},
    ]
    findings = [ROOTS, TWIST, UNWEIGHTED, PRESERVE, GROUP, INFLUENCES, INFLUENCES_2]
    return {"format": "skin_audit.report", "format_version": 2, "tool": {"name": "skin_audit", "version": "0.1.0"},
            "version": "0.1.0", "blender_version": "5.0.1", "options": {"max_influences": 4, "fail_on": "error"},
            "summary": {"files": 3, "files_with_errors": 1, "rigs": 1, "meshes": 3,
                        "worst_severity": worst_severity(findings)},
            "files": files}


def cylinder(rings: int = 9, segments: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """The twist experiment's open cylinder: (V, 3) positions, (T, 3) triangles, z from 0 to 2."""
    z = np.linspace(0.0, 2.0, rings)
    a = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    positions = np.array([(np.cos(t), np.sin(t), h) for h in z for t in a])
    tris = []
    for r in range(rings - 1):
        for s in range(segments):
            a0, a1 = r * segments + s, r * segments + (s + 1) % segments
            tris += [(a0, a1, a1 + segments), (a0, a1 + segments, a0 + segments)]
    return positions, np.array(tris, dtype=np.intp)
