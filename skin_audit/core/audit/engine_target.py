# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's engine target: where the chosen engine draws a Blender mesh at a pose."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..engines.targets import Target, get_target
from ..engines.weights import PosedLayout, PreparedInfluences, deform_layout, layout_prepared, prepare_exported
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
class PreparedTarget:
    """The influences a target draws a mesh with, laid out once for all its poses."""

    parts: tuple[tuple[NDArray[np.bool_] | None, PreparedInfluences], ...]  # (vertex mask, influences)
    layouts: tuple[PosedLayout, ...]  # one per part, over the part's vertices


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
    return PreparedTarget(parts, tuple(layout_prepared(rest if mask is None else rest[mask], influences, joints)
                                       for mask, influences in parts))


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
