# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML page: self-contained, every finding explained, pictures drawn from the
arrays (projection, back-to-front order, colours, clustering) checked by hand."""

from __future__ import annotations

import re
from html import escape
from html.parser import HTMLParser

import numpy as np
import pytest
from report_samples import cylinder, mesh, sample_report

from skin_audit.core.errors import MeshError, ShapeError
from skin_audit.core.reports.code_help import help_for
from skin_audit.core.reports.html import (
    CSP,
    MeshPicture,
    cluster_triangles,
    heatmap_svg,
    html_page,
    ramp_colours,
    values_from_measures,
)
from skin_audit.core.reports.picture import _view_basis

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "track", "wbr"}


class Balance(HTMLParser):
    """Every non-void element closed, in order (SVG's self-closed tags count as closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()


def page(pictures=None, report=None, fail_on="error"):
    text = html_page(report or sample_report(), fail_on, pictures)
    parser = Balance()
    parser.feed(text)
    assert parser.stack == []
    return text, parser.tags


def cylinder_picture():
    pos, tri = cylinder()
    w = pos[:, 2] / 2.0
    # The twist experiment's mid-ring collapse at 180 degrees: 1 - r'/r.
    return MeshPicture(pos, tri, {"twist-collapse": 1.0 - np.sqrt(1.0 - 4.0 * w * (1.0 - w))})


def test_self_contained_and_every_finding_explained():
    text, tags = page({("rigs/cylinder.blend", "Cylinder"): cylinder_picture()})
    assert f'content="{CSP}"' in text
    assert not [t for t, a in tags if t in ("script", "link", "img", "iframe", "object", "embed")]
    assert not [a for _, a in tags if "src" in a]
    # Links only within the page, each to an element that is there.
    ids = {a["id"] for _, a in tags if "id" in a}
    hrefs = [a["href"] for _, a in tags if "href" in a]
    assert hrefs and all(h.startswith("#") and h[1:] in ids for h in hrefs), set(hrefs) - {f"#{i}" for i in ids}
    assert "url(" not in text and "@import" not in text
    assert set(re.findall(r"https?://[^\"' ]+", text)) == {"http://www.w3.org/2000/svg"}  # SVG namespace only
    for f in (f for fa in sample_report()["files"] for m in fa["meshes"] for f in m["findings"]):
        assert escape(f["message"]) in text and escape(help_for(f["code"]).rule) in text
    assert "FAIL: 1 finding(s) at or above --fail-on error; 1 file(s) could not be audited" in text
    assert "missing.glb: no such file or folder" in text and "No findings." in text


def test_pictures_for_findings_with_values_or_vertices_only():
    text, _ = page({("rigs/cylinder.blend", "Cylinder"): cylinder_picture()})
    # Cylinder: twist-collapse (values), unweighted-vertices (vertex list); preserve-volume-on has neither.
    assert text.count('<svg xmlns="http://www.w3.org/2000/svg" class="heatmap"') == 2
    assert "the vertices of the finding (red)" in text and "collapse: 1 - smallest singular value" in text
    assert page()[0].count("<svg") == 0


def test_text_is_escaped():
    report = sample_report()
    report["files"][0]["meshes"] = [mesh("<script>alert(1)</script>", ())]
    text, tags = page(report=report)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "script" not in [t for t, _ in tags]


def test_pass_verdict():
    report = sample_report()
    report["files"] = report["files"][:1]
    report["files"][0]["meshes"] = [mesh("Clean", ())]
    assert "PASS: nothing at or above --fail-on error" in page(report=report)[0]


def test_view_basis_is_right_handed_with_z_up():
    for d in ((0.35, -1.0, 0.3), (-0.35, 1.0, 0.3), (1.0, 0.0, 0.0)):
        b = _view_basis(d)
        np.testing.assert_allclose(b @ b.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(np.cross(b[0], b[1]), b[2], atol=1e-12)
        assert b[1][2] > 0  # screen up leans to +Z
        np.testing.assert_allclose(b[2], np.array(d) / np.linalg.norm(d), atol=1e-12)


def paths(svg: str) -> list[tuple[str, str]]:
    return re.findall(r'<path d="([^"]+)" fill="(#[0-9a-f]{3})"', svg)


def hue(colour: str) -> str:
    r, g, b = (int(ch, 16) for ch in colour[1:])
    return "red" if r > max(g, b) else "blue" if b > max(r, g) else "other"


def test_nearer_triangle_is_drawn_later_and_coloured_by_its_values():
    # Two triangles facing the camera along x (a view direction (1, 0, 0) would need a
    # patched VIEWS; instead place them on the front view's axis): the one nearer the eye is hot.
    d = np.array([0.35, -1.0, 0.3]) / np.linalg.norm([0.35, -1.0, 0.3])
    b = _view_basis(d)
    tri = np.array([[0.0, 0, 0], b[0], b[1]])
    positions = np.vstack([tri - d, tri + d])  # far copy, near copy
    values = np.array([0.0, 0, 0, 1, 1, 1])
    picture = MeshPicture(positions, np.array([[0, 1, 2], [3, 4, 5]]))
    svg = heatmap_svg(picture, values, size=(200, 200))
    front = svg.split('data-view="front"')[1].split("</g>")[0]
    drawn = paths(front)
    assert [c for _, c in drawn] == ["#00f", "#f00"]  # far blue first, near red on top
    back = svg.split('data-view="back"')[1].split("</g>")[0]
    # Seen from behind the order flips (shaded darker: the triangles face the back camera obliquely).
    assert [hue(c) for _, c in paths(back)] == ["red", "blue"]
    # Both copies project to the same place in the front view (the offset is along the view axis).
    assert drawn[0][0] == drawn[1][0]


def test_projection_puts_the_top_up_and_the_mesh_centred():
    pos, tri = cylinder()
    svg = heatmap_svg(MeshPicture(pos, tri), pos[:, 2], size=(300, 340))
    front = svg.split('data-view="front"')[1].split("</g>")[0]
    ys_hot, ys_cold = [], []
    for d, colour in paths(front):
        y = float(re.match(r"M[-\d.]+[ ]?([-\d.]+)", d).group(1))
        (ys_hot if colour.startswith("#f") and colour != "#fff" else ys_cold).append(y)
    assert np.mean(ys_hot) < np.mean(ys_cold)  # z high (red) drawn above z low
    xs = [float(m) for m in re.findall(r"M([-\d.]+)", front)]
    assert 0 < min(xs) and max(xs) < 300 and abs((min(xs) + max(xs)) / 2 - 150) < 15


def test_ramp_is_blenders_weight_colours():
    np.testing.assert_array_equal(ramp_colours([0.0, 0.25, 0.5, 0.75, 1.0, np.nan]),
                                  [[0, 0, 255], [0, 255, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0],
                                   [150, 150, 150]])


def test_clustering_bounds_the_triangles_and_keeps_the_hot_spot():
    pos, tri = cylinder(rings=65, segments=96)  # 12288 triangles
    values = np.zeros(len(pos))
    values[4000] = 7.0
    p2, t2, v2 = cluster_triangles(pos, tri, values, 1500)
    assert 100 < len(t2) <= 1500 and np.nanmax(v2) == 7.0
    assert (p2.min(axis=0) >= pos.min(axis=0) - 1e-12).all() and (p2.max(axis=0) <= pos.max(axis=0) + 1e-12).all()
    assert (t2[:, 0] != t2[:, 1]).all() and (t2[:, 1] != t2[:, 2]).all()
    same = cluster_triangles(pos, tri, values, len(tri))
    assert same[1] is tri


def test_measures_map_to_codes():
    m = {"weight_sum": np.array([1.0, 0.0, 1.2]), "collapse": np.array([0.1, 0.9, 0.0]), "other": np.zeros(3)}
    v = values_from_measures(m)
    assert set(v) == {"twist-collapse", "weights-not-normalized", "unweighted-vertices"}
    np.testing.assert_allclose(v["weights-not-normalized"], [0.0, 1.0, 0.2])


def test_picture_input_is_checked():
    pos, tri = cylinder()
    with pytest.raises(ShapeError, match=r"positions: expected shape \(V, 3\)"):
        MeshPicture(pos[:, :2], tri)
    with pytest.raises(MeshError, match="triangles: index outside"):
        MeshPicture(pos, tri + len(pos))
    with pytest.raises(ShapeError, match=r"values\['twist-collapse'\]"):
        MeshPicture(pos, tri, {"twist-collapse": np.zeros(3)})
    bad = pos.copy()
    bad[0, 0] = np.nan
    with pytest.raises(MeshError, match="not finite"):
        MeshPicture(bad, tri)


def test_wireframe_when_only_edges():
    pos, tri = cylinder()
    edges = np.unique(np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1), axis=0)
    svg = heatmap_svg(MeshPicture(pos, np.zeros((0, 3), dtype=np.intp), edges=edges), pos[:, 2])
    assert svg.count("<line") == 2 * len(edges) and "<path" not in svg


def test_ids_are_unique():
    text, tags = page({("rigs/cylinder.blend", "Cylinder"): cylinder_picture()})
    ids = [a["id"] for _, a in tags if "id" in a]
    assert len(ids) == len(set(ids))


def test_one_clustering_per_mesh_serves_every_finding():
    pos, tri = cylinder(rings=65, segments=96)
    picture = MeshPicture(pos, tri)
    first = heatmap_svg(picture, pos[:, 2], max_triangles=1500)
    assert list(picture._clustered) == [1500]
    # Same mesh, values reversed: the same triangles are drawn, in other colours.
    second = heatmap_svg(picture, -pos[:, 2], max_triangles=1500)
    def triangles(svg: str) -> list[str]:
        return sorted(t for d, _ in paths(svg) for t in d.split("M") if t)

    assert triangles(first) and triangles(first) == triangles(second)
    assert [c for _, c in paths(first)] != [c for _, c in paths(second)]


GREY = {"#999", "#888", "#777", "#666", "#555", "#aaa"}


def hot_triangles(svg: str) -> int:
    """Triangles drawn in a colour of the ramp (not the grey of the rest of the mesh)."""
    return sum(d.count("M") for d, colour in paths(svg) if colour not in GREY)


def test_each_picture_paints_its_own_vertices_and_the_rest_grey():
    """Two findings of one code on one mesh (bind-pose drift at rest, and with the pose cleared) get
    two pictures, each lighting the triangles touching its own vertices: counted independently
    from the triangle list (no clustering below 3000 triangles)."""
    from skin_audit.core.findings import Finding

    pos, tri = cylinder()
    drift = np.abs(pos[:, 2] - 1.0)  # one measure shared by both findings
    bottom, top = tuple(range(0, 24)), tuple(range(24 * 8, 24 * 9))
    rest = Finding("bind-pose-drift", "ERROR", "at rest, 24 vertices move", 24, bottom)
    cleared = Finding("bind-pose-drift", "ERROR", "with the pose cleared, 24 vertices move", 24, top)
    report = sample_report()
    report["files"] = report["files"][:1]
    report["files"][0]["meshes"] = [mesh("Cylinder", (rest, cleared))]
    picture = MeshPicture(pos, tri, {"bind-pose-drift": drift})
    text, _ = page({("rigs/cylinder.blend", "Cylinder"): picture}, report)
    pictures = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap".*?</svg>', text)
    assert len(pictures) == 2 and pictures[0] != pictures[1]
    for svg, own in zip(pictures, (bottom, top), strict=True):
        touching = int(np.isin(tri, own).any(axis=1).sum())
        assert hot_triangles(svg) == 2 * touching  # front and back view
    # Drawn alone (no shared grey drawing), the same values light the same triangles.
    values = np.full(len(pos), np.nan)
    values[list(bottom)] = drift[list(bottom)]
    assert hot_triangles(heatmap_svg(picture, values)) == 2 * int(np.isin(tri, bottom).any(axis=1).sum())


def test_unnormalised_picture_does_not_light_the_unweighted_vertices():
    from skin_audit.core.findings import Finding

    pos, tri = cylinder()
    weight_sum = np.ones(len(pos))
    weight_sum[:24] = 0.0  # unweighted bottom ring: |sum - 1| = 1, the largest
    weight_sum[100:110] = 0.9
    unnormalised = Finding("weights-not-normalized", "WARNING", "10 vertices", 10, tuple(range(100, 110)))
    unweighted = Finding("unweighted-vertices", "ERROR", "24 vertices", 24, tuple(range(24)))
    report = sample_report()
    report["files"] = report["files"][:1]
    report["files"][0]["meshes"] = [mesh("Cylinder", (unweighted, unnormalised))]
    picture = MeshPicture(pos, tri, values_from_measures({"weight_sum": weight_sum}))
    text, _ = page({("rigs/cylinder.blend", "Cylinder"): picture}, report)
    section = text.split('data-code="weights-not-normalized"')[1]
    svg = re.search(r'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap".*?</svg>', section).group(0)
    assert hot_triangles(svg) == 2 * int(np.isin(tri, range(100, 110)).any(axis=1).sum())


def test_every_vertex_of_a_finding_is_painted_not_only_the_listed_thousand():
    from skin_audit.core.findings import Finding
    from skin_audit.core.reports.html import vertices_of

    pos, tri = cylinder(rings=46, segments=24)  # 1104 vertices
    tri = tri[:1900]  # below MAX_TRIANGLES: drawn as is, so the painted triangles can be counted
    every_vertex = tuple(range(len(pos)))
    big = Finding("unweighted-vertices", "ERROR", f"{len(pos)} vertices", len(pos), every_vertex)
    report = sample_report()
    report["files"] = report["files"][:1]
    report["files"][0]["meshes"] = [mesh("Cylinder", (big,), vertices=len(pos))]
    assert len(report["files"][0]["meshes"][0]["findings"][0]["vertices"]) == 1000
    key = ("rigs/cylinder.blend", "Cylinder")
    listed_only = page({key: MeshPicture(pos, tri)}, report)[0]
    every = page({key: MeshPicture(pos, tri, finding_vertices=vertices_of([big]))}, report)[0]
    assert hot_triangles(listed_only) == 2 * int(np.isin(tri, range(1000)).any(axis=1).sum())
    assert hot_triangles(every) == 2 * len(tri)
    assert f"its {len(pos)} vertices" in every and f"its 1000 vertices (of {len(pos)})" in listed_only


def test_values_read_as_words_with_units():
    text, _ = page()
    body = re.sub(r"<style>.*?</style>", "", text, flags=re.S)
    assert "{'" not in body and "['" not in body and "True" not in body
    assert "Bone.001: 6.1e-17" in body  # collapse_by_bone, a table as words
    assert "<td>max_bind_drift</td><td>0</td><td>Blender units</td>" in body


def test_files_fold_and_link_to_their_first_warning():
    text, tags = page()
    files = [a for t, a in tags if t == "details" and a.get("class") == "file"]
    assert [f["id"] for f in files] == ["file0", "file1", "file2"]
    assert all("open" in f for f in files)  # each has a WARNING or ERROR, or could not be read
    # The first finding of the file's worst severity: the Cylinder's unweighted vertices, after the rig's WARNING.
    assert '<a href="#file0-first">first ERROR</a>' in text
    assert text.index('id="file0-first"') > text.index("multiple-root-bones")
    assert text.index('id="file0-first"') < text.index('data-code="unweighted-vertices"')
    assert '<a href="#file1-first">first WARNING</a>' in text
    folded = [a for t, a in tags if t == "details" and "finding" in a.get("class", "") and "open" not in a]
    assert [a["data-code"] for a in folded] == ["preserve-volume-on"]  # INFO starts folded
