# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's engine target: where the chosen engine draws a Blender mesh at a pose."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from ..engines.targets import Target, get_target
from ..engines.weights import PreparedInfluences, deform_prepared, prepare_exported
from .options import AuditOptions
from .skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]


def audit_target(options: AuditOptions) -> Target:
    """``options.target`` as a Target; ``raw`` keeps ``options.max_influences`` (its historical meaning)."""
    target = get_target(options.target)
    if target.name == "raw":
        target = replace(target, max_influences=options.max_influences)
    return target


def prepare_target(mesh: SkinnedMesh, target: Target) -> list[tuple[NDArray[np.bool_] | None, PreparedInfluences]]:
    """The influences ``target`` draws ``mesh`` with, once for all its poses: (vertex mask, influences).

    Used slots come first in the table, zero padding after.  A vertex with at most N
    influences reaches the engine with all of them (negative ones too): only padding is cut,
    so a padding zero never outranks one of its negative weights.
    """
    table = mesh.influence_table
    n = target.max_influences
    if target.exporter is None and n is not None and table.bones.shape[1] > n:
        few = mesh.flat_columns.count <= n
        return [(few, prepare_exported(table.bones[few, :n], table.weights[few, :n], target)),
                (~few, prepare_exported(table.bones[~few], table.weights[~few], target))]
    return [(None, prepare_exported(table.bones, table.weights, target))]


def target_positions(mesh: SkinnedMesh, target: Target, channel: F64,
                     prepared: list[tuple[NDArray[np.bool_] | None, PreparedInfluences]] | None = None) -> F64:
    """(V, 3) positions ``target`` draws for ``mesh`` at ``channel``, in the mesh's object space.

    For a .blend the target's exporter runs first (``prepare_target``, which a caller with
    several poses computes once).  The blend runs in armature space and goes back with
    ``premat^-1`` as a point: conjugating the matrices into mesh space (``premat^-1 M premat``)
    is exact only when a vertex's weights sum to 1, and the ``raw`` and ``gltf`` targets keep
    sums that do not (an unweighted vertex collapses to the armature's origin, as an engine
    skinning in that space draws it).
    """
    rest = mesh.rest_armature
    drawn = np.empty_like(rest)
    for mask, influences in prepared if prepared is not None else prepare_target(mesh, target):
        if mask is None:
            drawn = deform_prepared(rest, influences, channel)
        else:
            drawn[mask] = deform_prepared(rest[mask], influences, channel)
    back = np.linalg.inv(mesh.mesh_to_armature)
    out: F64 = drawn @ back[:3, :3].T + back[:3, 3]
    return out
