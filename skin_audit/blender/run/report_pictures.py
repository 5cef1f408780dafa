# SPDX-License-Identifier: GPL-3.0-or-later
"""The geometry the HTML report draws, read from the file while it is still loaded."""

from __future__ import annotations

import bpy
import numpy as np

from ...core.audit.report import FileAudit
from ...core.reports.html import MeshPicture, values_from_measures, vertices_of
from ..read.arrays import mesh_positions, mesh_triangles


def mesh_pictures(result: FileAudit) -> dict[tuple[str, str], MeshPicture]:
    """{(file path, mesh object): MeshPicture} for the meshes of ``result``.

    The mesh as modelled, placed in world space as the viewport shows it (a
    glTF import's Y-up to Z-up turn included), and its loop triangles; a mesh whose
    vertex count differs from the audited one (a modifier before the Armature
    modifier changed the topology) gets no picture rather than a wrong one.
    """
    out: dict[tuple[str, str], MeshPicture] = {}
    for audit in result.meshes:
        obj = bpy.data.objects.get(audit.object)
        if obj is None or obj.type != "MESH" or len(obj.data.vertices) != audit.vertices:
            continue
        world = np.array(obj.matrix_world, dtype=np.float64)
        positions = mesh_positions(obj.data) @ world[:3, :3].T + world[:3, 3]
        out[(result.path, audit.object)] = MeshPicture(
            positions, mesh_triangles(obj.data), values_from_measures(audit.measures),
            finding_vertices=vertices_of(audit.findings))
    return out
