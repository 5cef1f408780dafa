# SPDX-License-Identifier: GPL-3.0-or-later
"""The twist experiment's open cylinder (docs/twist-experiment.md) and the bind-mesh checks."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.errors import MeshError
from skin_audit.core.maths.dqs import dual_quaternion_skinning
from skin_audit.core.maths.lbs import linear_blend_skinning
from skin_audit.core.twist.cylinder import (
    MID_RING,
    build_cylinder,
    count_degenerate,
    linear_height_weights,
    triangle_areas,
    unique_edges,
)
from skin_audit.core.twist.seed import seed_skin
from tests.factories.bind_mesh import boundary_edges, check_bind_mesh

CYL = build_cylinder()


def test_cylinder_counts_match_the_spec():
    check = check_bind_mesh(CYL.vertices, CYL.triangles)
    assert (check.vertices, check.triangles) == (216, 384)
    assert (check.unique_edges, check.boundary_edges, check.components) == (600, 48, 1)
    assert check.min_area > 0.0
    # Euler characteristic of an open tube (annulus): V - E + F = 0.
    assert check.vertices - check.unique_edges + check.triangles == 0


def test_cylinder_geometry_radius_one_rings_every_quarter():
    v = CYL.vertices
    np.testing.assert_allclose(np.hypot(v[:, 0], v[:, 1]), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(np.unique(v[:, 2]), np.arange(9) * 0.25)
    assert MID_RING == 4 and np.all(v[CYL.ring_of() == MID_RING, 2] == 1.0)
    # Each ring holds 24 vertices 15 degrees apart.
    angles = np.degrees(np.arctan2(v[:24, 1], v[:24, 0])) % 360.0
    np.testing.assert_allclose(np.sort(angles), np.arange(24) * 15.0, atol=1e-12)


def test_boundary_edges_are_the_two_end_rings():
    ring = CYL.ring_of()
    b = boundary_edges(CYL.triangles)
    assert len(b) == 48
    assert set(np.unique(ring[b])) == {0, 8}
    assert np.all(ring[b[:, 0]] == ring[b[:, 1]])


def test_triangles_face_outwards_consistently():
    # Counter-clockwise seen from outside: normals point away from the axis.
    a, b, c = (CYL.vertices[CYL.triangles[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    centre = (a + b + c) / 3.0
    assert np.all(np.einsum("ti,ti->t", n[:, :2], centre[:, :2]) > 0)


def test_linear_height_weights_follow_the_spec():
    idx, w = linear_height_weights(CYL.vertices)
    z = CYL.vertices[:, 2]
    np.testing.assert_array_equal(idx, np.tile([0, 1], (216, 1)))
    np.testing.assert_array_equal(w[:, 1], z / 2.0)
    np.testing.assert_array_equal(w[:, 0], 1.0 - z / 2.0)
    ring = CYL.ring_of()
    assert np.all(w[ring == 0] == [1.0, 0.0]) and np.all(w[ring == 8] == [0.0, 1.0])
    assert np.all(w[ring == MID_RING] == [0.5, 0.5])


def test_check_bind_mesh_rejects_an_out_of_range_triangle():
    tris = CYL.triangles.copy()
    tris[5, 2] = 216
    with pytest.raises(MeshError, match=r"triangle 5 uses vertex .*216.* outside 0\.\.215"):
        check_bind_mesh(CYL.vertices, tris)
    tris[5, 2] = -1
    with pytest.raises(MeshError, match=r"triangle 5 "):
        check_bind_mesh(CYL.vertices, tris)


def test_check_bind_mesh_rejects_an_unused_vertex():
    extra = np.vstack([CYL.vertices, [[5.0, 5.0, 5.0]]])
    with pytest.raises(MeshError, match=r"vertex 216 is used by no triangle"):
        check_bind_mesh(extra, CYL.triangles)


def test_check_bind_mesh_rejects_two_disconnected_pieces():
    verts = np.vstack([CYL.vertices, CYL.vertices + [10.0, 0.0, 0.0]])
    tris = np.vstack([CYL.triangles, CYL.triangles + 216])
    with pytest.raises(MeshError, match=r"2 disconnected pieces"):
        check_bind_mesh(verts, tris)


def test_check_bind_mesh_rejects_a_zero_area_triangle():
    verts = CYL.vertices.copy()
    verts[1] = verts[0]  # triangle (0, 1, 25) now has two identical corners
    with pytest.raises(MeshError, match=r"has zero area"):
        check_bind_mesh(verts, CYL.triangles)


def test_check_bind_mesh_rejects_bad_shapes():
    with pytest.raises(MeshError, match=r"\(216, 2\)"):
        check_bind_mesh(CYL.vertices[:, :2], CYL.triangles)


def test_unique_edges_of_two_triangles_by_hand():
    np.testing.assert_array_equal(unique_edges(np.array([[0, 1, 2], [2, 1, 3]])),
                                  [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]])
    np.testing.assert_array_equal(boundary_edges(np.array([[0, 1, 2], [2, 1, 3]])),
                                  [[0, 1], [0, 2], [1, 3], [2, 3]])


def test_triangle_area_by_hand():
    v = np.array([[0.0, 0, 0], [3, 0, 0], [0, 4, 0]])
    np.testing.assert_array_equal(triangle_areas(v, np.array([[0, 1, 2]])), [6.0])


def mid_ring_pair_triangles() -> int:
    """Triangles with at least two corners on the mid ring, counted from the topology alone."""
    on_mid = CYL.ring_of()[CYL.triangles] == MID_RING
    return int((on_mid.sum(axis=1) >= 2).sum())


def test_lbs_180_degrees_leaves_48_degenerate_triangles_and_90_none():
    idx, w = linear_height_weights(CYL.vertices)
    bind_areas = triangle_areas(CYL.vertices, CYL.triangles)
    at180 = linear_blend_skinning(CYL.vertices, idx, w, seed_skin(np.pi))
    # At 180 degrees the mid ring collapses onto the axis (radius |cos 90| ~ 6e-17). Each of the
    # 24 quads below it (rings 3-4) and 24 above it (rings 4-5) is split into two triangles, and
    # exactly one of the two has an edge on the mid ring (two mid-ring corners): that edge shrinks
    # to length ~0 and the triangle to area ~0. The other triangle keeps one mid-ring corner and
    # a real area. So 24 + 24 = 48 degenerate triangles.
    assert mid_ring_pair_triangles() == 48
    assert count_degenerate(at180, CYL.triangles, bind_areas) == 48
    at90 = linear_blend_skinning(CYL.vertices, idx, w, seed_skin(np.pi / 2.0))
    assert count_degenerate(at90, CYL.triangles, bind_areas) == 0
    assert count_degenerate(CYL.vertices, CYL.triangles, bind_areas) == 0


def test_dqs_180_degrees_leaves_no_degenerate_triangle():
    idx, w = linear_height_weights(CYL.vertices)
    out = dual_quaternion_skinning(CYL.vertices, idx, w, seed_skin(np.pi))
    assert count_degenerate(out, CYL.triangles, triangle_areas(CYL.vertices, CYL.triangles)) == 0


def test_check_bind_mesh_does_not_judge_the_deformed_mesh():
    # The 180-degree LBS mesh would fail a zero-area check; that is a result, not an input error,
    # which is why only the bind mesh goes through check_bind_mesh.
    idx, w = linear_height_weights(CYL.vertices)
    at180 = linear_blend_skinning(CYL.vertices, idx, w, seed_skin(np.pi))
    with pytest.raises(MeshError, match="zero area"):
        check_bind_mesh(at180, CYL.triangles)
