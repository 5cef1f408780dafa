# SPDX-License-Identifier: GPL-3.0-or-later
"""Extreme poses: the per-mesh shape checks of an audit (symmetry and stray weights, the
others, are judged per character in rig_audit.py).

``spot_checker`` is how Blender re-evaluates a few sweep poses (the blender/
layer passes it in), so this module stays numpy-only while the sweep is
still proven against Blender's own deformation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..codes import codes_of
from ..findings import Finding, Severity
from ..maths.affine import distances
from .armature_modifier import recompute_blender_many
from .judged import Judged
from .options import AuditOptions
from .pose import Pose
from .pose_sweep import SweepPose, SweepResult, pose_channel, run_sweep
from .skinned_mesh import Bones, SkinnedMesh
from .surface import measure_surface
from .surface_verdicts import crossing, surface_findings
from .weight_smoothness import seam_edges, smoothness_findings

F64 = NDArray[np.float64]

#: Every code the shape checks can report here and in rig_audit.py (left out with
#: ``AuditOptions(shape_checks=False)``).
SHAPE_CODES = codes_of("shape")
#: Vertices a spot check compares at most.  A larger mesh is compared on an even stride over its
#: vertices plus each checked pose's worst vertex: Blender evaluates those alone (a million-vertex
#: mesh cost a whole evaluation per pose, and the numpy recomputation a third of the audit).
SPOT_CHECK_VERTICES = 100_000


@dataclass(frozen=True)
class SpotSample:
    """The vertices spot checks compare, of the modifier's input of ``vertex_count`` vertices:
    every ``stride``-th one and the ``include`` ones."""

    vertex_count: int
    stride: int
    include: tuple[int, ...] = ()

    def indices(self) -> NDArray[np.intp]:
        """The sampled vertices, ascending."""
        out: NDArray[np.intp] = np.union1d(np.arange(0, self.vertex_count, self.stride),
                                           np.asarray(self.include, dtype=np.intp))
        return out


#: Given sweep poses and the sample to read (None: every vertex), Blender's deformed positions
#: (object space) of those vertices, ascending, for each pose, as Blender stores them (float32).
SpotChecker = Callable[[Sequence[SweepPose], SpotSample | None], Sequence[NDArray[np.floating[Any]]]]


def _pose_details(pose: SweepPose, names: Sequence[str]) -> dict[str, Any]:
    return {"pose": pose.label(names), "bone": names[pose.bone], "axis": pose.axis, "degrees": pose.degrees}


def _sweep_findings(mesh: SkinnedMesh, sweep: SweepResult, options: AuditOptions, out: Judged) -> None:
    bones = mesh.bones
    names = bones.names
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
            out.findings.append(_squash_finding(code, "WARNING", warn, moderate, moderate_pose, what, sweep, bones))
        if info.any():
            out.findings.append(_squash_finding(code, "INFO", info, values, pose_of, what, sweep, bones))


def rig_links_note(bones: Bones, bone: int) -> tuple[str, dict[str, Any]]:
    """What the rig does beyond the swept bone: a sentence for the message and its details.

    The sweep turns one bone alone; a rig that spreads twist (twist bones with Copy Rotation,
    B-Bone roll driven by a neighbour) or poses its deform bones from controls (Rigify) moves
    others with it, or never moves it alone, and may avoid the squash reported.
    """
    name = bones.names[bone]
    followers = bones.followers(bone)
    leaders = bones.driven_by[bone] if bones.driven_by else ()
    parts = []
    if followers:
        parts.append(f"the rig would also move {', '.join(followers[:4])}{' ...' if len(followers) > 4 else ''} "
                     f"(constraints or drivers follow '{name}')")
    if leaders:
        parts.append(f"the rig poses '{name}' from {', '.join(leaders[:4])}{' ...' if len(leaders) > 4 else ''} "
                     "(constraints or drivers)")
    if not parts:
        return "", {}
    return (f" Swept alone; {' and '.join(parts)}: the rig may avoid this, pose it through its controls "
            "to see what it really does.", {"rig_also_moves": list(followers), "rig_poses_it_from": list(leaders)})


def _worst_first(bad: NDArray[np.bool_], values: F64, pose_of: NDArray[np.intp], sweep: SweepResult,
                 names: Sequence[str], first: str) -> list[str]:
    """The bones whose sweep poses are the worst of the ``bad`` vertices, each ranked by the least
    value among its vertices (the worst first; names break ties, ``first``, the bone of the pose
    the message names, leads): a rig's many bones are cut to the first few in the message, and
    those must be the ones to look at."""
    flagged = np.flatnonzero(bad & (pose_of >= 0))
    pose, value = pose_of[flagged], values[flagged]
    order = np.lexsort((value, pose))  # by pose, each pose's least value first
    pose, value = pose[order], value[order]
    starts = np.flatnonzero(np.concatenate([[True], pose[1:] != pose[:-1]])) if pose.size else pose
    least: dict[str, float] = {}
    for k, v in zip(pose[starts].tolist(), value[starts].tolist(), strict=True):
        name = names[sweep.poses[k].bone]
        least[name] = min(v, least.get(name, v))
    return sorted(least, key=lambda name: (name != first, least[name], name))


def _squash_finding(code: str, severity: Severity, bad: NDArray[np.bool_], values: F64,
                    pose_of: NDArray[np.intp], what: str, sweep: SweepResult, bones: Bones) -> Finding:
    names = bones.names
    worst_v = int(np.flatnonzero(bad)[np.argmin(values[bad])])
    pose = sweep.poses[pose_of[worst_v]]
    involved = _worst_first(bad, values, pose_of, sweep, names, names[pose.bone])
    shown = ", ".join(involved[:6]) + (f" and {len(involved) - 6} more" if len(involved) > 6 else "")
    dqs = float(sweep.dqs_smallest[bad].min())
    keeps = "would keep their shape" if dqs > 1.0 - tolerances.UNIT_MEASURE else f"would reach {dqs:.3g}"
    scope = "" if severity == "WARNING" else " (only at 180-degree test poses)"
    note, links = rig_links_note(bones, pose.bone)
    return Finding(
        code, severity,
        f"{int(bad.sum())} vertices {what.format(v=float(values[worst_v]))} at the worst test pose "
        f"'{pose.label(names)}' (vertex {worst_v}){scope}; bones responsible, worst first: {shown}. "
        f"This is linear blend skinning, not the data: Preserve Volume (DQS) {keeps}.{note}",
        int(bad.sum()), tuple(np.flatnonzero(bad).tolist()), tuple(involved), (),
        {**_pose_details(pose, names), "worst": float(values[worst_v]), "worst_vertex": worst_v, "dqs_worst": dqs,
         **links},
    )


#: Vertices the choice of spot-check poses looks at first (the smallest values, in order); the
#: whole mesh is sorted only when those name too few bones.
_FIRST_CANDIDATES = 4096


def _worst_poses(sweep: SweepResult, count: int) -> tuple[list[int], list[int]]:
    """Up to ``count`` sweep poses of distinct bones, and the vertex each is chosen by: walking the
    vertices from the smallest value up (ties by index), each new bone's worst pose there."""
    values = sweep.smallest
    if len(values) > _FIRST_CANDIDATES:
        # Every vertex at or below the candidates' largest value (ties included: there may be many
        # more), in the same order the whole sort gives them; sorting a million values took a
        # tenth of a second.
        bound = np.partition(values, _FIRST_CANDIDATES - 1)[_FIRST_CANDIDATES - 1]
        below = np.flatnonzero(values <= bound)
        chosen, vertices = _walk_poses(sweep, below[np.argsort(values[below], kind="stable")], count)
        if len(chosen) == count or len(below) == len(values):
            return chosen, vertices
    return _walk_poses(sweep, np.argsort(values, kind="stable"), count)


def _walk_poses(sweep: SweepResult, order: NDArray[np.intp], count: int) -> tuple[list[int], list[int]]:
    """``_worst_poses`` over the vertices ``order``, in that order."""
    chosen: list[int] = []
    vertices: list[int] = []
    bones_seen: set[int] = set()
    for v in order.tolist():
        k = int(sweep.worst_pose[v])
        if k >= 0 and sweep.poses[k].bone not in bones_seen:
            chosen.append(k)
            vertices.append(v)
            bones_seen.add(sweep.poses[k].bone)
        if len(chosen) == count:
            break
    return chosen, vertices


def _spot_check(mesh: SkinnedMesh, sweep: SweepResult, options: AuditOptions, checker: SpotChecker,
                keep: NDArray[np.bool_], out: Judged) -> None:
    """Re-evaluate the worst sweep poses in Blender and compare with numpy."""
    # The worst pose of each of the worst bones: distinct bones test more of the hierarchy.
    chosen, worst_vertices = _worst_poses(sweep, options.spot_checks)
    if not chosen:
        return
    poses = [sweep.poses[k] for k in chosen]
    sample = spot_check_sample(mesh.vertex_count, worst_vertices)
    blender = checker(poses, sample)
    worst = 0.0
    compared = 0
    tol = tolerances.SKINNING_MATCH_RELATIVE * max(mesh.size(), 1.0)
    checked = mesh
    if sample is not None:
        index = sample.indices()
        checked = mesh.vertex_subset(index)
        keep = keep[index]
    # (A pose whose vertex count the stack changed is reported as not reproduced already.)
    same = [(pose, positions) for pose, positions in zip(poses, blender, strict=True) if len(positions) == len(keep)]
    # The sandboxes clear every pose channel, B-Bone curves too: test poses from rest.
    recomputed = recompute_blender_many(checked, [Pose(pose_channel(mesh, pose)) for pose, _ in same])
    for (pose, positions), numpy_side in zip(same, recomputed, strict=True):
        compared += 1
        diff = float(distances(numpy_side.positions, positions)[keep].max(initial=0.0))
        worst = max(worst, diff)
        if diff > tol:
            out.findings.append(Finding(
                "sweep-mismatch", "ERROR",
                f"test pose '{pose.label(mesh.bones.names)}' deforms differently in Blender than in the numpy "
                f"sweep (by {diff:.3g}); the sweep's numbers cannot be trusted for this rig"
                + (" (its parent type Armature deforms it a second time: parent it as Object)"
                   if mesh.parent_deforms else ""),
                details=_pose_details(pose, mesh.bones.names)))
    if compared:
        out.metrics["sweep_spot_checks"] = compared
        out.metrics["sweep_spot_check_max_difference"] = worst
        out.metrics["sweep_spot_check_vertices"] = int(keep.sum())


def _surface(mesh: SkinnedMesh, options: AuditOptions, out: Judged) -> None:
    """The surface measures at the test poses (surface.py, judged in surface_verdicts.py) and the
    weight smoothness rules."""
    seams = seam_edges(mesh)
    out.findings += smoothness_findings(mesh, seams)
    if not len(mesh.triangles):
        return
    idx, _, _, seam = seams  # the surface's WARNINGs are those across a seam
    steps = np.asarray(mesh.edges, dtype=np.intp).reshape(-1, 2)[idx[seam]]
    across = crossing(mesh.triangles, steps, mesh.vertex_count)
    surface = measure_surface(mesh, options.sweep_degrees, options.test_pose_degrees, across)
    out.add(surface_findings(mesh, surface, options.test_pose_degrees, options.sweep_degrees, across))


def spot_check_sample(vertex_count: int, include: Sequence[int]) -> SpotSample | None:
    """The vertices spot checks compare, or None for all of them: every vertex up to
    ``SPOT_CHECK_VERTICES``, beyond it an even stride over the mesh and the ``include`` vertices."""
    if vertex_count <= SPOT_CHECK_VERTICES:
        return None
    return SpotSample(vertex_count, -(-vertex_count // SPOT_CHECK_VERTICES), tuple(sorted(set(include))))


def shape_checks(mesh: SkinnedMesh, options: AuditOptions, spot_checker: SpotChecker | None = None,
                 skip: NDArray[np.bool_] | None = None, sweep: SweepResult | None = None) -> Judged:
    """Pose sweep (with Blender spot checks) for one mesh; symmetry and stray weights are judged
    over the whole character (rig_audit.py).

    ``skip`` marks vertices whose deformation the recomputation does not
    reproduce (B-Bones, envelopes...); spot checks leave them out.  ``sweep``: the
    mesh's ``run_sweep`` at ``options.sweep_degrees`` when the caller has run it.
    """
    out = Judged()
    sweep = run_sweep(mesh, options.sweep_degrees) if sweep is None else sweep
    _sweep_findings(mesh, sweep, options, out)
    _surface(mesh, options, out)
    if spot_checker is not None:
        keep = np.ones(mesh.vertex_count, dtype=bool) if skip is None else ~skip
        _spot_check(mesh, sweep, options, spot_checker, keep, out)
    return out
