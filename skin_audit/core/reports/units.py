# SPDX-License-Identifier: GPL-3.0-or-later
"""What the report files list per audited file: its rigs, then its meshes.

A report file entry (format version 2) holds ``rigs`` (one per armature:
what belongs to the armature, reported once) and ``meshes`` (one per mesh and
Armature modifier); version 1 only ``meshes``.  Every formatter walks both
through ``units`` so none forgets the rig findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Unit:
    """One rig or mesh entry of a file, as the formatters show it."""

    #: 'rig' or 'mesh'.
    kind: str
    #: The mesh object, or for a rig its armature object.
    object: str
    armature: str
    metrics: Mapping[str, Any]
    findings: tuple[Mapping[str, Any], ...]
    #: Vertex count of a mesh (None for a rig).
    vertices: int | None = None
    #: Meshes a rig deforms.
    meshes: tuple[str, ...] = ()
    #: A rig's skeleton (humanoid map, rest pose) and animation audit entries, as the report holds them.
    skeleton: Mapping[str, Any] = field(default_factory=dict)
    animation: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """'Body <- Armature' for a mesh, 'Armature (rig)' for a rig."""
        return f"{self.armature} (rig)" if self.kind == "rig" else f"{self.object} <- {self.armature}"


def units(file: Mapping[str, Any]) -> list[Unit]:
    """The rig entries, then the mesh entries, of one file of the report dict."""
    out = [Unit("rig", str(r.get("armature", "")), str(r.get("armature", "")), r.get("metrics", {}),
                tuple(r.get("findings", ())), None, tuple(str(m) for m in r.get("meshes", ())),
                r.get("skeleton", {}), r.get("animation", {}))
           for r in file.get("rigs", ())]
    out += [Unit("mesh", str(m.get("object", "")), str(m.get("armature", "")), m.get("metrics", {}),
                 tuple(m.get("findings", ())), m.get("vertices"))
            for m in file.get("meshes", ())]
    return out


def all_findings(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every finding of every rig and mesh of every file."""
    return [f for file in report.get("files", ()) for u in units(file) for f in u.findings]
