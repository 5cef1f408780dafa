# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's engine target: where the chosen engine draws a Blender mesh at a pose."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..engines.targets import Target, get_target
from ..engines.weights import PosedLayout, PreparedInfluences, deform_layout, layout_prepared, prepare_exported
from ..maths.affine import apply_affine
from ..maths.bone_runs import BoneRuns, blend_runs, blend_runs_many, gather_points, runs_from_table
from .armature_modifier import has_bbones
from .options import AuditOptions
from .skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]


def audit_target(options: AuditOptions) -> Target:
    """``options.target`` as a Target; ``raw`` keeps ``options.max_influences`` (its historical meaning)."""
    target = get_target(options.target)
    if target.name == "raw":
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

    @cached_property
    def layouts(self) -> tuple[PosedLayout, ...]:
        """One blend layout per part, over the part's vertices: laid out when first drawn (the
        divergence of a target that shares Blender's pairs never needs them)."""
        return tuple(layout_prepared(self.rest if mask is None else self.rest[mask], influences, self.joint_count)
                     for mask, influences in self.parts)


def prepare_target(mesh: SkinnedMesh, target: Target) -> PreparedTarget:
    """The influences ``target`` draws ``mesh`` with, once for all its poses.

    Used slots come first in the table, zero padding after.  A vertex with at most N
    influences reaches the engine with all of them (negative ones too): only padding is cut,
    so a padding zero never outranks one of its negative weights.
    """
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
    # only (ij,jv->iv: einsum keeps it off OpenBLAS's threads).
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
    # (apply_affine: one product over every vertex would wake OpenBLAS's threads, which then spin
    # against the audit's own for the next tenth of a second)
    return apply_affine(mesh.armature_to_mesh, drawn)
