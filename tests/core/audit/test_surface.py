# SPDX-License-Identifier: GPL-3.0-or-later
"""The surface measures (area ratio, stretch, fold per triangle) and weight smoothness on numpy
rigs, against closed forms.

Twisted cylinder: every vertex of the mid ring (z = 1) and of a fan capping it has child weight
1/2, so the cap's triangles are all mapped by ``(I + Rz(theta)) / 2``, a rotation scaled by
``|cos(theta / 2)|``: area ratio ``cos^2(theta / 2)``, stretch ``|cos(theta / 2)|``.

Bent two-bone tube (bones along +Y, joint at y = 1, child weight linear from 0 at y = 1 - L to 1
at y = 1 + L, child bent by theta about X): at the joint (w = 1/2) the surface's circumferential
direction keeps its length and the axial one maps to
``(1/2) ((1 + cos theta - z sin theta / L) e_y' + (sin theta + z (cos theta - 1) / L) e_z')``,
so the area ratio on the line at height z (z = +r the inner side) is
``(1/2) sqrt((1 + cos theta - z sin theta / L)^2 + (sin theta + z (cos theta - 1) / L)^2)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.pose_sweep import SweepPose, pose_channel
from skin_audit.core.audit.surface import measure_surface, triangle_measures
from skin_audit.core.audit.weight_smoothness import crowded_vertices, step_edges
from skin_audit.core.fixes.weights import smooth_region
from tests.core.audit.rule_helpers import audit
from tests.factories import numpy_rigs as nr
from tests.factories.surface_reference import surface_at

NEW = {"surface-stretch", "surface-fold", "surface-area-collapse", "weight-step", "twist-region-crowded"}


def tube_triangles(rings: int, segments: int) -> np.ndarray:
    """(T, 3) two triangles per quad of a ring-major tube."""
    out = []
    for r in range(rings - 1):
        for s in range(segments):
            a, b = r * segments + s, r * segments + (s + 1) % segments
            out += [(a, b, b + segments), (a, b + segments, a + segments)]
    return np.array(out, dtype=np.intp)


def bent_tube(rings: int = 81, segments: int = 32, radius: float = 0.2, blend: float = 0.5,
              step: bool = False) -> nr.Rig:
    """Two bones along +Y (joint at y = 1); child weight linear over [1 - blend, 1 + blend], or a hard step."""
    rest, edges = nr.tube(rings, segments, radius, 2.0)
    y = rest[:, 1]
    child = (y >= 1.0).astype(float) if step else np.clip((y - (1.0 - blend)) / (2.0 * blend), 0.0, 1.0)
    return nr.Rig(tuple(nr.chain(("Root", "Child"), 2.0)), rest, {"Root": 1.0 - child, "Child": child}, edges)


def mesh_of(rig: nr.Rig, rings: int, segments: int):
    return nr.skinned_mesh(rig, blender=None, triangles=tube_triangles(rings, segments))


def test_triangle_measures_by_hand():
    rest = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    posed = rest * np.array([2.0, 1.0, 1.0])  # stretched twice along x
    area, stretch, fold = triangle_measures(rest, posed)
    assert area[0] == pytest.approx(2.0) and stretch[0] == pytest.approx(2.0) and fold[0] == pytest.approx(1.0)
    flipped = posed * np.array([1.0, -1.0, 1.0])  # mirrored: the face turns inside out
    area, stretch, fold = triangle_measures(rest, flipped)
    assert area[0] == pytest.approx(2.0) and fold[0] == pytest.approx(-1.0)
    sheared = rest.copy()
    sheared[0, 2] = [1.0, 1.0, 0.0]  # (0, 1) -> (1, 1): shear of 1, singular values golden ratio and its inverse
    area, stretch, _ = triangle_measures(rest, sheared)
    assert area[0] == pytest.approx(1.0) and stretch[0] == pytest.approx((1.0 + math.sqrt(5.0)) / 2.0)


def capped_twist_cylinder():
    """The twist experiment's cylinder (9 rings x 24, z 0..2, child weight z / 2, bones on Z) and a fan
    capping its mid ring (ring 4, z = 1) around a centre vertex on the axis."""
    rings, seg = 9, 24
    a = 2.0 * np.pi * np.arange(seg) / seg
    z = np.repeat(np.linspace(0.0, 2.0, rings), seg)
    rest = np.column_stack([np.tile(np.cos(a), rings), np.tile(np.sin(a), rings), z])
    rest = np.vstack([rest, [[0.0, 0.0, 1.0]]])
    centre = len(rest) - 1
    child = rest[:, 2] / 2.0
    rows = tuple(nr.chain(("Root", "Child"), 2.0, axis=(0.0, 0.0, 1.0)))
    side = tube_triangles(rings, seg)
    cap = np.array([(centre, 4 * seg + s, 4 * seg + (s + 1) % seg) for s in range(seg)], dtype=np.intp)
    rig = nr.Rig(rows, rest, {"Root": 1.0 - child, "Child": child})
    return nr.skinned_mesh(rig, blender=None, triangles=np.vstack([side, cap])), len(side), len(cap)


@pytest.mark.parametrize("degrees", [60.0, 90.0, 120.0, 180.0])
def test_twisted_cylinder_mid_ring_cap_closed_form(degrees):
    mesh, first, count = capped_twist_cylinder()
    pose = SweepPose(1, "y", degrees, "default")  # the child's own Y is the cylinder's axis
    area, stretch, fold = surface_at(mesh, pose_channel(mesh, pose))
    cap = slice(first, first + count)
    c = abs(math.cos(math.radians(degrees) / 2.0))
    assert np.allclose(area[cap], c * c, atol=1e-12)
    assert np.allclose(stretch[cap], c, atol=1e-12)
    if degrees < 180.0:
        assert np.all(fold[cap] > 0.0)  # turned by theta / 2: not folded against either bone


def test_twisted_cylinder_worst_pose_and_preserve_volume():
    mesh, first, count = capped_twist_cylinder()
    surface = measure_surface(mesh, (90.0, 180.0), 90.0)
    cap = slice(first, first + count)
    assert np.allclose(surface.values["area"][cap], 0.0, atol=1e-12)  # cos^2(90 deg) at the 180-degree twist
    assert np.allclose(surface.values["moderate_area"][cap], 0.5, atol=1e-12)
    from skin_audit.core.audit.surface_verdicts import surface_findings

    found = surface_findings(mesh, surface, 90.0, (90.0, 180.0)).findings
    collapse = [f for f in found if f.code == "surface-area-collapse"]
    assert collapse and all(f.severity == "INFO" for f in collapse)
    assert "180" in collapse[0].details["pose"] and collapse[0].details["dqs_worst"] >= 1.0 - 1e-9  # DQS keeps it


@pytest.mark.parametrize("radius, blend", [(0.2, 0.5), (0.2, 0.25), (0.4, 0.5)])
def test_bent_tube_inner_and_outer_side_closed_form(radius, blend):
    rings, seg = 161, 64
    mesh = mesh_of(bent_tube(rings, seg, radius, blend), rings, seg)
    theta = math.radians(90.0)
    area, _, _ = surface_at(mesh, pose_channel(mesh, SweepPose(1, "x", 90.0, "default")))
    tri = mesh.triangles
    centroid = mesh.rest[tri].mean(axis=1)
    for z in (radius, -radius):  # inner side, outer side
        expected = 0.5 * math.hypot(1.0 + math.cos(theta) - z * math.sin(theta) / blend,
                                    math.sin(theta) + z * (math.cos(theta) - 1.0) / blend)
        near = np.argsort(np.abs(centroid[:, 1] - 1.0) + np.abs(centroid[:, 2] - z) + np.abs(centroid[:, 0]))[:4]
        assert np.allclose(area[near], expected, rtol=0.02, atol=0.01), (z, area[near], expected)


def test_clean_bent_tube_has_no_new_warning_and_a_hard_step_is_found():
    rings, seg = 41, 32
    clean = audit(mesh_of(bent_tube(rings, seg), rings, seg), shape_checks=True)
    assert not {f.code for f in clean.findings if f.severity != "INFO"} & NEW
    stepped = audit(mesh_of(bent_tube(rings, seg, step=True), rings, seg), shape_checks=True)
    warnings = {f.code: f for f in stepped.findings if f.severity == "WARNING"}
    assert {"weight-step", "surface-stretch", "surface-fold"} <= set(warnings)
    assert warnings["weight-step"].bones[0] in ("Root", "Child")
    assert warnings["surface-stretch"].bones[0] == "Child"  # the bone whose turn stretches it
    ring = set(range(20 * seg, 21 * seg))  # the first child ring: y = 1
    assert ring <= set(warnings["weight-step"].vertices)


def test_a_low_poly_joint_one_edge_wide_is_no_weight_step():
    """A step across edges as long as the limb is thick is all a coarse mesh can blend: not flagged."""
    rings, seg = 5, 8
    assert step_edges(mesh_of(bent_tube(rings, seg, radius=0.5, step=True), rings, seg))[0].size == 0


def test_smoothing_removes_the_step_and_changes_only_the_region():
    rings, seg = 41, 32
    mesh = mesh_of(bent_tube(rings, seg, step=True), rings, seg)
    idx, _, _ = step_edges(mesh)
    vertices = np.unique(mesh.edges[idx])
    weights = np.vstack([mesh.weights, np.full((1, mesh.vertex_count), 0.25, dtype=np.float32)])
    deform = np.array([True, True, False])
    locked = np.array([False, False, False])
    fix = smooth_region(weights, deform, locked, mesh.edges, vertices)
    changed = np.unique(fix.changed[:, 1])
    region = set(vertices.tolist())
    region |= {int(b) for a, b in mesh.edges if a in region} | {int(a) for a, b in mesh.edges if b in region}
    assert set(changed.tolist()) <= region and len(changed) > 0
    assert np.array_equal(fix.weights[2], weights[2])  # a non-deform group never changes
    assert np.allclose(fix.weights[:2].sum(axis=0), 1.0, atol=1e-6)
    after = nr.skinned_mesh(nr.Rig(mesh_rows(mesh), mesh.rest, {"Root": fix.weights[0], "Child": fix.weights[1]},
                                   mesh.edges), blender=None, triangles=mesh.triangles)
    assert step_edges(after)[0].size == 0


def mesh_rows(mesh):
    return tuple(nr.chain(("Root", "Child"), 2.0))


def test_locked_groups_stay_while_smoothing():
    rings, seg = 41, 32
    mesh = mesh_of(bent_tube(rings, seg, step=True), rings, seg)
    vertices = np.unique(mesh.edges[step_edges(mesh)[0]])
    fix = smooth_region(mesh.weights, np.array([True, True]), np.array([True, False]), mesh.edges, vertices)
    assert np.array_equal(fix.weights[0], mesh.weights[0])


def test_candy_wrapper_four_bones_of_one_chain():
    names = ("A", "B", "C", "D", "E")
    rest, edges = nr.tube(9, 8, 0.3, 2.0)
    even = np.full(len(rest), 0.2)
    rig = nr.Rig(tuple(nr.chain(names, 2.0)), rest, {n: even for n in names}, edges)
    crowded, deepest = crowded_vertices(nr.skinned_mesh(rig, blender=None))
    assert crowded.all() and set(deepest.tolist()) == {4}
    found = audit(nr.skinned_mesh(rig, blender=None), shape_checks=True)
    assert [f.severity for f in found.findings if f.code == "twist-region-crowded"] == ["WARNING"]
    two = nr.Rig(rig.rows, rest, {"A": np.full(len(rest), 0.5), "B": np.full(len(rest), 0.5)}, edges)
    assert not crowded_vertices(nr.skinned_mesh(two, blender=None))[0].any()


def test_the_two_class_product_is_the_blend_of_every_corner():
    """A sweep pose's closed-form product (every bone at rest or turned) against the general blend."""
    from skin_audit.core.audit import surface as sf
    from skin_audit.core.audit.stress_poses import turned_channels
    from skin_audit.core.maths.affine import rotation

    rows = tuple(nr.chain(("A", "B", "C"), 2.0))
    rest, edges = nr.tube(21, 12, 0.3, 2.0)
    y = rest[:, 1]
    w = nr.chain_weights(y, ("A", "B", "C"), 2.0)
    mesh = nr.skinned_mesh(nr.Rig(rows, rest, w, edges), blender=None, triangles=tube_triangles(21, 12))
    surface = measure_surface(mesh, (90.0,), 90.0)  # builds nothing we read; checks it runs
    assert surface.measured.any()
    tri = mesh.triangles
    points = mesh.rest_armature
    corner = points[tri]
    plane = sf._RestPlane.of(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0])
    bones, scaled = sf._scaled_table(mesh)
    tb, tw = sf._triangle_bones(mesh, tri)
    data = sf._Mesh(tri, points, np.column_stack([points, np.ones(len(points))]), plane, sf._dominant(tb, tw),
                    bones, scaled)
    block = np.arange(len(tri))
    channels = turned_channels(mesh.bones, 1, np.array([rotation("x", 1.1), rotation("y", -2.0)]))
    turned = np.all(channels == channels[:, 1:2], axis=(0, 2, 3))
    fast = sf._two_class_block(data, block, channels[:, 1], turned)
    slow = sf._general_block(mesh, data, block, channels)
    for name in ("area", "stretch", "fold"):
        assert np.allclose(fast[name], slow[name], atol=1e-9), name
