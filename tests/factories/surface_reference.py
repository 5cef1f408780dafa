# SPDX-License-Identifier: GPL-3.0-or-later
"""The surface measures of every triangle at one pose, as the audit measures them: what tests
compare with Blender's own evaluated mesh (the audit measures many poses at once,
``surface.measure_surface``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from skin_audit.core import tolerances
from skin_audit.core.audit.skinned_mesh import SkinnedMesh
from skin_audit.core.audit.surface import _blend, _dominant, _triangle_bones, triangle_measures

F64 = NDArray[np.float64]


def surface_at(mesh: SkinnedMesh, channel: F64, positions: F64 | None = None) -> tuple[F64, F64, F64]:
    """Area ratio, stretch and fold cosine of every triangle at one pose, as the audit measures them.

    Parameters
    ----------
    mesh : the rig (its triangles, rest positions, weights, bones)
    channel : (J, 4, 4) float64 skinning matrices of the pose, armature space
    positions : (V, 3) float64 posed positions in the mesh object's space (for example Blender's
        evaluated mesh); None: blended here, Blender's way for plain bones (a B-Bone with segments
        as a plain bone: ``measure_surface`` poses those triangles by its exact path)

    Returns
    -------
    area, stretch, fold : (T,) float64 each
    """
    tri = np.asarray(mesh.triangles, dtype=np.intp).reshape(-1, 3)
    channels = np.asarray(channel, dtype=np.float64)[None]
    if positions is None:
        posed = _blend(mesh, np.arange(mesh.vertex_count), channels)[0]
    else:
        m = mesh.mesh_to_armature
        posed = np.asarray(positions, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]
    tb, tw = _triangle_bones(mesh, tri)
    dominant = _dominant(tb, tw)
    rest = mesh.rest_armature[tri]
    n = np.cross(rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0])
    unit_n = n / np.maximum(np.linalg.norm(n, axis=1), tolerances.DIVISION_GUARD)[:, None]
    expected = np.einsum("tij,tj->ti", channels[0, np.maximum(dominant, 0), :3, :3], unit_n)
    return triangle_measures(rest, posed[tri], expected)
