# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's engine target: where the chosen engine draws a Blender mesh at a pose."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..engines.targets import Target, get_target
from ..engines.weights import PosedLayout, PreparedInfluences, deform_layout, layout_prepared, prepare_exported
from ..maths.bone_runs import BoneRuns, blend_runs
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
    gathered: F64  # (3, N) their rest positions, armature space


@dataclass(frozen=True)
class PreparedTarget:
    """The influences a target draws a mesh with, laid out once for all its poses."""

    parts: tuple[tuple[NDArray[np.bool_] | None, PreparedInfluences], ...]  # (vertex mask, influences)
    layouts: tuple[PosedLayout, ...]  # one per part, over the part's vertices
    #: Set when the target draws every vertex from Blender's own (bone, vertex) pairs (``offsets``).
    offsets: Offsets | None = None


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
    rest = mesh.rest_armature
    joints = len(mesh.bones.names)
    layouts = tuple(layout_prepared(rest if mask is None else rest[mask], influences, joints)
                    for mask, influences in parts)
    return PreparedTarget(parts, layouts, _offsets(mesh, parts, layouts))


def _offsets(mesh: SkinnedMesh, parts: tuple[tuple[NDArray[np.bool_] | None, PreparedInfluences], ...],
             layouts: tuple[PosedLayout, ...]) -> Offsets | None:
    """The weight differences ``engine - w / sum w`` when the engine blends exactly Blender's
    (bone, vertex) pairs, every vertex moves in Blender (sum > 1e-4, no mask) and with plain
    linear blending; None otherwise (then both positions are computed)."""
    flat = mesh.flat_columns
    if (len(parts) != 1 or mesh.modifier.preserve_volume or not mesh.modifier.use_vertex_groups
            or has_bbones(mesh) or layouts[0].stay.any() or layouts[0].invalid.any()
            or not (flat.contrib > tolerances.BLENDER_MIN_CONTRIB).all() or not (mesh.mask == 1.0).all()):
        return None
    engine = layouts[0].runs
    # Blender's columns in bone order, as the engine's runs are (vertices ascending in both).
    order = np.argsort(flat.bones, kind="stable")
    lengths = np.diff(flat.starts)
    take = np.concatenate([np.arange(flat.starts[c], flat.starts[c + 1]) for c in order]) if len(order) \
        else np.zeros(0, dtype=np.intp)
    if not (np.array_equal(flat.vertex[take], engine.vertex)
            and np.array_equal(np.repeat(flat.bones[order], lengths[order]),
                               np.repeat(engine.bone, np.diff(engine.starts)))):
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        delta = engine.weight - (flat.weight * mesh.blend_scale[flat.vertex])[take]
    if not np.isfinite(delta).all():
        return None
    keep = delta != 0.0
    run_of = np.repeat(np.arange(len(engine.bone)), np.diff(engine.starts))
    kept_per_run = np.bincount(run_of[keep], minlength=len(engine.bone))
    runs = BoneRuns(engine.bone, np.concatenate([[0], np.cumsum(kept_per_run)]).astype(np.intp),
                    engine.vertex[keep], delta[keep], engine.vertex_count)
    return Offsets(runs, layouts[0].gathered[:, keep])


def engine_offsets(mesh: SkinnedMesh, channel: F64, prepared: PreparedTarget) -> F64 | None:
    """(V,) distance between where the target draws each vertex and where Blender does, from one
    blend of the weight differences (``Offsets``); None when that does not apply (then compare
    ``target_positions`` with ``recompute_blender``)."""
    if prepared.offsets is None or not np.isfinite(channel).all():
        return None
    arm = blend_runs(prepared.offsets.runs, prepared.offsets.gathered, channel)
    # Armature space -> the mesh's object space: a difference of points turns with the linear part only.
    d = np.linalg.inv(mesh.mesh_to_armature)[:3, :3] @ arm
    # iv,iv->v: each vertex's squared length.
    out: F64 = np.sqrt(np.einsum("iv,iv->v", d, d))
    return out


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
    back = np.linalg.inv(mesh.mesh_to_armature)
    out: F64 = drawn @ back[:3, :3].T + back[:3, 3]
    return out
