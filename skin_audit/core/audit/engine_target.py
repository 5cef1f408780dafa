# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's engine target: where the chosen engine draws a Blender mesh at a pose."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..engines.divergence import distance_text
from ..engines.targets import Target, get_target
from ..engines.weights import PosedLayout, PreparedInfluences, deform_layout, layout_prepared, prepare_exported
from ..findings import Finding, Severity
from ..maths.affine import apply_affine
from ..maths.bone_runs import BoneRuns, blend_runs, blend_runs_many, gather_points, runs_from_table
from .armature_modifier import has_bbones
from .options import AuditOptions
from .skinned_mesh import InfluenceTable, SkinnedMesh

F64 = NDArray[np.float64]


def audit_target(options: AuditOptions) -> Target:
    """``options.target`` as a Target; ``raw`` keeps ``options.max_influences`` (its historical meaning)."""
    target = get_target(options.target)
    if target.influences_from_options:
        target = replace(target, max_influences=options.max_influences)
    return target


@dataclass(frozen=True)
class Offsets:
    """Where a target's weights differ from Blender's ``w / sum w`` on the same (bone, vertex)
    pairs: the engine's position minus Blender's is the blend of these differences alone."""

    runs: BoneRuns  # the pairs whose weights differ, with the difference as weight
    gathered: F64  # (4, N) their rest positions, armature space, a row of ones last


@dataclass(frozen=True)
class PreparedTarget:
    """The influences a target draws a mesh with, once for all its poses."""

    parts: tuple[tuple[NDArray[np.bool_] | None, PreparedInfluences], ...]  # (vertex mask, influences)
    rest: F64  # (V, 3) the mesh's rest positions, armature space
    joint_count: int
    #: Set when the target draws every vertex from Blender's own (bone, vertex) pairs (``offsets``).
    offsets: Offsets | None = None
    #: Groups naming a bone with Deform off that the exporter writes as joints (Blender ignores
    #: them), and the vertices they weigh (``exported_table``).
    non_deform_groups: tuple[str, ...] = ()
    non_deform_vertices: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, dtype=np.intp))

    @cached_property
    def layouts(self) -> tuple[PosedLayout, ...]:
        """One blend layout per part, over the part's vertices: laid out when first drawn (the
        divergence of a target that shares Blender's pairs never needs them)."""
        return tuple(layout_prepared(self.rest if mask is None else self.rest[mask], influences, self.joint_count)
                     for mask, influences in self.parts)


@dataclass(frozen=True)
class ExportedTable:
    """The influences Blender's glTF exporter reads when they are not Blender's deform weights."""

    table: InfluenceTable
    groups: tuple[str, ...]  # the groups naming a non-deform bone, with weights
    vertices: NDArray[np.intp]  # (N,) the vertices those groups weigh


def exported_table(mesh: SkinnedMesh) -> ExportedTable | None:
    """The groups Blender's glTF exporter writes, when they differ from Blender's deform groups.

    With its defaults (``export_def_bones`` off) every bone of the armature is a joint, and
    ``primitive_extract.__get_bone_data`` keeps every vertex group named after a joint: a group
    naming a bone whose Deform is off, which Blender's Armature modifier ignores, is exported
    and moves its vertices in every engine.  Returns None when no such group has a weight
    (the exporter then reads Blender's own deform table); otherwise a (V, K) table of every group
    naming a bone, slots in group order.
    """
    named = mesh.group_bones()
    deform = mesh.deform_groups()
    rows = [g for g in range(len(named)) if named[g] >= 0]
    extra = [g for g in rows if deform[g] < 0 and mesh.weights[g].any()]
    if not extra:
        return None
    v = mesh.vertex_count
    found = []
    for g in rows:
        idx = np.flatnonzero(mesh.weights[g] != 0)
        found.append((int(named[g]), idx, mesh.weights[g][idx].astype(np.float64)))
    count = np.zeros(v, dtype=np.intp)
    for _, idx, _ in found:
        count[idx] += 1
    k = max(int(count.max(initial=0)), 1)
    bones = np.zeros(v * k, dtype=np.intp)
    weights = np.zeros(v * k)
    fill = np.zeros(v, dtype=np.intp)
    for bone, idx, w in found:
        at = idx * k + fill[idx]
        bones[at] = bone
        weights[at] = w
        fill[idx] += 1
    touched = np.unique(np.concatenate([np.flatnonzero(mesh.weights[g] != 0) for g in extra]))
    return ExportedTable(InfluenceTable(bones.reshape(v, k), weights.reshape(v, k)),
                         tuple(mesh.group_names[g] for g in extra), touched.astype(np.intp))


def prepare_target(mesh: SkinnedMesh, target: Target) -> PreparedTarget:
    """The influences ``target`` draws ``mesh`` with, once for all its poses.

    Used slots come first in the table, zero padding after.  A vertex with at most N
    influences reaches the engine with all of them (negative ones too): only padding is cut,
    so a padding zero never outranks one of its negative weights.  Through an exporter the
    table is what the exporter reads (``exported_table``: non-deform bones' groups included).
    """
    exported = exported_table(mesh) if target.exporter is not None else None
    if exported is not None:
        parts0 = ((None, prepare_exported(exported.table.bones, exported.table.weights, target)),)
        return PreparedTarget(parts0, mesh.rest_armature, len(mesh.bones.names), None,
                              exported.groups, exported.vertices)
    table = mesh.influence_table
    n = target.max_influences
    if target.exporter is None and n is not None and table.bones.shape[1] > n:
        few = mesh.flat_columns.count <= n
        parts: tuple[tuple[NDArray[np.bool_] | None, PreparedInfluences], ...] = (
            (few, prepare_exported(table.bones[few, :n], table.weights[few, :n], target)),
            (~few, prepare_exported(table.bones[~few], table.weights[~few], target)))
    else:
        parts = ((None, prepare_exported(table.bones, table.weights, target)),)
    return PreparedTarget(parts, mesh.rest_armature, len(mesh.bones.names), _offsets(mesh, parts))


def _offsets(mesh: SkinnedMesh, parts: tuple[tuple[NDArray[np.bool_] | None, PreparedInfluences], ...]
             ) -> Offsets | None:
    """The weight differences ``engine - w / sum w`` when the engine blends exactly Blender's
    (bone, vertex) pairs slot for slot, every vertex moves in Blender (sum > 1e-4, no mask), every
    rest position is finite and blending is plain linear; None otherwise (then both positions
    are computed)."""
    if (len(parts) != 1 or mesh.modifier.preserve_volume or not mesh.modifier.use_vertex_groups
            or has_bbones(mesh)):
        return None
    engine = parts[0][1]
    table = mesh.influence_table
    if (engine.weights.shape != table.weights.shape or engine.stay.any() or not np.isfinite(mesh.rest).all()
            or not (mesh.flat_columns.contrib > tolerances.BLENDER_MIN_CONTRIB).all()
            or not (mesh.mask == 1.0).all()):
        return None
    used = table.weights != 0.0
    # The same slots used, naming the same bones (the exporter and runtime keep slot order when
    # they drop nothing): then the engine blends Blender's pairs with other weights.
    if not (np.array_equal(engine.weights != 0.0, used) and np.array_equal(engine.joints[used], table.bones[used])):
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        delta = engine.weights - table.weights * mesh.blend_scale[:, None]
    if not np.isfinite(delta).all():
        return None
    if not delta.any():  # the target draws Blender's weights exactly: nothing to blend
        none = np.zeros(0, dtype=np.intp)
        return Offsets(BoneRuns(none, np.zeros(1, dtype=np.intp), none, np.zeros(0), mesh.vertex_count),
                       np.zeros((3, 0)))
    runs = runs_from_table(table.bones, delta)  # only the pairs whose weights differ
    return Offsets(runs, gather_points(runs, mesh.rest_armature))


def engine_offsets(mesh: SkinnedMesh, channel: F64, prepared: PreparedTarget) -> F64 | None:
    """(V,) distance between where the target draws each vertex and where Blender does, from one
    blend of the weight differences (``Offsets``); None when that does not apply (then compare
    ``target_positions`` with ``recompute_blender``)."""
    if prepared.offsets is None or not np.isfinite(channel).all():
        return None
    if len(prepared.offsets.runs.vertex) == 0:
        return np.zeros(mesh.vertex_count)  # the target draws Blender's weights exactly
    arm = blend_runs(prepared.offsets.runs, prepared.offsets.gathered, channel)
    # Armature space -> the mesh's object space: a difference of points turns with the linear part
    # only (ij,jv->iv: einsum, the BLAS policy of ``maths.parallel``).
    d = np.einsum("ij,jv->iv", mesh.armature_to_mesh[:3, :3], arm)
    # iv,iv->v: each vertex's squared length; a non-finite position is infinitely far (as in divergence).
    with np.errstate(invalid="ignore", over="ignore"):
        out: F64 = np.sqrt(np.einsum("iv,iv->v", d, d))
    return np.where(np.isfinite(out), out, np.inf)


def engine_offsets_many(mesh: SkinnedMesh, channels: F64, prepared: PreparedTarget) -> F64 | None:
    """``engine_offsets`` at each pose of the (P, J, 4, 4) ``channels``: (P, V), from one batched blend
    of the weight differences; None where that does not apply."""
    if prepared.offsets is None or not np.isfinite(channels).all():
        return None
    if len(prepared.offsets.runs.vertex) == 0:
        return np.zeros((len(channels), mesh.vertex_count))
    arm = blend_runs_many(prepared.offsets.runs, prepared.offsets.gathered, channels)
    # Armature space -> the mesh's object space (a difference of points turns with the linear part).
    d = np.einsum("ij,pjv->piv", mesh.armature_to_mesh[:3, :3], np.stack(arm))
    with np.errstate(invalid="ignore", over="ignore"):
        out: F64 = np.sqrt(np.einsum("piv,piv->pv", d, d))
    return np.where(np.isfinite(out), out, np.inf)


def target_positions(mesh: SkinnedMesh, target: Target, channel: F64, prepared: PreparedTarget | None = None) -> F64:
    """(V, 3) positions ``target`` draws for ``mesh`` at ``channel``, in the mesh's object space.

    For a .blend the target's exporter runs first (``prepare_target``, which a caller with
    several poses computes once).  The blend runs in armature space and goes back with
    ``premat^-1`` as a point: conjugating the matrices into mesh space (``premat^-1 M premat``)
    is exact only when a vertex's weights sum to 1, and the ``raw`` and ``gltf`` targets keep
    sums that do not (an unweighted vertex collapses to the armature's origin, as an engine
    skinning in that space draws it).
    """
    prepared = prepared if prepared is not None else prepare_target(mesh, target)
    drawn = np.empty_like(mesh.rest_armature)
    for (mask, _), layout in zip(prepared.parts, prepared.layouts, strict=True):
        if mask is None:
            drawn = deform_layout(layout, channel)
        else:
            drawn[mask] = deform_layout(layout, channel)
    # (apply_affine: in blocks, the BLAS policy of ``maths.parallel``)
    return apply_affine(mesh.armature_to_mesh, drawn)


def target_positions_many(mesh: SkinnedMesh, channels: F64, prepared: PreparedTarget) -> F64:
    """(P, V, 3) ``target_positions`` at each pose of the (P, J, 4, 4) ``channels``: each part's
    layout blended at every pose together (the same sums as ``deform_layout``, pose by pose)."""
    drawn = np.empty((len(channels), mesh.vertex_count, 3))
    for (mask, _), layout in zip(prepared.parts, prepared.layouts, strict=True):
        for p, blended in enumerate(blend_runs_many(layout.runs, layout.gathered, np.asarray(channels))):
            positions = np.ascontiguousarray(blended.T)
            positions[layout.invalid] = np.nan
            positions[layout.stay] = layout.rest[layout.stay]
            if mask is None:
                drawn[p] = positions
            else:
                drawn[p][mask] = positions
    return np.stack([apply_affine(mesh.armature_to_mesh, d) for d in drawn])


def explain_non_deform(finding: Finding, prepared: PreparedTarget, target: Target) -> Finding:
    """``engine-divergence`` saying that the exporter wrote groups of bones with Deform off, when it did
    and the finding's vertices include theirs."""
    if not prepared.non_deform_groups:
        return finding
    hit = np.intersect1d(np.asarray(finding.vertices, dtype=np.intp), prepared.non_deform_vertices)
    if not len(hit):
        return finding
    names = ", ".join(f"'{g}'" for g in prepared.non_deform_groups[:5])
    more = f" and {len(prepared.non_deform_groups) - 5} more" if len(prepared.non_deform_groups) > 5 else ""
    message = (f"{finding.message}; {len(hit)} of them are weighted to bones with Deform off ({names}{more}): "
               f"Blender ignores those groups, but its glTF exporter writes every bone as a joint and keeps "
               f"their weights, so {target.name} moves those vertices with those bones. Remove those weights if "
               "the bones should not deform, turn Deform on if they should, or export with 'Deform Bones Only'")
    return replace(finding, message=message,
                   details={**finding.details, "non_deform_groups": list(prepared.non_deform_groups),
                            "non_deform_vertices": int(len(hit))})


def world_scale(mesh: SkinnedMesh) -> float:
    """World units per unit of the mesh object's space: the geometric mean of its world scale
    (the armature object's scale times ``mesh_to_armature``'s), for distances in messages."""
    m = mesh.mesh_to_armature[:3, :3]
    det = abs(float(np.linalg.det(m))) * float(np.prod(mesh.armature_scale))
    return float(det ** (1.0 / 3.0)) if np.isfinite(det) and det > 0 else 1.0


#: The code whose severity follows what the target draws (``judge_unnormalised``).
UNNORMALISED = "weights-not-normalized"


def keeps_sums(target: Target, from_blend: bool) -> bool:
    """Whether ``target`` draws weights that do not sum to 1 as stored: no exporter renormalises them
    (a .blend goes through Blender's glTF exporter for every target but ``raw``) and its runtime does
    not divide by the sum (``gltf`` and ``raw``; three.js divides at load, Babylon's CPU path and the
    other runtimes modelled here divide too)."""
    exporter_normalises = from_blend and target.exporter is not None and target.exporter.renormalises
    return not exporter_normalises and not target.normalises


def _how_normalised(target: Target, from_blend: bool) -> str:
    if from_blend and target.exporter is not None and target.exporter.renormalises:
        return "Blender's glTF exporter divides each vertex's weights by their sum"
    return target.how_normalised()


def judge_unnormalised(findings: list[Finding], target: Target, divergence: F64 | None, size: float,
                       tolerance: float, scale: float, from_blend: bool) -> list[Finding]:
    """``findings`` with ``weights-not-normalized`` at the severity of what ``target`` shows.

    Blender divides by the sum, so the sums change what a user sees only where the target keeps
    them (``keeps_sums``): WARNING where its drawing of those vertices is farther from Blender's than
    ``tolerance`` (the engine-divergence one), saying how far; INFO otherwise, saying why nothing shows.

    Parameters
    ----------
    divergence : (V,) float or None
        The target's distance from Blender per vertex, worst over the poses compared (None: not
        compared, then the sums are judged by the rule alone).
    size : float
        The mesh's size, in the units of ``divergence``; ``scale`` world units per unit.
    """
    out = []
    for f in findings:
        if f.code != UNNORMALISED:
            out.append(f)
            continue
        rows = np.asarray(f.vertices, dtype=np.intp)
        base = f.message.split("; ", 1)[0]
        fix = "Normalize All in Weight Paint (deform groups only) makes them sum to 1"
        if not keeps_sums(target, from_blend):
            out.append(replace(f, severity="INFO", message=(
                f"{base}; Blender divides by the sum and {_how_normalised(target, from_blend)}, so {target.name} "
                f"draws them where Blender does: nothing shows. {fix}"),
                details={**f.details, "target": target.name, "target_keeps_sums": False}))
            continue
        if divergence is None or not len(rows):
            out.append(replace(f, details={**f.details, "target": target.name, "target_keeps_sums": True}))
            continue
        d = divergence[rows[rows < len(divergence)]]
        worst = float(d.max(initial=0.0))
        far = int((d > tolerance).sum())
        severity: Severity = "WARNING" if far else "INFO"
        how = (f"{far} of them land up to {distance_text(worst, size, scale)} away from where Blender draws them"
               if far else f"the largest difference it makes is {distance_text(worst, size, scale)}, within the "
               "engine-divergence tolerance")
        out.append(replace(f, severity=severity, message=(
            f"{base}; Blender divides by the sum, {target.name} ({target.description}) uses the weights as "
            f"stored: {how}. {fix}"),
            details={**f.details, "target": target.name, "target_keeps_sums": True, "drawn_off": far,
                     "max_drawn_difference": worst, "max_drawn_difference_world": worst * scale}))
    return out
