# SPDX-License-Identifier: GPL-3.0-or-later
"""The panel's last results, kept in memory per scene (never saved in the .blend).

Results are Python data (findings, per-vertex arrays) that the panel reads in
``draw()``; they are computed by operators only.  The cache is keyed by scene
name and emptied when a file is loaded or the add-on is disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.audit.options import AuditOptions
from ..core.audit.report import MeshAudit
from ..core.audit.rig_audit import RigAudit
from ..core.findings import Finding


@dataclass(frozen=True)
class TwistReadout:
    """What "Measure" found on the demo rig at one angle and method."""

    angle_deg: float
    method: str
    #: Mid-ring radius ratio on Blender's evaluated deformation.
    mid_ring_blender: float
    #: Closed form: |cos(theta/2)| for LBS, 1 for DQS.
    mid_ring_closed_form: float
    #: Largest displacement with the armature at rest (Blender's evaluation).
    bind_drift: float
    #: Largest |numpy - Blender| position difference at this pose.
    numpy_vs_blender: float
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class AuditResult:
    """The last audit of a scene: its rigs (one entry per armature, its findings once) and
    meshes, or the error that stopped it."""

    meshes: tuple[MeshAudit, ...] = ()
    options: AuditOptions | None = None
    error: str = ""
    rigs: tuple[RigAudit, ...] = ()
    #: Why these results may no longer describe the data ("undo", "redo"); empty while they do.
    stale: str = ""

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for r in self.rigs for f in r.findings) + tuple(f for m in self.meshes for f in m.findings)

    def counts(self) -> dict[str, int]:
        """Number of findings per severity."""
        return {s: sum(f.severity == s for f in self.findings) for s in ("ERROR", "WARNING", "INFO")}

    def summary(self) -> str:
        c = self.counts()
        return (f"{len(self.meshes)} mesh(es): {c['ERROR']} error(s), {c['WARNING']} warning(s), "
                f"{c['INFO']} note(s)")

    def measure_names(self) -> tuple[str, ...]:
        """Per-vertex measures present on at least one mesh, in first-seen order."""
        names: dict[str, None] = {}
        for mesh in self.meshes:
            names.update(dict.fromkeys(mesh.measures))
        return tuple(names)


@dataclass(frozen=True)
class Heatmap:
    """What the heatmap last painted: the measure and the range its colours span."""

    measure: str
    objects: tuple[str, ...]
    low: float
    high: float


_twist: dict[str, TwistReadout] = {}
_audit: dict[str, AuditResult] = {}
_heatmap: dict[str, Heatmap] = {}


def twist_readout(scene_name: str) -> TwistReadout | None:
    return _twist.get(scene_name)


def set_twist_readout(scene_name: str, readout: TwistReadout | None) -> None:
    if readout is None:
        _twist.pop(scene_name, None)
    else:
        _twist[scene_name] = readout


def audit_result(scene_name: str) -> AuditResult | None:
    return _audit.get(scene_name)


def set_audit_result(scene_name: str, result: AuditResult | None) -> None:
    if result is None:
        _audit.pop(scene_name, None)
    else:
        _audit[scene_name] = result


def heatmap(scene_name: str) -> Heatmap | None:
    return _heatmap.get(scene_name)


def set_heatmap(scene_name: str, shown: Heatmap | None) -> None:
    if shown is None:
        _heatmap.pop(scene_name, None)
    else:
        _heatmap[scene_name] = shown


def mark_stale(reason: str) -> None:
    """Undo or redo changed the data: every kept audit says so until it is run again.

    Blender tells which step was undone, not which data it touched, so every scene's
    results are marked; the heatmap legend is dropped (the colours it named may be gone).
    """
    for name, result in list(_audit.items()):
        if not result.error:
            _audit[name] = replace(result, stale=reason)
    _heatmap.clear()


def clear() -> None:
    """Forget every result (file loaded, add-on disabled)."""
    _twist.clear()
    _audit.clear()
    _heatmap.clear()
