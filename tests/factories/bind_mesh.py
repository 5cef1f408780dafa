# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of a bind mesh the tests hold the twist experiment's cylinder to: indices in range, one
connected piece, every vertex used, no zero-area triangle, and the end rings its only boundary."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from skin_audit.core import tolerances
from skin_audit.core.errors import MeshError
from skin_audit.core.maths.mesh_graph import component_labels
from skin_audit.core.twist.cylinder import triangle_areas, unique_edges


def boundary_edges(triangles: NDArray[np.intp]) -> NDArray[np.intp]:
    """(B, 2) edges used by exactly one triangle."""
    e = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    edges, counts = np.unique(np.sort(e, axis=1), axis=0, return_counts=True)
    once: NDArray[np.intp] = edges[counts == 1]
    return once


def connected_components(vertex_count: int, edges: NDArray[np.intp]) -> int:
    """Number of connected pieces of a graph."""
    return int(np.unique(component_labels(vertex_count, edges)).size)


@dataclass(frozen=True)
class MeshCheck:
    vertices: int
    triangles: int
    unique_edges: int
    boundary_edges: int
    components: int
    min_area: float


def check_bind_mesh(vertices: NDArray[np.float64], triangles: NDArray[np.intp]) -> MeshCheck:
    """Validate a bind mesh: indices in range, one connected piece, no zero-area triangle.

    Only the bind mesh is checked; a deformed mesh may legitimately contain
    degenerate triangles (the 180-degree twist does), which is a result.
    """
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3 or t.ndim != 2 or t.shape[1] != 3:
        raise MeshError(f"mesh: vertices {v.shape} must be (V, 3), triangles {t.shape} (T, 3)")
    if t.size and (t.min() < 0 or t.max() >= len(v)):
        bad = int(np.argwhere((t < 0) | (t >= len(v)))[0][0])
        raise MeshError(f"triangle {bad} uses vertex {t[bad].tolist()} outside 0..{len(v) - 1}")
    used = np.zeros(len(v), dtype=bool)
    used[t.ravel()] = True
    if not used.all():
        raise MeshError(f"vertex {int(np.argmin(used))} is used by no triangle")
    edges = unique_edges(t)
    components = connected_components(len(v), edges)
    if components != 1:
        raise MeshError(f"bind mesh falls into {components} disconnected pieces")
    areas = triangle_areas(v, t)
    floor = tolerances.BIND_MIN_AREA_RELATIVE * float(areas.mean())
    if (areas <= floor).any():
        bad = int(np.argmin(areas))
        raise MeshError(f"bind triangle {bad} {t[bad].tolist()} has zero area ({areas[bad]:.3g})")
    return MeshCheck(len(v), len(t), len(edges), len(boundary_edges(t)), components, float(areas.min()))
