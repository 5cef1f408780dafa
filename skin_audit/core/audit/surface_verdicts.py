# SPDX-License-Identifier: GPL-3.0-or-later
"""The surface family's verdicts: findings, metrics and per-vertex measures of what
``surface.measure_surface`` measured at the test poses, each finding with Preserve Volume's
measure of the same triangles beside it.  numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..errors import SkinAuditError
from ..findings import Finding, Severity
from ..maths.affine import rotation
from ..maths.dqs import dual_quaternion_skinning
from .judged import Judged
from .pose_sweep import SweepPose, sweep_poses
from .skinned_mesh import SkinnedMesh
from .stress_poses import standard_poses, turned_channels
from .surface import SurfacePose, SurfaceResult, lower_is_worse, triangle_measures

F64 = NDArray[np.float64]
Ints = NDArray[np.intp]

#: Every code the surface measures can report.
SURFACE_CODES = frozenset({"surface-stretch", "surface-area-collapse", "surface-fold"})


def _dqs_measures(mesh: SkinnedMesh, tri: Ints, tris: Ints, pose: SurfacePose, sweep: Sequence[SweepPose],
                  test_pose_degrees: float) -> tuple[F64, F64, F64] | None:
    """The measures of ``tris`` at ``pose`` under Preserve Volume (dual quaternions), or None
    where a bone's matrix is not rigid."""
    if pose.bone >= 0:
        p = next(s for s in sweep if s.label(mesh.bones.names) == pose.label)
        channel = turned_channels(mesh.bones, p.bone, rotation(p.axis, np.radians(p.degrees))[None])[0]
    else:
        channel = next(s.channel for s in standard_poses(mesh.bones, test_pose_degrees) if s.name == pose.label)
    verts, local = np.unique(tri[tris], return_inverse=True)
    local = local.reshape(-1, 3)
    table = mesh.influence_table
    w = table.weights[verts]
    w = w / np.maximum(w.sum(axis=1), tolerances.DIVISION_GUARD)[:, None]
    try:
        posed = dual_quaternion_skinning(mesh.rest_armature[verts], table.bones[verts], w, channel,
                                         tolerances.ORTHONORMAL_FLOAT32)
    except SkinAuditError:
        return None  # bones that hold scale or shear: Preserve Volume is not a rotation blend there
    rest = mesh.rest_armature[verts][local]
    return triangle_measures(rest, posed[local])


def crossing(triangles: Ints, edges: Ints, vertex_count: int) -> NDArray[np.bool_]:
    """(T,) whether each triangle has one of ``edges`` (E, 2) among its sides."""
    if not len(edges) or not len(triangles):
        return np.zeros(len(triangles), dtype=bool)
    v = np.int64(vertex_count)
    keys = np.minimum(edges[:, 0], edges[:, 1]).astype(np.int64) * v + np.maximum(edges[:, 0], edges[:, 1])
    out = np.zeros(len(triangles), dtype=bool)
    for i, j in ((0, 1), (1, 2), (2, 0)):
        a, b = triangles[:, i], triangles[:, j]
        out |= np.isin(np.minimum(a, b).astype(np.int64) * v + np.maximum(a, b), keys)
    return out


def surface_findings(mesh: SkinnedMesh, surface: SurfaceResult, test_pose_degrees: float,
                     degrees: Sequence[float], across: NDArray[np.bool_] | None = None
                     ) -> Judged:
    """Findings, metrics and per-vertex heatmap measures of ``measure_surface``'s result.

    WARNING where a moderate sweep pose (within 90 degrees, or the rig's limits) crosses the
    threshold on triangles across a weight-step seam (``across`` (T,) bool, from ``crossing``):
    the data is to blame and the rigger sees it.  INFO for the rest:
    the 180-degree extremes, the stress poses (every bone at once), and linear blend skinning on
    weights that blend as smoothly as the mesh allows (a low-poly joint one edge wide).
    """
    tri = surface.triangles
    findings: list[Finding] = []
    metrics: dict[str, Any] = {
        "surface_triangles_measured": int(surface.measured.sum()),
        "surface_triangles_bbone_skipped": surface.skipped_bbone,
        "surface_triangles_bbone": surface.bbone_measured,
        "surface_triangles_deformable": surface.deformable,
        "min_area_ratio": float(surface.values["area"].min(initial=1.0)),
        "max_stretch": float(surface.values["stretch"].max(initial=1.0)),
        "min_fold_cosine": float(surface.values["fold"].min(initial=1.0)),
    }
    measures: dict[str, F64] = {}
    v = mesh.vertex_count
    measured = np.flatnonzero(surface.measured)  # the others keep area 1 and stretch 1
    for key, values, flip in (("surface_area_loss", surface.values["area"], True),
                              ("surface_stretch", surface.values["stretch"], False)):
        per_vertex = np.zeros(v)
        value = (1.0 - values if flip else values - 1.0)[measured]
        for c in range(3):
            np.maximum.at(per_vertex, tri[measured, c], value)
        measures[key] = per_vertex
    sweep = sweep_poses(mesh, degrees) if len(tri) else []
    steps = np.zeros(len(tri), dtype=bool) if across is None else across
    # (code, measure, its threshold in tolerances, what flagged triangles do)
    for code, name, threshold, what in (
        ("surface-area-collapse", "area", "SURFACE_AREA_COLLAPSE", "keep {v:.3g} of their area"),
        ("surface-stretch", "stretch", "SURFACE_STRETCH", "stretch by {v:.3g} (largest singular value)"),
        ("surface-fold", "fold", "SURFACE_FOLD_COSINE",
         "fold inward (normal at cosine {v:.3g} to where its bone turns it)"),
    ):
        limit = getattr(tolerances, threshold)
        lower = lower_is_worse(name, surface.values[name])
        lower_mod = lower_is_worse(name, surface.values["moderate_" + name])
        bound = lower_is_worse(name, np.asarray(limit))
        warn = (lower_mod < bound) & steps
        info = (lower < bound) & ~warn
        levels: tuple[tuple[Severity, NDArray[np.bool_], F64, Ints], ...] = (
            ("WARNING", warn, surface.values["moderate_" + name], surface.pose_of["moderate_" + name]),
            ("INFO", info, surface.values[name], surface.pose_of[name]))
        for severity, bad, vals, pose_of in levels:
            if bad.any():
                findings.append(_finding(mesh, surface, bad, vals, pose_of, name, what, limit, sweep,
                                         test_pose_degrees, code=code, severity=severity))
    return Judged(findings, metrics, measures)


def _finding(mesh: SkinnedMesh, surface: SurfaceResult, bad: NDArray[np.bool_], values: F64, pose_of: Ints,
             name: str, what: str, threshold: float, sweep: Sequence[SweepPose], test_pose_degrees: float, *,
             code: str, severity: Severity) -> Finding:
    names = mesh.bones.names
    flagged = np.flatnonzero(bad & (pose_of >= 0))
    signed = lower_is_worse(name, values)
    worst_t = int(flagged[np.argmin(signed[flagged])])
    pose = surface.poses[int(pose_of[worst_t])]
    # Bones responsible: each swept bone by its worst triangle; a stress pose names the bones carrying them.
    ranked: dict[str, float] = {}
    for t_, k in zip(flagged.tolist(), pose_of[flagged].tolist(), strict=True):
        p = surface.poses[k]
        b = p.bone if p.bone >= 0 else int(surface.dominant[t_])
        if b < 0:
            continue
        s = float(signed[t_])
        ranked[names[b]] = min(s, ranked.get(names[b], s))
    lead = names[pose.bone] if pose.bone >= 0 else ""
    bones = sorted(ranked, key=lambda n: (n != lead, ranked[n], n))
    shown = ", ".join(bones[:6]) + (f" and {len(bones) - 6} more" if len(bones) > 6 else "")
    # Preserve Volume at the worst pose, on the triangles that pose flags.
    at_pose = flagged[pose_of[flagged] == pose_of[worst_t]]
    dqs = _dqs_measures(mesh, surface.triangles, at_pose, pose, sweep, test_pose_degrees)
    dqs_value: float | None = None
    if dqs is not None:
        area, stretch, fold = dqs
        dqs_value = float({"area": area.min(), "stretch": stretch.max(), "fold": fold.min()}[name])
    vertices = np.unique(surface.triangles[flagged])
    scope = (" across a weight step" if severity == "WARNING" else
             " (at 180 degrees, at a stress pose, or on weights blended as smoothly as the mesh allows: "
             "linear blend skinning's own limit)")
    if dqs_value is None:
        dqs_text = "Preserve Volume (DQS) not measured: a bone's matrix holds scale or shear"
    elif lower_is_worse(name, np.asarray(dqs_value)) >= lower_is_worse(name, np.asarray(threshold)):
        dqs_text = (f"Preserve Volume (DQS) gives {dqs_value:.3g} there, within the threshold: linear blend "
                    "skinning's averaging is to blame, not the weights")
    else:
        dqs_text = (f"Preserve Volume (DQS) gives {dqs_value:.3g} there, beyond the threshold too: the weights "
                    "are to blame (smooth them across the joint)")
    worst_vertex = int(surface.triangles[worst_t][0])
    kind = "stress pose" if pose.bone < 0 else "test pose"
    return Finding(
        code, severity,
        f"{len(flagged)} triangles ({len(vertices)} vertices) {what.format(v=float(values[worst_t]))} at the worst "
        f"{kind} '{pose.label}' (triangle {worst_t}, vertex {worst_vertex}){scope}; bones responsible, worst "
        f"first: {shown}. {dqs_text}.",
        len(vertices), tuple(vertices.tolist()), tuple(bones), (),
        {"pose": pose.label, "bone": lead, "worst": float(values[worst_t]), "worst_triangle": worst_t,
         "worst_vertex": worst_vertex, "triangles": len(flagged), "dqs_worst": dqs_value,
         "kind": pose.label.split()[-4] if pose.bone >= 0 else "stress"},
    )
