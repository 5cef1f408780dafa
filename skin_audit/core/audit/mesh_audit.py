# SPDX-License-Identifier: GPL-3.0-or-later
"""Judge one skinned mesh: weights, structure, the independent recomputation
against Blender, bind-pose drift and engine divergence.  numpy only."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..codes import codes_of
from ..engines.divergence import divergence as engine_divergence
from ..engines.divergence import divergence_by_pose, divergence_finding
from ..engines.targets import Target
from ..findings import Finding, Severity
from ..maths.affine import distances
from ..maths.parallel import Beside
from .armature_modifier import Recomputed, recompute_blender, recompute_blender_many
from .drift_causes import UNEXPLAINED, rest_drift_causes
from .engine_target import (
    PreparedTarget,
    audit_target,
    engine_offsets,
    explain_non_deform,
    judge_unnormalised,
    prepare_target,
    target_positions,
    world_scale,
)
from .judged import Judged
from .options import GLTF_TOLERANCE_PER_WEIGHT, AuditOptions
from .pose import from_rest
from .pose_sweep import SweepPose, run_sweep
from .report import MeshAudit
from .rig_audit import MissingModifier, RigAudit, RigidPart, audit_rig
from .shape_checks import SpotChecker, SpotSample, shape_checks
from .skinned_mesh import SkinnedMesh
from .stress_poses import standard_poses

F64 = NDArray[np.float64]

#: Every code the rules of this module can report (the shape checks have their own: shape_checks.SHAPE_CODES).
RULE_CODES = codes_of("mesh", "rig", "animation", "animation-data")

#: How many offenders a message names.
WORST_SHOWN = 3


def _vertices(mask: NDArray[np.bool_]) -> tuple[int, ...]:
    return tuple(np.flatnonzero(mask).tolist())


def _worst(values: F64, mask: NDArray[np.bool_]) -> str:
    idx = np.flatnonzero(mask)
    top = idx[np.argsort(-values[idx], kind="stable")[:WORST_SHOWN]]
    return ", ".join(f"vertex {int(i)} ({values[i]:.3g})" for i in top)


def _finding(code: str, severity: Severity, message: str, mask: NDArray[np.bool_] | None = None,
             bones: Sequence[str] = (), groups: Sequence[str] = (), **details: object) -> Finding:
    verts = _vertices(mask) if mask is not None else ()
    count = len(verts) if mask is not None else max(len(bones), len(groups))
    return Finding(code, severity, message, count, verts, tuple(bones), tuple(groups), details)


def _weight_tolerance(options: AuditOptions, influences: NDArray[np.intp]) -> F64 | float:
    if options.weight_tolerance == "gltf":
        return GLTF_TOLERANCE_PER_WEIGHT * np.maximum(influences, 1)
    return float(options.weight_tolerance)


def weight_findings(mesh: SkinnedMesh, options: AuditOptions, deform_sum: F64,
                    influences: NDArray[np.intp]) -> list[Finding]:
    """The weight and group rules of the report contract."""
    out: list[Finding] = []
    w = mesh.weights
    finite = bool(np.isfinite(w).all())
    if not finite:
        bad = ~np.isfinite(w).all(axis=0)
        out.append(_finding("non-finite-weights", "ERROR",
                            f"{int(bad.sum())} vertices have NaN or infinite weights", bad))
    # Per-vertex tests only when one pass over every weight finds something (NaN hides a minimum).
    if not finite or (w.size and w.min() < 0):
        negative = (w < 0).any(axis=0)
        if negative.any():
            out.append(_finding("negative-weights", "ERROR",
                                f"{int(negative.sum())} vertices have negative weights", negative))
    # Weights of groups that another Armature modifier of this mesh deforms with.
    other = [g for g, n in enumerate(mesh.group_names)
             if n in mesh.other_deform_bones and mesh.deform_groups()[g] < 0]
    other_sum = w[other].astype(np.float64).sum(axis=0) if other else np.zeros(mesh.vertex_count)
    total = deform_sum + other_sum
    unweighted = total <= tolerances.BLENDER_MIN_CONTRIB
    if unweighted.any():
        out.append(_finding(
            "unweighted-vertices", "ERROR",
            f"{int(unweighted.sum())} vertices have no deform weight (sum <= 1e-4): Blender leaves them "
            "behind when the rig moves, and so do engines reading Blender's glTF export (the exporter binds "
            "them to an added joint that never moves)", unweighted))
    tol = _weight_tolerance(options, influences)
    # Judged once, by the modifier that holds some of the vertex's weights.
    off = ~unweighted & (deform_sum > tolerances.BLENDER_MIN_CONTRIB) & (np.abs(total - 1.0) > tol)
    if off.any():
        err = np.abs(total - 1.0)
        out.append(_finding(
            "weights-not-normalized", "WARNING",
            f"{int(off.sum())} vertices have deform weights not summing to 1 (worst: {_worst(err, off)}); "
            "Blender divides by the sum silently; what an engine draws depends on its path (engine target)",
            off, max_error=float(err[off].max())))
    over = influences > options.max_influences
    if over.any():
        out.append(_finding(
            "too-many-influences", "WARNING",
            f"{int(over.sum())} vertices have more than {options.max_influences} deform weights "
            f"(up to {int(influences.max())}); Blender uses them all, Blender's glTF exporter keeps the 4 "
            "largest and divides them by their sum, so engines draw those vertices with fewer bones. "
            "Limit Total fixes it",
            over, max_influences=int(influences.max())))
    bones = mesh.group_bones()
    used = w.max(axis=1, initial=0.0) > 0 if finite else (w > 0).any(axis=1)
    for g, name in enumerate(mesh.group_names):
        if not used[g] or name == mesh.modifier.mask_group:
            continue
        if bones[g] < 0 and name in mesh.other_bones:
            continue  # another Armature modifier of this mesh uses it
        if bones[g] < 0:
            # It matters where it is a vertex's only weight: those vertices stay behind (renamed bone?).
            alone = (w[g] > 0) & unweighted
            text = (f"vertex group '{name}' has weights but names no bone of '{mesh.armature_object}': Blender "
                    "ignores it, and so does Blender's glTF exporter")
            if alone.any():
                out.append(_finding("group-without-bone", "WARNING",
                                    f"{text}; {int(alone.sum())} of its vertices have no other deform weight and "
                                    "stay behind (renamed bone?)", w[g] > 0, groups=(name,)))
            else:
                out.append(_finding("group-without-bone", "INFO",
                                    f"{text}; every vertex it weights is weighted to deform bones too, so nothing "
                                    "drawn changes (rename it to its bone or remove it)", w[g] > 0, groups=(name,)))
        elif not mesh.bones.use_deform[bones[g]] and name not in mesh.other_deform_bones:
            out.append(_finding("weights-on-non-deform-bone", "WARNING",
                                f"vertex group '{name}' has weights but bone '{name}' has Deform off: "
                                "Blender ignores them, but Blender's glTF exporter writes every bone as a joint "
                                "and keeps them, so engines move those vertices with that bone",
                                w[g] > 0, bones=(name,), groups=(name,)))
    return out


def _drift_severity(worst: float, size: float) -> Severity:
    """ERROR from drift one can see (tolerances.DRIFT_VISIBLE_RELATIVE of the mesh size), INFO below."""
    return "ERROR" if worst >= tolerances.DRIFT_VISIBLE_RELATIVE * max(size, tolerances.MIN_MESH_SIZE) else "INFO"


def _drift_note(worst: float, size: float) -> str:
    if _drift_severity(worst, size) == "ERROR":
        return ""
    return (f" ({worst / max(size, tolerances.MIN_MESH_SIZE):.2g} of the mesh's size, under the "
            f"{tolerances.DRIFT_VISIBLE_RELATIVE:g} one can see)")


def modifier_findings(mesh: SkinnedMesh) -> list[Finding]:
    """What a rigger would also want flagged about this mesh and its modifier (the armature's
    own findings are the rig audit's: rig_audit.py)."""
    out: list[Finding] = []
    if mesh.modifier.preserve_volume:
        out.append(_finding("preserve-volume-on", "INFO",
                            f"'{mesh.modifier.name}' uses Preserve Volume (dual quaternions); glTF and FBX "
                            "engines skin with LBS, so exports deform differently"))
    if mesh.parent != mesh.armature_object:
        out.append(_finding("mesh-not-parented-to-armature", "INFO",
                            f"'{mesh.object}' is parented to '{mesh.parent or 'nothing'}', not to "
                            f"'{mesh.armature_object}'; Blender deforms it through its Armature modifier all the "
                            "same, and Blender's glTF exporter writes it as a skin of that armature; a pipeline "
                            "that expects the skinned mesh under its armature wants it parented there"))
    if not np.isfinite(mesh.rest).all():
        bad = ~np.isfinite(mesh.rest).all(axis=1)
        out.append(_finding("non-finite-positions", "ERROR",
                            f"{int(bad.sum())} vertices have NaN or infinite positions", bad))
    for reason in mesh.unsupported:
        out.append(_finding("not-reproduced", "INFO", f"not recomputed: {reason}"))
    if mesh.shown_at_rest:
        out.append(_finding("rest-position-shown", "INFO",
                            f"'{mesh.armature_object}' is shown at Rest Position, so the pose Blender evaluates "
                            "is the rest: the comparison with Blender and the engine targets at the current pose "
                            "check the rest only (the stress poses, the sweep and its spot checks still pose it). "
                            "Switch to Pose Position to compare the current pose"))
    return out


def _unsupported_vertices(mesh: SkinnedMesh, rec: Recomputed) -> NDArray[np.bool_]:
    """Vertices whose deformation uses a feature the recomputation leaves out."""
    skip = rec.order_sensitive.copy()
    bones = mesh.deform_groups()
    # B-Bones are recomputed when their segments were read (Bones.bbones).
    read = np.array([r is not None for r in mesh.bones.bbones] or [False] * len(mesh.bones.names), dtype=bool)
    special = ((mesh.bones.bbone_segments > 1) & ~read) | mesh.bones.use_envelope_multiply
    for g, b in enumerate(bones):
        if b >= 0 and special[b]:
            skip |= mesh.weights[g] > 0
    if mesh.modifier.use_bone_envelopes:
        skip |= rec.contrib <= 0.0 if mesh.modifier.use_vertex_groups else True
    if mesh.modifier.use_multi_modifier:
        skip[:] = True
    return skip


def audit_character(armature: str, meshes: Sequence[SkinnedMesh], options: AuditOptions,
                    spot_checkers: Sequence[SpotChecker | None] | None = None,
                    missing: Sequence[MissingModifier] = (),
                    rigid: Sequence[RigidPart] = ()) -> tuple[RigAudit, tuple[MeshAudit, ...]]:
    """One armature over every mesh it deforms: the rig's entry (reported once) and one entry
    per mesh holding what belongs to that mesh (weight asymmetry and stray weights judged over
    all of them).  ``missing``: meshes tied to the armature that nothing deforms; ``rigid``: meshes
    parented to its bones.

    The audit's one orchestrator, and the only owner of threads beside the caller's: the rig's
    families (``audit_rig``, numpy only) run beside the meshes' own, and each mesh's pose sweep
    beside the rest of that mesh's families (``_audit_mesh``).  Both are finished before Blender is
    first called back (the spot checks) and on every error, so no thread of ours runs while
    Blender evaluates.
    """
    rig_side = Beside(audit_rig, armature, meshes, options, missing, rigid)
    try:
        checkers = [None if c is None else _after(rig_side, c)
                    for c in (spot_checkers if spot_checkers is not None else [None] * len(meshes))]
        audits = [_audit_mesh(m, options, c) for m, c in zip(meshes, checkers, strict=True)]
        rig, parts = rig_side()
    finally:
        rig_side.wait()  # on an error too: the caller may call Blender next
    return rig, tuple(
        replace(a, findings=a.findings + tuple(p.findings), metrics={**a.metrics, **p.metrics},
                measures={**a.measures, **p.measures})
        for a, p in zip(audits, parts, strict=True))


def _after(first: Callable[[], object], checker: SpotChecker) -> SpotChecker:
    """``checker`` once ``first`` (the rig's checks on their thread) has finished."""

    def check(poses: Sequence[SweepPose], sample: SpotSample | None) -> Sequence[NDArray[np.floating[Any]]]:
        first()
        return checker(poses, sample)

    return check


def _audit_mesh(mesh: SkinnedMesh, options: AuditOptions, spot_checker: SpotChecker | None) -> MeshAudit:
    """Every family that belongs to one mesh and its modifier, in the report's order."""
    # The pose sweep (numpy only, the longest family) runs beside the rest; joined before the
    # spot checks call Blender back.
    sweep = Beside(run_sweep, mesh, options.sweep_degrees) if options.shape_checks else None
    try:
        rec = recompute_blender(mesh, mesh.read_pose, build_layout=True)  # the audit blends many poses
        judged = judge_weights(mesh, options, rec)
        judged.add(Judged.of(modifier_findings(mesh)))
        skip = _unsupported_vertices(mesh, rec)
        judged.add(judge_recomputation(mesh, rec, skip))
        target = audit_target(options)
        prepared = prepare_target(mesh, target)  # the exporter and weight rules once, for every pose
        poses = blend_test_poses(mesh, options, prepared)
        judged.add(judge_drift(mesh, options, poses, skip))
        judged.add(judge_engines(mesh, options, rec, poses, target, prepared))
        # What the target draws decides whether unnormalised sums matter (the weights family's).
        size = mesh.size()
        judged.findings = judge_unnormalised(
            judged.findings, target, judged.measures["engine_divergence"], size,
            options.divergence_relative * max(size, 1.0), world_scale(mesh), True)
        # Extreme poses (symmetry and stray weights are judged over the character: rig_audit).
        if sweep is not None:
            judged.add(shape_checks(mesh, options, spot_checker, skip, sweep()))
    finally:
        if sweep is not None:
            sweep.wait()  # on an error too: the caller may call Blender next
    return MeshAudit(mesh.object, mesh.armature_object, mesh.vertex_count, judged.metrics, tuple(judged.findings),
                     judged.measures)


def judge_weights(mesh: SkinnedMesh, options: AuditOptions, rec: Recomputed) -> Judged:
    """The weight and group rules, and the weight measures (sums, influences per vertex)."""
    deform_sum, influences = rec.contrib, rec.influences
    return Judged(
        weight_findings(mesh, options, deform_sum, influences),
        {"max_influences": int(influences.max()) if influences.size else 0,
         "unweighted_vertices": int((deform_sum <= tolerances.BLENDER_MIN_CONTRIB).sum()),
         "max_weight_sum_error": float(
             np.abs(deform_sum - 1.0)[deform_sum > tolerances.BLENDER_MIN_CONTRIB].max(initial=0.0)),
         "size": mesh.size()},
        {"weight_sum": deform_sum, "influences": influences.astype(np.float64)})


def judge_recomputation(mesh: SkinnedMesh, rec: Recomputed, skip: NDArray[np.bool_]) -> Judged:
    """The independent recomputation ``rec`` at the read pose against Blender's evaluated mesh
    (``skip``: vertices it does not reproduce)."""
    out = Judged(metrics={"max_numpy_vs_blender": None})
    deform_sum = rec.contrib
    if mesh.blender is not None:
        diff = distances(rec.positions, mesh.blender)
        diff[skip] = 0.0
        out.measures["numpy_vs_blender"] = diff
        out.metrics["max_numpy_vs_blender"] = float(diff.max(initial=0.0))
        out.metrics["vertices_compared"] = int((~skip).sum())
        # Blender works in float32; tiny weight sums amplify its rounding (near the 1e-4 rule).
        tol = np.where(deform_sum < tolerances.TINY_SUM, tolerances.TINY_SUM_MATCH_RELATIVE,
                       tolerances.SKINNING_MATCH_RELATIVE) * max(mesh.size(), 1.0)
        bad = diff > tol
        if bad.any():
            out.findings.append(_finding(
                "skinning-mismatch", "ERROR",
                f"{int(bad.sum())} vertices deform differently from the independent recomputation "
                f"(worst: {_worst(diff, bad)}): " + (
                    f"'{mesh.object}' is parented to '{mesh.parent}' with parent type Armature, so Blender "
                    "deforms it twice (that parenting and the Armature modifier); parent it as Object"
                    if mesh.parent_deforms else "something beyond vertex groups and bones moves them"),
                bad, max_difference=float(diff.max())))
    if rec.order_sensitive.any():
        out.findings.append(_finding(
            "dqs-order-sensitive", "INFO",
            f"{int(rec.order_sensitive.sum())} vertices blend 3+ bones with opposed rotations under Preserve "
            "Volume; Blender's result depends on weight storage order, so they are not compared",
            rec.order_sensitive))
    return out


@dataclass(frozen=True)
class PoseBlends:
    """The test poses blended Blender's way, together (the B-Bone curves of every pose in one pass):
    the cleared pose (the drift family's) and the stress poses where the target needs both blends
    (the engine family's)."""

    #: Per pose name: the target's offsets from Blender, where one blend of the weight differences serves.
    offsets: dict[str, F64]
    #: Poses (name, channel; None for the read pose) the target draws apart from Blender's blend.
    both: list[tuple[str, F64 | None]]
    #: Blender's blend at each pose of ``both`` but the read one, in order.
    blended: list[Recomputed]
    #: Blender's blend at the cleared pose (None: not measured, or nothing it could move), and the
    #: rows it can move (weighted to a bone the cleared pose leaves away from rest).
    cleared: Recomputed | None
    cleared_rows: NDArray[np.intp]


def blend_test_poses(mesh: SkinnedMesh, options: AuditOptions, prepared: PreparedTarget) -> PoseBlends:
    """Blender's blend at the cleared pose and the stress poses the target needs it at."""
    offsets: dict[str, F64] = {}
    poses = [("current", None)] + [(p.name, p.channel) for p in
                                   standard_poses(mesh.bones, options.test_pose_degrees)]
    both: list[tuple[str, F64 | None]] = []
    for name, channel in poses:
        # One blend of the weight differences where the target uses Blender's pairs; else both blends.
        found = engine_offsets(mesh, mesh.read_pose.channel if channel is None else channel, prepared)
        if found is not None:
            offsets[name] = found
        else:
            both.append((name, channel))
    cleared_rows = np.zeros(0, dtype=np.intp)
    if mesh.cleared_channel is not None:
        # Only vertices weighted to a bone whose cleared channel is not exactly the identity can move.
        table = mesh.influence_table
        not_identity = np.any(mesh.cleared_channel != np.eye(4), axis=(1, 2))
        cleared_rows = np.flatnonzero((not_identity[table.bones] & (table.weights != 0)).any(axis=1))
    cleared_pose = [mesh.cleared_channel] if mesh.cleared_channel is not None and cleared_rows.size else []
    # Test poses start from rest, B-Bone pose properties included.
    blended = recompute_blender_many(mesh, from_rest(cleared_pose + [c for _, c in both if c is not None]))
    cleared = blended[0] if cleared_pose else None
    return PoseBlends(offsets, both, blended[1:] if cleared_pose else blended, cleared, cleared_rows)


def judge_drift(mesh: SkinnedMesh, options: AuditOptions, poses: PoseBlends, skip: NDArray[np.bool_]) -> Judged:
    """Bind-pose drift: at rest the mesh must not move; cleared channels must sit at rest."""
    out = Judged()
    size = mesh.size()
    drift = np.zeros(mesh.vertex_count)
    drift_tol = options.drift_relative * max(size, 1.0)
    if mesh.blender_at_rest is not None and mesh.modelled is not None and \
            len(mesh.blender_at_rest) == len(mesh.modelled):
        rest_drift = distances(mesh.blender_at_rest, mesh.modelled)
        moved = rest_drift > drift_tol
        driven = mesh.driven_key_vertices
        if moved.any() and driven is not None and len(driven) == len(moved) and not (moved & ~driven).any():
            # Only shape keys that drivers or F-curves set move them: a corrective key at work as
            # the pose drives it, not the bind pose (the skinning leaves its input where it is).
            keys = ", ".join(f"'{k}'" for k in mesh.shape_keys_driven[:5])
            out.findings.append(_finding(
                "bind-pose-drift", "INFO",
                f"with the armature at rest, {int(moved.sum())} vertices sit up to {rest_drift.max():.3g} from the "
                f"modelled mesh, all of them moved by shape keys that drivers or keys set ({keys}): the key at "
                "work as the pose drives it, not the bind pose",
                moved, max_drift=float(rest_drift.max()), causes=[f"driven shape key {keys}"]))
            rest_drift = np.zeros_like(rest_drift)
            moved = np.zeros_like(moved)
        drift = np.maximum(drift, rest_drift)
        if moved.any():
            causes = rest_drift_causes(mesh, moved)
            worst = float(rest_drift.max())
            out.findings.append(_finding(
                "bind-pose-drift", _drift_severity(worst, size),
                f"with the armature at rest, {int(moved.sum())} vertices sit up to {worst:.3g} "
                f"from the modelled mesh; responsible: {', '.join(causes) or UNEXPLAINED}{_drift_note(worst, size)}",
                moved, max_drift=worst, causes=causes))
    if mesh.cleared_channel is not None:
        dev = np.abs(mesh.cleared_channel - np.eye(4)).max(axis=(1, 2))
        bones_moved = np.flatnonzero((dev > tolerances.BONE_MOVED) & mesh.bones.use_deform)
        moved_bones = [mesh.bones.names[j] for j in bones_moved]
        pose_drift = np.zeros(mesh.vertex_count)
        if poses.cleared is not None:
            rows = poses.cleared_rows
            pose_drift[rows] = distances(poses.cleared.positions[rows], mesh.rest[rows])
        pose_drift[skip] = 0.0
        drift = np.maximum(drift, pose_drift)
        moved = pose_drift > drift_tol
        if moved.any():
            worst = float(pose_drift.max())
            out.findings.append(_finding(
                "bind-pose-drift", _drift_severity(worst, size),
                f"with every pose channel cleared, constraints or drivers hold {len(moved_bones)} deform bones "
                f"away from rest ({', '.join(moved_bones[:5])}), moving {int(moved.sum())} vertices by up to "
                f"{worst:.3g}{_drift_note(worst, size)}", moved, bones=moved_bones, max_drift=worst))
    out.measures["bind_drift"] = drift
    out.metrics["max_bind_drift"] = float(drift.max(initial=0.0))
    return out


def judge_engines(mesh: SkinnedMesh, options: AuditOptions, rec: Recomputed, poses: PoseBlends,
                  target: Target, prepared: PreparedTarget) -> Judged:
    """Engine divergence at the read pose and the standard stress poses, for the chosen target
    (the read pose deformed Blender's way as ``rec``, the others in ``poses``)."""
    out = Judged()
    size = mesh.size()
    per_pose = dict(poses.offsets)
    blends = iter(poses.blended)
    for name, channel in poses.both:
        blender_like = rec if channel is None else next(blends)
        at = mesh.read_pose.channel if channel is None else channel
        per_pose[name] = engine_divergence(target_positions(mesh, target, at, prepared), blender_like.positions)
    divergence = functools.reduce(np.maximum, per_pose.values())
    out.measures["engine_divergence"] = divergence
    out.metrics["max_engine_divergence"] = float(divergence.max(initial=0.0))
    out.metrics["engine_divergence_by_pose"] = divergence_by_pose(per_pose)
    engine_finding = divergence_finding(per_pose, max(size, 1.0), options.divergence_relative, target, "Blender",
                                        world_scale(mesh), size)
    if engine_finding is not None:
        out.findings.append(explain_non_deform(engine_finding, prepared, target))
    return out
