# SPDX-License-Identifier: GPL-3.0-or-later
"""Extreme poses, symmetry and stray weights: the shape checks of an audit.

``spot_checker`` is how Blender re-evaluates a few sweep poses (the blender/
layer passes it in), so this module stays numpy-only while the sweep is
still proven against Blender's own deformation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding, Severity
from .armature_modifier import recompute_blender, to_armature
from .options import AuditOptions
from .pose_sweep import SweepPose, SweepResult, pose_channel, run_sweep
from .skinned_mesh import SkinnedMesh
from .stray_weights import find_stray_weights
from .symmetry import mirror_frames, mirror_groups, mirror_weights, pair_bones, rotation_angle, shared_convention

F64 = NDArray[np.float64]

#: Every code the shape checks can report (left out with ``AuditOptions(shape_checks=False)``).
SHAPE_CODES = frozenset({
    "twist-collapse", "volume-loss", "sweep-mismatch", "unpaired-side-bone", "mirror-axis-mismatch",
    "mirror-axis-convention", "mesh-not-symmetric", "no-mirrored-bones", "weight-asymmetry", "stray-weights",
})
#: Given sweep poses, Blender's deformed positions (object space) for each.
SpotChecker = Callable[[Sequence[SweepPose]], Sequence[F64]]


@dataclass
class ShapeResult:
    findings: list[Finding] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    measures: dict[str, F64] = field(default_factory=dict)


def _pose_details(pose: SweepPose, names: Sequence[str]) -> dict[str, Any]:
    return {"pose": pose.label(names), "bone": names[pose.bone], "axis": pose.axis, "degrees": pose.degrees}


def _sweep_findings(mesh: SkinnedMesh, sweep: SweepResult, options: AuditOptions, out: ShapeResult) -> None:
    names = mesh.bones.names
    # Heatmaps paint red high: show how much each vertex collapses / loses volume.
    out.measures["collapse"] = 1.0 - sweep.smallest
    out.measures["volume_loss"] = 1.0 - sweep.det
    out.metrics["min_singular_value"] = float(sweep.smallest.min(initial=1.0))
    out.metrics["min_volume_ratio"] = float(sweep.det.min(initial=1.0))
    out.metrics["collapse_by_bone"] = {names[b]: v for b, v in sorted(sweep.per_bone.items())}
    for code, values, pose_of, moderate, moderate_pose, threshold, what in (
        ("twist-collapse", sweep.smallest, sweep.worst_pose, sweep.moderate_smallest, sweep.moderate_pose,
         options.collapse_threshold, "shrink to {v:.3g} of their size (smallest singular value)"),
        ("volume-loss", sweep.det, sweep.det_pose, sweep.moderate_det, sweep.moderate_det_pose,
         options.volume_threshold, "keep {v:.3g} of their volume (determinant)"),
    ):
        # WARNING where a pose the rig should survive (<= 90 deg, or its own limits) already
        # squashes the vertex, named by that pose; INFO where only the 180-degree extremes do.
        warn = moderate < threshold
        info = (values < threshold) & ~warn
        if warn.any():
            out.findings.append(_squash_finding(code, "WARNING", warn, moderate, moderate_pose, what, sweep, names))
        if info.any():
            out.findings.append(_squash_finding(code, "INFO", info, values, pose_of, what, sweep, names))


def _squash_finding(code: str, severity: Severity, bad: NDArray[np.bool_], values: F64,
                    pose_of: NDArray[np.intp], what: str, sweep: SweepResult, names: Sequence[str]) -> Finding:
    worst_v = int(np.flatnonzero(bad)[np.argmin(values[bad])])
    pose = sweep.poses[pose_of[worst_v]]
    bones = sorted({names[sweep.poses[k].bone] for k in np.unique(pose_of[bad]) if k >= 0})
    dqs = float(sweep.dqs_smallest[bad].min())
    keeps = "would keep their shape" if dqs > 1.0 - 1e-6 else f"would reach {dqs:.3g}"
    scope = "" if severity == "WARNING" else " (only at 180-degree test poses)"
    return Finding(
        code, severity,
        f"{int(bad.sum())} vertices {what.format(v=float(values[worst_v]))} at the worst test pose "
        f"'{pose.label(names)}' (vertex {worst_v}){scope}; bones responsible: {', '.join(bones[:6])}. "
        f"This is linear blend skinning, not the data: Preserve Volume (DQS) {keeps}",
        int(bad.sum()), tuple(np.flatnonzero(bad).tolist()), tuple(bones), (),
        {**_pose_details(pose, names), "worst": float(values[worst_v]), "worst_vertex": worst_v, "dqs_worst": dqs},
    )


def _spot_check(mesh: SkinnedMesh, sweep: SweepResult, options: AuditOptions, checker: SpotChecker,
                keep: NDArray[np.bool_], out: ShapeResult) -> None:
    """Re-evaluate the worst sweep poses in Blender and compare with numpy."""
    # The worst pose of each of the worst bones: distinct bones test more of the hierarchy.
    order = np.argsort(sweep.smallest, kind="stable")
    chosen: list[int] = []
    bones_seen: set[int] = set()
    for v in order:
        k = int(sweep.worst_pose[v])
        if k >= 0 and sweep.poses[k].bone not in bones_seen:
            chosen.append(k)
            bones_seen.add(sweep.poses[k].bone)
        if len(chosen) == options.spot_checks:
            break
    if not chosen:
        return
    poses = [sweep.poses[k] for k in chosen]
    blender = checker(poses)
    worst = 0.0
    compared = 0
    tol = tolerances.SKINNING_MATCH_RELATIVE * max(mesh.size(), 1.0)
    for pose, positions in zip(poses, blender, strict=True):
        if len(positions) != mesh.vertex_count:
            continue  # the stack changes the vertex count: reported as not reproduced already
        compared += 1
        numpy_positions = recompute_blender(mesh, pose_channel(mesh, pose)).positions
        diff = float(np.linalg.norm(numpy_positions - positions, axis=1)[keep].max(initial=0.0))
        worst = max(worst, diff)
        if diff > tol:
            out.findings.append(Finding(
                "sweep-mismatch", "ERROR",
                f"test pose '{pose.label(mesh.bones.names)}' deforms differently in Blender than in the numpy "
                f"sweep (by {diff:.3g}); the sweep's numbers cannot be trusted for this rig",
                details=_pose_details(pose, mesh.bones.names)))
    if compared:
        out.metrics["sweep_spot_checks"] = compared
        out.metrics["sweep_spot_check_max_difference"] = worst


def _symmetry_findings(mesh: SkinnedMesh, options: AuditOptions, out: ShapeResult) -> None:
    b = mesh.bones
    pairs = pair_bones(b.names, b.heads)
    if pairs.unpaired:
        names = [b.names[j] for j in pairs.unpaired]
        out.findings.append(Finding(
            "unpaired-side-bone", "WARNING",
            f"{len(names)} side bones have no mirror partner by name: {', '.join(names[:6])}",
            len(names), bones=tuple(names)))
    frames = mirror_frames(b.rest, pairs)
    convention = shared_convention(frames, tolerances.MIRROR_ANGLE_DEGREES)
    if convention is not None:
        out.findings.append(Finding(
            "mirror-axis-convention", "INFO",
            f"the rig mirrors bone axes by its own rule: right bones are Blender's mirror image turned by "
            f"{rotation_angle(convention):.1f} deg (other tools' mirroring; Blender's Paste Flipped and X-Mirror "
            "expect its own); pairs are judged against that rule",
            details={"angle_degrees": rotation_angle(convention)}))
    reference = np.eye(3) if convention is None else convention
    bad = []
    far = tolerances.MIRROR_DISTANCE_RELATIVE * mesh.size()
    for f in frames:
        angle = rotation_angle(reference.T @ f.offset)
        if angle > tolerances.MIRROR_ANGLE_DEGREES or f.head_distance > far:
            bad.append((f.left, f.right, angle, f.head_distance))
    if bad:
        worst = max(bad, key=lambda t: t[2])
        out.findings.append(Finding(
            "mirror-axis-mismatch", "WARNING",
            f"{len(bad)} bone pairs are not mirror images at rest; worst '{b.names[worst[0]]}' / "
            f"'{b.names[worst[1]]}' by {worst[2]:.1f} deg (a rolled bone makes the arm flip or the knee bend "
            "backwards on mirrored poses)",
            len(bad), bones=tuple(b.names[i] for a, c, _, _ in bad for i in (a, c)),
            details={"worst_angle_degrees": worst[2], "worst_head_distance": worst[3]}))
    if not pairs.pairs:
        out.findings.append(Finding(
            "no-mirrored-bones", "INFO", "the rig has no left/right bone pairs; weight symmetry was not checked"))
        return
    points = to_armature(mesh)
    mirror = mirror_weights(points, mesh.weights, mirror_groups(mesh.group_names, b.names, pairs), pairs,
                            options.mirror_radius_relative * mesh.size())
    out.metrics["mirror_matched_fraction"] = mirror.matched_fraction
    if mirror.matched_fraction < options.symmetric_fraction:
        out.findings.append(Finding(
            "mesh-not-symmetric", "INFO",
            f"only {mirror.matched_fraction:.0%} of the vertices have a mirror vertex across "
            f"{pairs.describe()} (armature space); weight symmetry was not checked"))
        return
    out.measures["asymmetry"] = mirror.difference
    out.metrics["max_weight_asymmetry"] = float(mirror.difference.max(initial=0.0))
    asym = mirror.difference > options.asymmetry_tolerance
    if asym.any():
        v = int(np.argmax(mirror.difference))
        group = mesh.group_names[mirror.worst_group[v]]
        out.findings.append(Finding(
            "weight-asymmetry", "WARNING",
            f"{int(asym.sum())} vertices weigh differently from their mirror vertex; worst vertex {v} "
            f"(mirror {int(mirror.partner[v])}) in group '{group}' by {mirror.difference[v]:.3g}",
            int(asym.sum()), tuple(np.flatnonzero(asym).tolist()),
            groups=tuple(sorted({mesh.group_names[g] for g in mirror.worst_group[asym]})),
            details={"worst_vertex": v, "mirror_vertex": int(mirror.partner[v]),
                     "worst_difference": float(mirror.difference[v])}))


def _stray_findings(mesh: SkinnedMesh, out: ShapeResult) -> None:
    size = mesh.size()
    strays = find_stray_weights(to_armature(mesh), mesh.weights, mesh.deform_groups(), mesh.bones.heads,
                                mesh.bones.tails, mesh.edges, size)
    measure = np.zeros(mesh.vertex_count)
    for s in strays:
        measure[s.far] = 1.0
        measure[s.islands] = 1.0
    out.measures["stray"] = measure
    if not strays:
        return
    vertices = np.unique(np.concatenate([np.concatenate([s.far, s.islands]) for s in strays]))
    groups = [mesh.group_names[s.group] for s in strays]
    parts = [f"'{mesh.group_names[s.group]}' ({len(s.far)} far, {len(s.islands)} in islands)" for s in strays]
    out.findings.append(Finding(
        "stray-weights", "WARNING",
        f"{len(vertices)} vertices carry weights that bleed from their bone: {', '.join(parts[:5])}",
        len(vertices), tuple(vertices.tolist()), tuple(mesh.bones.names[s.bone] for s in strays),
        tuple(groups)))


def shape_checks(mesh: SkinnedMesh, options: AuditOptions, spot_checker: SpotChecker | None = None,
                 skip: NDArray[np.bool_] | None = None) -> ShapeResult:
    """Pose sweep (with Blender spot checks), symmetry and stray weights for one mesh.

    ``skip`` marks vertices whose deformation the recomputation does not
    reproduce (B-Bones, envelopes...); spot checks leave them out.
    """
    out = ShapeResult()
    sweep = run_sweep(mesh, options.sweep_degrees)
    _sweep_findings(mesh, sweep, options, out)
    if spot_checker is not None:
        keep = np.ones(mesh.vertex_count, dtype=bool) if skip is None else ~skip
        _spot_check(mesh, sweep, options, spot_checker, keep, out)
    _symmetry_findings(mesh, options, out)
    _stray_findings(mesh, out)
    return out
