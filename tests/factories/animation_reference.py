# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit's deform map per vertex, for tests: the linear part at each vertex in
vertex order (the audit measures it per row of its Jacobian table, vertices weighted alike
sharing one row)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from skin_audit.core.audit.animation import frame_matrices, jacobian_table, linear_rows
from skin_audit.core.audit.skinned_mesh import SkinnedMesh

F64 = NDArray[np.float64]


def frame_linear(mesh: SkinnedMesh, channels: F64, by_runs: bool = False) -> F64:
    """(P, V, 3, 3) the deform map's linear part at each vertex, in mesh space, per pose
    (``linear_rows`` in vertex order).

    Parameters
    ----------
    channels : (P, J, 4, 4) float64, ``matrix_channel`` of every bone at each pose
    by_runs : through the layout's runs even without B-Bones (the two ways agree; a test holds them)
    """
    table = jacobian_table(mesh, by_runs)
    rows = linear_rows(mesh, table, frame_matrices(mesh, channels)[0])
    out = rows[table.vertex_row].transpose(1, 0, 2)
    return np.ascontiguousarray(out).reshape(len(channels), mesh.vertex_count, 3, 3)
