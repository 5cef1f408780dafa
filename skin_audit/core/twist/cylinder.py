# SPDX-License-Identifier: GPL-3.0-or-later
"""The twist experiment's open cylinder as arrays, and its triangles' measures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances

RINGS = 9
SEGMENTS = 24
RADIUS = 1.0
HEIGHT = 2.0
#: Index of the z = 1 ring, where the child weight is exactly 1/2.
MID_RING = RINGS // 2


@dataclass(frozen=True)
class Cylinder:
    """Bind-pose cylinder: ring-major vertices, two triangles per quad."""

    vertices: NDArray[np.float64]  # (V, 3)
    triangles: NDArray[np.intp]  # (T, 3)
    rings: int
    segments: int
    radius: float
    height: float

    def ring_of(self) -> NDArray[np.intp]:
        """(V,) ring index of each vertex."""
        return np.repeat(np.arange(self.rings), self.segments)


def build_cylinder(
    rings: int = RINGS, segments: int = SEGMENTS, radius: float = RADIUS, height: float = HEIGHT
) -> Cylinder:
    """Open cylinder about +z from z = 0 to ``height``; ring i at z = i * height / (rings - 1)."""
    angle = 2.0 * np.pi * np.arange(segments) / segments
    z = np.linspace(0.0, height, rings)
    vertices = np.column_stack(
        [
            np.tile(radius * np.cos(angle), rings),
            np.tile(radius * np.sin(angle), rings),
            np.repeat(z, segments),
        ]
    )
    i, j = np.meshgrid(np.arange(rings - 1), np.arange(segments), indexing="ij")
    a = i * segments + j
    b = i * segments + (j + 1) % segments
    c = b + segments
    d = a + segments
    tris = np.concatenate(
        [np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)]
    )
    return Cylinder(vertices, tris.astype(np.intp), rings, segments, radius, height)


def linear_height_weights(
    vertices: NDArray[np.float64], height: float = HEIGHT
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Two influences per vertex: slot 0 root with ``1 - z/h``, slot 1 child with ``z/h``.

    Returns
    -------
    indices : (V, 2) intp
    weights : (V, 2) float64
    """
    w = vertices[:, 2] / height
    indices = np.tile(np.array([0, 1], dtype=np.intp), (len(vertices), 1))
    return indices, np.column_stack([1.0 - w, w])


def unique_edges(triangles: NDArray[np.intp]) -> NDArray[np.intp]:
    """(E, 2) sorted unique undirected edges of a triangle list."""
    e = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    edges: NDArray[np.intp] = np.unique(np.sort(e, axis=1), axis=0)
    return edges


def triangle_areas(vertices: NDArray[np.float64], triangles: NDArray[np.intp]) -> NDArray[np.float64]:
    """(T,) triangle areas."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    areas: NDArray[np.float64] = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    return areas


def count_degenerate(
    deformed: NDArray[np.float64], triangles: NDArray[np.intp], bind_areas: NDArray[np.float64]
) -> int:
    """Triangles whose deformed area is below DEGENERATE_AREA_RELATIVE of the mean bind area."""
    areas = triangle_areas(deformed, triangles)
    return int((areas < tolerances.DEGENERATE_AREA_RELATIVE * float(bind_areas.mean())).sum())
