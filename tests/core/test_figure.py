# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the camera pipeline and the SVG wireframe figure, against hand-computed truth."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from skin_audit.core.errors import InputError, MeshError, ShapeError
from skin_audit.core.twist.figure import Panel, look_at, orthographic, project, render_svg

SVG = "{http://www.w3.org/2000/svg}"


def cylinder(rings: int = 9, segments: int = 24, radius: float = 1.0, height: float = 2.0):
    """Ring-major open cylinder, two triangles per quad; built here, independent of the project."""
    verts = []
    for i in range(rings):
        z = height * i / (rings - 1)
        for j in range(segments):
            a = 2.0 * np.pi * j / segments
            verts.append((radius * np.cos(a), radius * np.sin(a), z))
    tris = []
    for i in range(rings - 1):
        for j in range(segments):
            a, b = i * segments + j, i * segments + (j + 1) % segments
            tris += [(a, b, b + segments), (a, b + segments, a + segments)]
    edges = sorted({tuple(sorted((t[k], t[(k + 1) % 3]))) for t in tris for k in range(3)})
    return np.array(verts), np.array(edges)


def twist(verts: np.ndarray, degrees: float) -> np.ndarray:
    """Rotate each vertex about z by an angle growing linearly from 0 at z=0 to ``degrees`` at z=2."""
    ang = np.radians(degrees) * verts[:, 2] / 2.0
    c, s = np.cos(ang), np.sin(ang)
    return np.column_stack(
        [c * verts[:, 0] - s * verts[:, 1], s * verts[:, 0] + c * verts[:, 1], verts[:, 2]]
    )


def mid_ring(verts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    z = verts[:, 2]
    return np.isclose(z[edges[:, 0]], 1.0) & np.isclose(z[edges[:, 1]], 1.0)


AXIS = ((0.0, 0.0, -0.2), (0.0, 0.0, 2.2))


def resolved(elem: ET.Element, parents: dict[ET.Element, ET.Element], attr: str) -> str | None:
    """An SVG presentation attribute as inherited from the nearest ancestor that sets it."""
    while elem is not None:
        if attr in elem.attrib:
            return elem.attrib[attr]
        elem = parents.get(elem)
    return None


def test_cylinder_has_600_unique_edges():
    verts, edges = cylinder()
    assert verts.shape == (216, 3) and edges.shape == (600, 2)
    assert mid_ring(verts, edges).sum() == 24


def test_look_at_maps_eye_to_origin_and_target_onto_minus_z():
    eye, target, up = np.array([3.0, -4.0, 2.0]), np.array([0.5, 0.2, 1.0]), np.array([0.0, 0.0, 1.0])
    v = look_at(eye, target, up)
    assert v.shape == (4, 4)
    np.testing.assert_allclose(v @ np.append(eye, 1.0), [0, 0, 0, 1], atol=1e-12)
    dist = np.linalg.norm(target - eye)
    np.testing.assert_allclose(v @ np.append(target, 1.0), [0, 0, -dist, 1], atol=1e-12)
    r = v[:3, :3]
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(r) == pytest.approx(1.0)  # a rotation: right-handed, no mirror
    # World up lands in the upper half of the view (positive y), with no sideways component.
    up_view = r @ up
    assert up_view[1] > 0 and up_view[0] == pytest.approx(0.0, abs=1e-12)


def test_look_at_identity_for_the_default_opengl_camera():
    np.testing.assert_allclose(look_at((0, 0, 0), (0, 0, -1), (0, 1, 0)), np.eye(4), atol=1e-15)


def test_look_at_rejects_degenerate_input():
    with pytest.raises(InputError):
        look_at((0, 0, 0), (0, 0, 0), (0, 0, 1))
    with pytest.raises(InputError):
        look_at((0, 0, 5), (0, 0, 0), (0, 0, 1))
    with pytest.raises(ShapeError, match=r"\(2,\)"):
        look_at((0, 0), (0, 0, 0), (0, 0, 1))


def test_orthographic_maps_box_corners_to_unit_cube():
    left, right, bottom, top, near, far = -3.0, 5.0, -1.0, 2.0, 0.5, 10.0
    m = orthographic(left, right, bottom, top, near, far)
    for x, nx in ((left, -1), (right, 1)):
        for y, ny in ((bottom, -1), (top, 1)):
            for d, nz in ((near, -1), (far, 1)):
                np.testing.assert_allclose(m @ [x, y, -d, 1.0], [nx, ny, nz, 1.0], atol=1e-12)
    with pytest.raises(InputError):
        orthographic(1, 1, 0, 1, 0, 1)


def test_project_by_hand_side_camera():
    # Eye on +x looking at the origin with z up: world +y is screen right, world +z is screen up.
    view = look_at((5, 0, 0), (0, 0, 0), (0, 0, 1))
    proj = orthographic(-2, 2, -2, 2, 1, 10)
    px = project([[0.0, 1.0, 0.5], [0.0, 0.0, 0.0], [3.0, -2.0, 2.0]], view, proj, 100, 100)
    # ndc (0.5, 0.25) -> x = 1.5/2*100, y = (1-0.25)/2*100; origin -> centre; (-2, 2) -> top-left.
    np.testing.assert_allclose(px, [[75.0, 37.5], [50.0, 50.0], [0.0, 0.0]], atol=1e-12)


def test_project_divides_by_w():
    view = np.eye(4)
    proj = orthographic(-2, 2, -1, 1, 0, 10)
    p = [[1.0, 0.5, -5.0]]
    np.testing.assert_allclose(project(p, view, proj, 400, 200), [[300.0, 50.0]], atol=1e-12)
    # Scaling the whole clip matrix scales w too; after the divide nothing may change.
    np.testing.assert_allclose(project(p, view, 2.0 * proj, 400, 200), [[300.0, 50.0]], atol=1e-12)


def test_project_shape_errors_name_the_shape():
    with pytest.raises(ShapeError, match=r"\(4, 2\)"):
        project(np.zeros((4, 2)), np.eye(4), np.eye(4), 10, 10)
    with pytest.raises(ShapeError, match=r"\(3, 3\)"):
        project(np.zeros((4, 3)), np.eye(3), np.eye(4), 10, 10)


def test_panel_validation():
    verts, edges = cylinder()
    with pytest.raises(ShapeError, match=r"\(599,\)"):
        Panel("x", verts, edges, np.zeros(599, bool), AXIS)
    with pytest.raises(MeshError):
        Panel("x", verts[:10], edges, np.zeros(600, bool), AXIS)
    with pytest.raises(ShapeError, match=r"\(216, 2\)"):
        Panel("x", verts[:, :2], edges, np.zeros(600, bool), AXIS)


def two_panels() -> list[Panel]:
    verts, edges = cylinder()
    hl = mid_ring(verts, edges)
    return [
        Panel("LBS 90°", twist(verts, 90.0), edges, hl, AXIS),
        Panel("DQS <90°> & co", twist(verts, 90.0) * [0.9, 0.9, 1.0], edges, hl, AXIS),
    ]


def test_render_svg_structure():
    panels = two_panels()
    svg = render_svg(panels, title="Twist 90°: LBS vs DQS")
    root = ET.fromstring(svg)  # valid XML, including the escaped "<", ">" and "&"
    assert root.tag == f"{SVG}svg"
    assert float(root.attrib["width"]) == 2 * 320
    parents = {c: p for p in root.iter() for c in p}
    groups = root.findall(f"{SVG}g[@class='panel']")
    assert len(groups) == 2
    for k, (g, panel) in enumerate(zip(groups, panels, strict=True)):
        lines = list(g.iter(f"{SVG}line"))
        dashed = [e for e in g.iter() if resolved(e, parents, "stroke-dasharray")]
        edge_lines = [e for e in lines if e not in dashed]
        assert len(edge_lines) == len(panel.edges) == 600
        orange = [e for e in edge_lines if resolved(e, parents, "stroke") == "#f28e2b"]
        assert len(orange) == panel.highlight.sum() == 24
        grey = [e for e in edge_lines if e not in orange]
        assert float(resolved(orange[0], parents, "stroke-width")) > float(
            resolved(grey[0], parents, "stroke-width")
        )
        assert len(dashed) == 1
        texts = [t.text for t in g.iter(f"{SVG}text")]
        assert texts == [panel.title]
        # Every point lies inside its own panel's column.
        xs = [float(e.attrib[a]) for e in lines for a in ("x1", "x2")]
        assert k * 320 <= min(xs) and max(xs) <= (k + 1) * 320
    assert "Twist 90°: LBS vs DQS" in [t.text for t in root.iter(f"{SVG}text")]
    assert root.find(f"{SVG}rect").attrib["fill"] == "#ffffff"


def test_render_svg_is_deterministic_and_camera_is_shared():
    verts, edges = cylinder()
    hl = mid_ring(verts, edges)
    same = [Panel("a", verts, edges, hl, AXIS), Panel("b", verts, edges, hl, AXIS)]
    svg = render_svg(same)
    assert svg == render_svg(same)
    root = ET.fromstring(svg)
    g0, g1 = root.findall(f"{SVG}g[@class='panel']")
    l0, l1 = list(g0.iter(f"{SVG}line")), list(g1.iter(f"{SVG}line"))
    # Identical geometry must draw identically, one panel width apart.
    for a, b in zip(l0, l1, strict=True):
        assert float(b.attrib["x1"]) - float(a.attrib["x1"]) == pytest.approx(320, abs=0.011)
        assert a.attrib["y1"] == b.attrib["y1"] and a.attrib["y2"] == b.attrib["y2"]


def test_vertical_axis_stays_vertical_on_screen():
    # Orthographic with world z as camera up: a z-parallel segment projects to a vertical line.
    verts, edges = cylinder()
    root = ET.fromstring(render_svg([Panel("t", twist(verts, 90.0), edges, mid_ring(verts, edges), AXIS)]))
    (axis,) = [e for e in root.iter(f"{SVG}line") if "stroke-dasharray" in e.attrib]
    assert axis.attrib["x1"] == axis.attrib["x2"]
    assert float(axis.attrib["y1"]) > float(axis.attrib["y2"])  # z = -0.2 is below z = 2.2


def test_uniform_scale_square_stays_square():
    # Seen head-on, a square in the x-z plane must come out square whatever the panel's aspect.
    verts = np.array([[-1, 0, -1], [1, 0, -1], [1, 0, 1], [-1, 0, 1]], dtype=float)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    panel = Panel("sq", verts, edges, np.zeros(4, bool), ((0, 0, -1), (0, 0, 1)))
    for size in ((320, 360), (500, 200)):
        root = ET.fromstring(render_svg([panel], panel_size=size, eye_direction=(0.0, -1.0, 0.0)))
        lines = [e for e in root.iter(f"{SVG}line") if "stroke-dasharray" not in e.attrib]
        xs = [float(e.attrib[a]) for e in lines for a in ("x1", "x2")]
        ys = [float(e.attrib[a]) for e in lines for a in ("y1", "y2")]
        assert max(xs) - min(xs) == pytest.approx(max(ys) - min(ys), abs=0.02)
        assert 0 <= min(xs) and max(xs) <= size[0]


def test_render_svg_rejects_no_panels():
    with pytest.raises(InputError):
        render_svg([])
