# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit report as one self-contained HTML page (inline CSS and SVG, no
script, no network, no external file): a lead opens it from a CI artifact.

The page has the run's verdict and summary, one section per file and mesh,
every finding with its explanation and what to do, and, where the caller
hands over the mesh, a picture of where the problem is: the mesh drawn by us
from arrays (orthographic camera from the front and from the back, triangles
sorted back to front, flat-lit) coloured by the finding's per-vertex values
with Blender's weight-paint ramp, blue low to red high.

The report dict carries no geometry; pass ``pictures`` keyed by
``(file path, mesh object)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import MeshError, ShapeError
from ..findings import SEVERITY_RANK
from ..twist.figure import look_at
from .code_help import help_for
from .junit import fail_rank
from .units import Unit, all_findings, units

F64 = NDArray[np.float64]

#: Finding code -> the MeshAudit.measures entry that paints it (red high).  A code
#: not listed, or whose measure is missing, is painted by its vertex list instead.
CODE_MEASURE: dict[str, str] = {
    "too-many-influences": "influences",
    "skinning-mismatch": "numpy_vs_blender",
    "bind-pose-drift": "bind_drift",
    "engine-divergence": "engine_divergence",
    "twist-collapse": "collapse",
    "volume-loss": "volume_loss",
    "weight-asymmetry": "asymmetry",
    "stray-weights": "stray",
    "surface-area-collapse": "surface_area_loss",
    "surface-stretch": "surface_stretch",
}
#: What a picture's values are, by finding code (the legend's words).
CODE_LEGEND: dict[str, str] = {
    "too-many-influences": "deform weights on the vertex",
    "skinning-mismatch": "distance between Blender and the recomputation",
    "bind-pose-drift": "displacement at the bind pose",
    "engine-divergence": "distance between the engine and Blender",
    "twist-collapse": "collapse: 1 - smallest singular value",
    "volume-loss": "volume lost: 1 - determinant",
    "weight-asymmetry": "weight difference to the mirror vertex",
    "stray-weights": "how far the weight strays",
    "surface-area-collapse": "area lost: 1 - area ratio of the worst triangle at the vertex",
    "surface-stretch": "stretch - 1 of the worst triangle at the vertex",
    "weights-not-normalized": "|sum of deform weights - 1|",
    "unweighted-vertices": "|sum of deform weights - 1|",
}
#: Blender's weight-paint ramp: 0 blue, 0.25 cyan, 0.5 green, 0.75 yellow, 1 red.
RAMP = np.array([[0, 0, 255], [0, 255, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0]], dtype=np.float64)
NAN_COLOUR = np.array([150.0, 150.0, 150.0])
#: Camera directions (scene centre -> eye), +Z up: Blender's front is -Y.
VIEWS: tuple[tuple[str, tuple[float, float, float]], ...] = (
    ("front", (0.35, -1.0, 0.3)),
    ("back", (-0.35, 1.0, 0.3)),
)
#: Triangles drawn per view at most; more are merged by vertex clustering.  An SVG
#: triangle costs about 30 bytes, so 2000 keeps a whole picture near 130 kB for two views.
MAX_TRIANGLES = 2000
#: Nothing but the page's own inline style may load (no script, image, font or request).
CSP = "default-src 'none'; style-src 'unsafe-inline'"
#: Findings listed with their vertex indices show at most this many.
VERTICES_SHOWN = 40


@dataclass(frozen=True)
class MeshPicture:
    """What the page needs to draw one mesh.

    positions : (V, 3) float64, world space (how the viewport shows it; +Z up);
    triangles : (T, 3) intp, vertex indices (Blender's loop triangles);
    values : finding code -> (V,) float64, higher = worse (``values_from_measures``);
    edges : (E, 2) intp, drawn as a wireframe only when there are no triangles;
    finding_vertices : (code, message) -> (N,) intp, every vertex of that finding
        (``vertices_of``); without it a picture shows the vertices the report lists.
    """

    positions: F64
    triangles: NDArray[np.intp]
    values: Mapping[str, F64] = field(default_factory=dict)
    edges: NDArray[np.intp] = field(default_factory=lambda: np.zeros((0, 2), dtype=np.intp))
    #: (code, message) of a finding -> all its vertex indices (the report lists at most 1000).
    finding_vertices: Mapping[tuple[str, str], NDArray[np.intp]] = field(default_factory=dict)
    _clustered: dict[int, tuple[F64, NDArray[np.intp], NDArray[np.intp]]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _drawings: dict[tuple[int, tuple[int, int]], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        p = np.asarray(self.positions, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 3:
            raise ShapeError(f"MeshPicture positions: expected shape (V, 3), got {p.shape}")
        if not np.isfinite(p).all():
            raise MeshError("MeshPicture positions: not finite; pass the rest positions the audit checked")
        arrays = {}
        for name, width in (("triangles", 3), ("edges", 2)):
            a = np.asarray(getattr(self, name))
            a = a.reshape(0, width) if a.size == 0 else a
            if a.ndim != 2 or a.shape[1] != width:
                raise ShapeError(f"MeshPicture {name}: expected shape (N, {width}), got {a.shape}")
            if a.size and (a.min() < 0 or a.max() >= len(p)):
                raise MeshError(f"MeshPicture {name}: index outside 0..{len(p) - 1}")
            arrays[name] = a.astype(np.intp)
        values = {}
        for code, v in self.values.items():
            v = np.asarray(v, dtype=np.float64)
            if v.shape != (len(p),):
                raise ShapeError(f"MeshPicture values[{code!r}]: expected shape ({len(p)},), got {v.shape}")
            values[code] = v
        object.__setattr__(self, "positions", p)
        object.__setattr__(self, "triangles", arrays["triangles"])
        object.__setattr__(self, "edges", arrays["edges"])
        object.__setattr__(self, "values", values)
        listed = {}
        for key, idx in self.finding_vertices.items():
            a = np.asarray(idx, dtype=np.intp).reshape(-1)
            if a.size and (a.min() < 0 or a.max() >= len(p)):
                raise MeshError(f"MeshPicture finding_vertices[{key!r}]: index outside 0..{len(p) - 1}")
            listed[key] = a
        object.__setattr__(self, "finding_vertices", listed)


def vertices_of(findings: Sequence[Any]) -> dict[tuple[str, str], NDArray[np.intp]]:
    """``MeshPicture.finding_vertices`` from ``Finding`` objects (every vertex, not the report's first 1000)."""
    return {(str(f.code), str(f.message)): np.asarray(f.vertices, dtype=np.intp) for f in findings}


def values_from_measures(measures: Mapping[str, ArrayLike]) -> dict[str, F64]:
    """Per-code heatmap values from a ``MeshAudit.measures`` dict.

    weights-not-normalized and unweighted-vertices are painted by how far the
    weight sum is from 1; the others through ``CODE_MEASURE``.
    """
    out: dict[str, F64] = {}
    for code, name in CODE_MEASURE.items():
        if name in measures:
            out[code] = np.asarray(measures[name], dtype=np.float64)
    if "weight_sum" in measures:
        off = np.abs(np.asarray(measures["weight_sum"], dtype=np.float64) - 1.0)
        out["weights-not-normalized"] = off
        out["unweighted-vertices"] = off
    return out


def ramp_colours(t: ArrayLike) -> F64:
    """(N,) values in [0, 1] (NaN allowed) -> (N, 3) RGB 0..255 on the weight-paint ramp."""
    a = np.asarray(t, dtype=np.float64)
    bad = ~np.isfinite(a)
    x = np.clip(np.where(bad, 0.0, a), 0.0, 1.0) * (len(RAMP) - 1)
    i = np.minimum(x.astype(np.intp), len(RAMP) - 2)
    f = (x - i)[:, None]
    rgb: F64 = RAMP[i] * (1.0 - f) + RAMP[i + 1] * f
    rgb[bad] = NAN_COLOUR
    return rgb


def cluster_mesh(positions: F64, triangles: NDArray[np.intp],
                 max_triangles: int) -> tuple[F64, NDArray[np.intp], NDArray[np.intp]]:
    """Fewer triangles by vertex clustering (Rossignac and Borrel 1993).

    Vertices are snapped to a grid over the bounding box and merged per cell
    (mean position); triangles whose corners fall in fewer than three cells
    vanish.  The grid is coarsened until at most ``max_triangles`` remain.

    Returns
    -------
    positions : (V', 3) float64, triangles : (T', 3) intp,
    cell : (V,) intp, the merged vertex of each input vertex (identity when nothing is merged).
    """
    if len(triangles) <= max_triangles:
        return positions, triangles, np.arange(len(positions), dtype=np.intp)
    lo, hi = positions.min(axis=0), positions.max(axis=0)
    extent = np.maximum(hi - lo, 1e-12 * max(float((hi - lo).max()), 1e-12))
    cells = max(int(np.sqrt(max_triangles / 2.0)), 2)
    while True:
        grid = np.minimum(((positions - lo) / extent * cells).astype(np.int64), cells - 1)
        key = (grid[:, 0] * (cells + 1) + grid[:, 1]) * (cells + 1) + grid[:, 2]
        uniq, cell = np.unique(key, return_inverse=True)
        tri = cell[triangles]
        keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
        tri = np.unique(np.sort(tri[keep], axis=1), axis=0) if keep.any() else tri[keep]
        if len(tri) <= max_triangles or cells <= 2:
            break
        cells = max(int(cells * 0.8), 2)
    # Sorting the corners lost each triangle's winding; the renderer lights both sides alike.
    count = np.bincount(cell, minlength=len(uniq)).astype(np.float64)
    pos = np.stack([np.bincount(cell, positions[:, k], len(uniq)) for k in range(3)], axis=1) / count[:, None]
    return pos, tri.astype(np.intp), cell.astype(np.intp)


def cluster_values(values: F64, cell: NDArray[np.intp], count: int) -> F64:
    """(V,) values -> (count,) the largest per merged vertex, so a hot spot survives; NaN if none is finite."""
    val = np.full(count, -np.inf)
    np.maximum.at(val, cell, np.where(np.isfinite(values), values, -np.inf))
    val[np.isneginf(val)] = np.nan
    return val


def cluster_triangles(positions: F64, triangles: NDArray[np.intp], values: F64,
                      max_triangles: int) -> tuple[F64, NDArray[np.intp], F64]:
    """``cluster_mesh`` and ``cluster_values`` in one call: (V', 3), (T', 3), (V',)."""
    if len(triangles) <= max_triangles:
        return positions, triangles, values
    pos, tri, cell = cluster_mesh(positions, triangles, max_triangles)
    return pos, tri, cluster_values(values, cell, len(pos))


def _mean_finite(a: F64) -> F64:
    """Row means over finite entries; NaN where a row has none."""
    ok = np.isfinite(a)
    n = ok.sum(axis=1)
    return np.where(n > 0, np.where(ok, a, 0.0).sum(axis=1) / np.maximum(n, 1), np.nan)


def _view_basis(direction: Sequence[float]) -> F64:
    """(3, 3) rows: screen right, screen up, towards the eye (orthonormal, +Z up).

    The twist figure's camera: its look-at rotation from ``direction`` towards the origin.
    """
    view: F64 = look_at(direction, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))[:3, :3]
    return view


def _num(x: float) -> str:
    return f"{round(float(x), 1) + 0.0:g}"


def _tenth(v: int) -> str:
    """An integer count of tenths as the shortest SVG number ('-1.5', '.3', '12')."""
    sign, v = ("-", -v) if v < 0 else ("", v)
    whole, frac = divmod(v, 10)
    return f"{sign}{whole if whole or not frac else ''}{'.' + str(frac) if frac else ''}" if v else "0"


def _pair(x: int, y: int) -> str:
    # SVG needs no space before a minus sign.
    return f"{_tenth(x)}{'' if y < 0 else ' '}{_tenth(y)}"


def _hex(rgb: F64) -> list[str]:
    # 4 bits a channel ('#f80'): smaller files, and neighbouring triangles share colours.
    c = np.clip(np.rint(np.asarray(rgb) / 17.0), 0, 15).astype(np.int64)
    return [f"#{r:x}{g:x}{b:x}" for r, g, b in c.tolist()]


def _t_values(values: F64) -> F64:
    """Values scaled to [0, 1] from their finite minimum to maximum; NaN stays NaN."""
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    span = hi - lo
    # A flat field is shown at the top of the ramp when it is the finding itself (every vertex hit).
    t: F64 = (v - lo) / span if span > 0 else np.where(np.isfinite(v), 1.0 if hi > 0 else 0.0, np.nan)
    return t


@dataclass(frozen=True)
class _View:
    """One camera's drawing of a (possibly clustered) mesh, shared by every picture of it."""

    name: str
    #: (T', 2, ...) per drawn triangle in drawing order: its corners in tenths of a pixel, (3, 2) int64.
    corners: NDArray[np.int64]
    #: (T',) index into the clustered triangles of each drawn triangle, back to front.
    drawn: NDArray[np.intp]
    #: (T',) flat-light factor of each drawn triangle.
    shade: F64
    #: (T', 4) screen bounding box (x0, y0, x1, y1) in tenths of a pixel.
    box: NDArray[np.int64]
    #: (V', 2) screen position of every clustered vertex (px) for wireframes.
    px: F64
    depth: F64
    #: ``_raster``'s pixels, computed when a picture first paints over the shared drawing.
    raster: tuple[NDArray[np.intp], list[NDArray[np.intp]]] | None = None


def _views(picture: MeshPicture, size: tuple[int, int], max_triangles: int) -> tuple[
        F64, NDArray[np.intp], NDArray[np.intp], list[_View]]:
    """The clustered mesh (positions, triangles, cell of each vertex) and its two views, cached."""
    key = (max_triangles, size)
    cached = picture._drawings.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    if max_triangles not in picture._clustered:
        picture._clustered[max_triangles] = cluster_mesh(picture.positions, picture.triangles, max_triangles)
    pos, tri, cell = picture._clustered[max_triangles]
    w, h = size
    centre = 0.5 * (pos.min(axis=0) + pos.max(axis=0)) if len(pos) else np.zeros(3)
    bases = [_view_basis(d) for _, d in VIEWS]
    # One scale for both views so front and back match.
    half = max(max(float(np.abs((pos - centre) @ b[:2].T).max(initial=0.0)) for b in bases), 1e-9)
    scale = 0.46 * min(w, h) / half
    views = []
    for k, ((name, _), basis) in enumerate(zip(VIEWS, bases, strict=True)):
        view = (pos - centre) @ basis.T
        px = np.column_stack([k * w + w / 2 + view[:, 0] * scale, h / 2 - view[:, 1] * scale])
        if len(tri):
            corners = view[tri]
            # Back to front: the farthest (smallest distance towards the eye) first.
            order = np.argsort(corners[:, :, 2].mean(axis=1), kind="stable")
            normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
            length = np.linalg.norm(normal, axis=1)
            facing = np.abs(normal[:, 2]) / np.where(length > 0, length, 1.0)
            p2 = px[tri]
            area = np.abs((p2[:, 1, 0] - p2[:, 0, 0]) * (p2[:, 2, 1] - p2[:, 0, 1])
                          - (p2[:, 2, 0] - p2[:, 0, 0]) * (p2[:, 1, 1] - p2[:, 0, 1]))
            drawn = order[area[order] > 1e-4]
            # Tenths of a pixel: the picture's size is mostly these numbers.
            q = np.rint(p2[drawn] * 10).astype(np.int64)
            box = np.concatenate([q.min(axis=1), q.max(axis=1)], axis=1)
            views.append(_View(name, q, drawn.astype(np.intp), 0.55 + 0.45 * facing[drawn], box, px,
                               view[:, 2]))
        else:
            empty = np.zeros(0, dtype=np.intp)
            views.append(_View(name, np.zeros((0, 3, 2), dtype=np.int64), empty, np.zeros(0),
                               np.zeros((0, 4), dtype=np.int64), px, view[:, 2]))
    result = (pos, tri, cell, views)
    picture._drawings[key] = result
    return result


def _paths(view: _View, rows: NDArray[np.intp], colour: list[str]) -> list[str]:
    """SVG paths for the drawn triangles ``rows`` (in drawing order); runs of one colour share a path."""
    out: list[str] = []
    run: list[str] = []
    rows_list = rows.tolist()
    for n, i in enumerate(rows_list):
        a, b, c = view.corners[i].tolist()
        run.append(f"M{_pair(a[0], a[1])}l{_pair(b[0] - a[0], b[1] - a[1])}l{_pair(c[0] - b[0], c[1] - b[1])}z")
        if n + 1 == len(rows_list) or colour[rows_list[n + 1]] != colour[i]:
            out.append(f'<path d="{"".join(run)}" fill="{colour[i]}" stroke="{colour[i]}"/>')
            run = []
    return out


def _raster(view: _View, width: int, height: int) -> tuple[NDArray[np.intp], list[NDArray[np.intp]]]:
    """The painter's algorithm at pixel centres: (height * width,) the drawn row seen at each pixel
    (-1: background), and each drawn row's covered pixels (flat indices)."""
    owner = np.full(height * width, -1, dtype=np.intp)
    covered: list[NDArray[np.intp]] = []
    corners = view.corners / 10.0
    lo = np.floor(corners.min(axis=1) - 0.5).astype(np.int64)
    hi = np.ceil(corners.max(axis=1) - 0.5).astype(np.int64)
    for i in range(len(corners)):
        x0, y0 = max(int(lo[i, 0]), 0), max(int(lo[i, 1]), 0)
        x1, y1 = min(int(hi[i, 0]), width - 1), min(int(hi[i, 1]), height - 1)
        if x1 < x0 or y1 < y0:
            covered.append(np.zeros(0, dtype=np.intp))
            continue
        xs, ys = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
        (ax, ay), (bx, by), (cx, cy) = corners[i]
        # Edge functions: a pixel centre is inside when all three share the triangle's orientation.
        e0 = (bx - ax) * (ys - ay) - (by - ay) * (xs - ax)
        e1 = (cx - bx) * (ys - by) - (cy - by) * (xs - bx)
        e2 = (ax - cx) * (ys - cy) - (ay - cy) * (xs - cx)
        inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
        idx = ((ys[inside] - 0.5).astype(np.intp) * width + (xs[inside] - 0.5).astype(np.intp))
        owner[idx] = i  # drawn later, seen: back to front
        covered.append(idx)
    return owner, covered


def _over(view: _View, hot: NDArray[np.bool_], width: int, height: int) -> NDArray[np.intp]:
    """Drawn rows to paint over the shared grey drawing: every triangle seen (at a pixel centre) where
    a hot triangle lies, so the coloured pixels are those of drawing every triangle; a hot triangle
    too small to cover a pixel centre is drawn when it is in front at its centre."""
    if view.raster is None:
        object.__setattr__(view, "raster", _raster(view, width, height))
    assert view.raster is not None
    owner, covered = view.raster
    rows = np.flatnonzero(hot)
    if not rows.size:
        return rows
    footprint = np.concatenate([covered[i] for i in rows])
    seen = owner[footprint]
    keep = np.zeros(len(hot), dtype=bool)
    keep[seen[seen >= 0]] = True
    tiny = [i for i in rows.tolist() if not covered[i].size]
    if tiny:
        centre = view.corners[tiny].mean(axis=1) / 10.0
        x = np.clip(centre[:, 0].astype(np.intp), 0, width - 1)
        y = np.clip(centre[:, 1].astype(np.intp), 0, height - 1)
        keep[np.asarray(tiny)[owner[y * width + x] <= np.asarray(tiny)]] = True
    return np.flatnonzero(keep)


def _frame(w: int, h: int, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" aria-label="{escape(label)}" '
            f'width="{w * len(VIEWS)}" height="{h}" viewBox="0 0 {w * len(VIEWS)} {h}">'
            f'<rect width="{w * len(VIEWS)}" height="{h}" fill="#f4f4f4"/>')


def base_svg(picture: MeshPicture, base_id: str, *, size: tuple[int, int] = (300, 340),
             max_triangles: int = MAX_TRIANGLES) -> str:
    """The mesh in neutral grey, one ``<g id="{base_id}-{view}">`` per view, for ``heatmap_svg(base_id=...)``:
    drawn once per mesh and shared by every finding's picture of it through ``<use>``."""
    _, tri, _, views = _views(picture, size, max_triangles)
    out = []
    for k, view in enumerate(views):
        colour = _hex(NAN_COLOUR[None, :] * view.shade[:, None]) if len(view.drawn) else []
        out.append(f'<g id="{escape(base_id)}-{k}">' + "".join(_paths(view, np.arange(len(view.drawn)), colour))
                   + "</g>")
    return "".join(out)


def heatmap_svg(picture: MeshPicture, values: F64, *, size: tuple[int, int] = (300, 340),
                max_triangles: int = MAX_TRIANGLES, label: str = "", hottest_corner: bool = True,
                base_id: str | None = None) -> str:
    """Inline SVG: the mesh from the front and the back, coloured by ``values``.

    Parameters
    ----------
    picture : MeshPicture
    values : (V,) float64
        Higher is worse; scaled from its minimum (blue) to its maximum (red); NaN is grey
        (a vertex the picture is not about).
    size : (width, height) in px of each view.
    max_triangles : drawn per view at most (``cluster_triangles`` beyond).
    label : accessible name of the picture.
    hottest_corner : colour a triangle by its highest corner (default: a problem
        vertex shows in every triangle around it, never averaged away on a
        coarse mesh) rather than the mean of its corners.
    base_id : the id given to ``base_svg`` of this mesh, on the same page: the grey
        triangles are then taken from it (``<use>``) and only the coloured ones, with what
        covers them, are drawn here.
    """
    t = _t_values(values)
    pos, tri, cell, views = _views(picture, size, max_triangles)
    tv = t if pos is picture.positions else cluster_values(t, cell, len(pos))
    w, h = size
    out = [_frame(w, h, label)]
    for k, view in enumerate(views):
        out.append(f'<g class="view" data-view="{view.name}">')
        if len(tri):
            corner = tv[tri[view.drawn]]
            heat = np.where(np.isfinite(corner), corner, -np.inf).max(axis=1) if hottest_corner \
                else _mean_finite(corner)
            heat = np.where(np.isneginf(heat), np.nan, heat)
            colour = _hex(ramp_colours(heat) * view.shade[:, None])
            if base_id is None:
                out += _paths(view, np.arange(len(view.drawn)), colour)
            else:
                out.append(f'<use href="#{escape(base_id)}-{k}"/>')
                out += _paths(view, _over(view, np.isfinite(heat), w * len(VIEWS), h), colour)
        elif len(picture.edges):
            e = picture.edges  # no triangles, so nothing was clustered
            depth = view.depth[e].mean(axis=1)
            colour = _hex(ramp_colours(_mean_finite(tv[e])))
            for i in np.argsort(depth, kind="stable").tolist():
                a, b = view.px[e[i, 0]], view.px[e[i, 1]]
                out.append(f'<line x1="{_num(a[0])}" y1="{_num(a[1])}" x2="{_num(b[0])}" y2="{_num(b[1])}" '
                           f'stroke="{colour[i]}"/>')
        out.append(f'<text x="{k * w + 8}" y="18" class="view-name">{view.name}</text></g>')
    out.append("</svg>")
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f;background:#fff}
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.6em;margin:.4em 0}h2{font-size:1.25em;margin:1.6em 0 .4em;word-break:break-all}
h3{font-size:1.1em;margin:1.2em 0 .3em}h4{font-size:1em;margin:0 0 .3em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top;font-size:.92em}th{background:#f3f3f3}
.verdict{padding:10px 14px;border-radius:6px;font-weight:600;display:inline-block}
.pass{background:#e3f4e1;color:#1b5e20}.fail{background:#fde3e1;color:#8e1b10}
.badge{display:inline-block;min-width:5.5em;text-align:center;border-radius:4px;padding:1px 6px;
font-size:.8em;font-weight:700;color:#fff;margin-right:.4em}
.sev-ERROR{background:#c62828}.sev-WARNING{background:#ef8f00}.sev-INFO{background:#4e79a7}
.finding{border:1px solid #e2e2e2;border-left:5px solid #999;border-radius:6px;padding:10px 14px;margin:10px 0}
.finding.ERROR{border-left-color:#c62828}.finding.WARNING{border-left-color:#ef8f00}
.finding.INFO{border-left-color:#4e79a7}.rule{color:#444}.action{color:#1b5e20}
.muted{color:#666;font-size:.9em}code{font-size:.95em}.vertices{font-family:monospace;font-size:.85em;
word-break:break-all;color:#444}
figure{margin:8px 0}figcaption{font-size:.85em;color:#444}
.legend{display:flex;align-items:center;gap:8px;font-size:.85em;margin-top:4px}
.ramp{width:180px;height:10px;border:1px solid #bbb;
background:linear-gradient(to right,#0000ff,#00ffff,#00ff00,#ffff00,#ff0000)}
svg.heatmap path{stroke-width:.5;stroke-linejoin:round}
svg.heatmap .view-name{font:12px sans-serif;fill:#555}
svg.heatmap line{stroke-width:1.2}
.error-file{background:#fde3e1;padding:8px 12px;border-radius:6px}
details.file>summary{cursor:pointer}details.file>summary h2{display:inline}
details.finding>summary{cursor:pointer;list-style-position:outside}
details.finding .message{display:block;font-weight:400;margin:.3em 0 0}
details.finding>summary code{font-weight:700}
details.metrics>summary{cursor:pointer;color:#444;font-size:.9em}
a.anchor{color:#999;text-decoration:none;margin-left:.3em}
svg.bases{position:absolute;width:0;height:0;overflow:hidden}
"""


#: Units of the numbers in metrics and finding details, by key (distances are in Blender units).
UNITS: dict[str, str] = {
    "max_numpy_vs_blender": "Blender units", "max_bind_drift": "Blender units",
    "max_engine_divergence": "Blender units", "engine_divergence_by_pose": "Blender units",
    "sweep_spot_check_max_difference": "Blender units", "size": "Blender units",
    "max_divergence": "Blender units", "by_pose": "Blender units", "max_drift": "Blender units",
    "worst_head_distance": "Blender units", "gltf_time": "s",
    "degrees": "deg", "angle_degrees": "deg", "worst_angle_degrees": "deg",
    "min_singular_value": "x rest size", "min_volume_ratio": "x rest volume", "collapse_by_bone": "x rest size",
    "worst": "x rest", "dqs_worst": "x rest",
    "max_weight_asymmetry": "weight", "worst_difference": "weight", "max_error": "weight",
    "max_weight_sum_error": "weight", "mirror_matched_fraction": "fraction of vertices",
}
#: Meshes above this many triangles are drawn once in grey and shared by their pictures (``base_svg``).
SHARED_DRAWING = 400
#: Entries of a list or table value shown, the rest counted.
ITEMS_SHOWN = 12


def _fmt(value: object) -> str:
    """A report value as a person reads it: numbers to 4 digits, lists and tables as words, never a repr."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "n/a"
    if isinstance(value, Mapping):
        items = list(value.items())
        more = f"; and {len(items) - ITEMS_SHOWN} more" if len(items) > ITEMS_SHOWN else ""
        return "; ".join(f"{k}: {_fmt(v)}" for k, v in items[:ITEMS_SHOWN]) + more or "none"
    if isinstance(value, list | tuple):
        more = f", and {len(value) - ITEMS_SHOWN} more" if len(value) > ITEMS_SHOWN else ""
        return ", ".join(_fmt(v) for v in value[:ITEMS_SHOWN]) + more or "none"
    return str(value)


def _table(rows: Sequence[Sequence[object]], head: Sequence[str] = ()) -> str:
    out = ["<table>"]
    if head:
        out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{escape(_fmt(c))}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _values_table(items: Sequence[tuple[str, object]], head: tuple[str, str, str]) -> str:
    """Name, value, unit rows."""
    return _table([(k, v, UNITS.get(k, "")) for k, v in items], head)


def _own_vertices(picture: MeshPicture, finding: Mapping[str, Any]) -> NDArray[np.intp]:
    """Every vertex of ``finding``: from the picture when it has them, else the report's listed ones."""
    key = (str(finding.get("code")), str(finding.get("message", "")))
    if key in picture.finding_vertices:
        return picture.finding_vertices[key]
    listed = np.asarray([int(i) for i in finding.get("vertices", ())], dtype=np.intp)
    return listed[(listed >= 0) & (listed < len(picture.positions))]


def _picture(picture: MeshPicture, finding: Mapping[str, Any], base_id: str | None) -> str:
    """The finding's own vertices coloured by its measure (red = worst, the rest of the mesh grey)."""
    code = str(finding.get("code"))
    own = _own_vertices(picture, finding)
    if not own.size:
        return ""
    measure = picture.values.get(code)
    what = CODE_LEGEND.get(code, "value per vertex") if measure is not None else "the vertices of the finding (red)"
    values = np.full(len(picture.positions), np.nan)
    values[own] = measure[own] if measure is not None else 1.0
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    total = int(finding.get("vertices_total", len(own)))
    whose = f"its {len(own)} vertices" + (f" (of {total})" if total > len(own) else "")
    svg = heatmap_svg(picture, values, label=f"{code}: {what} on {whose}, blue low, red high, the rest grey",
                      base_id=base_id)
    unit = UNITS.get(CODE_MEASURE.get(code, ""), "")
    return (f'<figure>{svg}<figcaption><div class="legend"><span>{escape(_fmt(lo))}</span>'
            f'<span class="ramp"></span><span>{escape(_fmt(hi))}{" " + escape(unit) if unit else ""}</span>'
            f"<span>{escape(what)}, on {escape(whose)}; grey: the rest of the mesh</span></div>"
            f"</figcaption></figure>")


def _finding(f: Mapping[str, Any], picture: MeshPicture | None, anchor: str, base_id: str | None) -> str:
    code, sev = str(f.get("code")), str(f.get("severity"))
    h = help_for(code)
    opened = " open" if SEVERITY_RANK.get(sev, 0) >= SEVERITY_RANK["WARNING"] else ""  # INFO starts folded
    out = [f'<details class="finding {escape(sev)}" id="{anchor}" data-code="{escape(code)}"{opened}>',
           f'<summary><span class="badge sev-{escape(sev)}">{escape(sev)}</span><code>{escape(code)}</code> '
           f'{escape(h.title)} <a class="anchor" href="#{anchor}" aria-label="link to this finding">#</a>'
           f'<span class="message">{escape(str(f.get("message", "")))}</span></summary>',
           f'<p class="rule">{escape(h.rule)}</p>']
    if h.action:
        out.append(f'<p class="action">What to do: {escape(h.action)}</p>')
    total = int(f.get("vertices_total", len(f.get("vertices", ()))))
    if total:
        shown = list(f.get("vertices", ()))[:VERTICES_SHOWN]
        more = f" ... ({total - len(shown)} more)" if total > len(shown) else ""
        out.append(f'<div>{total} vertices: <span class="vertices">'
                   f"{escape(', '.join(str(v) for v in shown))}{more}</span></div>")
    for key in ("bones", "groups"):
        if f.get(key):
            out.append(f"<div>{key}: {escape(_fmt(list(f[key])))}</div>")
    if f.get("details"):
        out.append(_values_table(list(f["details"].items()), ("detail", "value", "unit")))
    if picture is not None:
        out.append(_picture(picture, f, base_id))
    out.append("</details>")
    return "".join(out)


def _unit(unit: Unit, picture: MeshPicture | None, anchor: str, base_id: str | None) -> str:
    findings = sorted(unit.findings, key=lambda f: -SEVERITY_RANK.get(str(f.get("severity")), 0))
    if unit.kind == "rig":
        head = (f"{escape(unit.armature)} <span class=\"muted\">rig, deforms "
                f"{escape(', '.join(unit.meshes) or 'no mesh')}</span>")
    else:
        head = (f"{escape(unit.object)} <span class=\"muted\">deformed by {escape(unit.armature)}, "
                f"{escape(_fmt(unit.vertices))} vertices</span>")
    out = [f'<section class="{unit.kind}" id="{anchor}"><h3>{head} <span class="muted">'
           f"{escape(_counts(findings))}</span></h3>"]
    if unit.metrics:
        out.append(f'<details class="metrics"><summary>metrics</summary>'
                   f'{_values_table(list(unit.metrics.items()), ("metric", "value", "unit"))}</details>')
    out += _skeleton_html(unit) + _animation_html(unit)
    if not findings:
        out.append('<p class="muted">No findings.</p>')
    out += [_finding(f, picture, f"{anchor}-f{n}", base_id) for n, f in enumerate(findings)]
    out.append("</section>")
    return "".join(out)


def _skeleton_html(unit: Unit) -> list[str]:
    """A humanoid rig's map (VRM 1.0 bone -> the rig's bone, how found) and rest pose, folded."""
    humanoid = unit.skeleton.get("humanoid", {})
    if not humanoid.get("humanoid"):
        return []
    rows = [(k, v, humanoid.get("how", {}).get(k, "")) for k, v in humanoid.get("bones", {}).items()]
    rows += [(k, "missing", "") for k in humanoid.get("missing", ())]
    out = [f'<details class="skeleton"><summary>humanoid map: {len(humanoid.get("bones", {}))} bones'
           f'{", missing " + escape(", ".join(humanoid["missing"])) if humanoid.get("missing") else ""}</summary>',
           _table(rows, ("humanoid bone (VRM 1.0)", "bone", "found by"))]
    pose = unit.skeleton.get("rest_pose")
    if pose:
        limbs = [(k, *(f"{_fmt(v.get(a))} deg" if a in v else "" for a in ("below_horizontal", "forward",
                                                                         "from_vertical")))
                 for k, v in pose.get("limbs", {}).items()]
        kind = {"t": "T-pose", "a": "A-pose"}.get(pose.get("convention") or "", "neither T- nor A-pose")
        out += [f"<p>Rest pose: {kind}.</p>",
                _table(limbs, ("limb", "below horizontal", "forward", "out from vertical"))]
    out.append("</details>")
    return out


def timeline_svg(frames: Sequence[float], series: Sequence[tuple[str, Sequence[float | None], str]],
                 size: tuple[int, int] = (360, 120)) -> str:
    """A small line plot of per-frame values (None: not measured), one polyline per series, y from 0 to the
    largest value (at least 1)."""
    w, h = size
    values = [v for _, s, _ in series for v in s if v is not None and math.isfinite(v)]
    if not frames or not values:
        return ""
    top = max(1.0, max(values))
    lo, hi = float(min(frames)), float(max(frames))
    span = hi - lo or 1.0

    def xy(f: float, v: float) -> str:
        return f"{_num(4 + (w - 8) * (f - lo) / span)},{_num(h - 14 - (h - 22) * v / top)}"

    lines = []
    for label, s, colour in series:
        points = " ".join(xy(f, v) for f, v in zip(frames, s, strict=True) if v is not None and math.isfinite(v))
        if points:
            lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}">'
                         f"<title>{escape(label)}</title></polyline>")
    legend = " ".join(f'<tspan fill="{c}">{escape(label)}</tspan>' for label, _, c in series)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" class="timeline">'
            f'<rect width="{w}" height="{h}" fill="#fff" stroke="#ccc"/>{"".join(lines)}'
            f'<text x="4" y="{h - 2}" font-size="10">frames {_fmt(lo)}-{_fmt(hi)}; {legend}; 0 to {_fmt(top)}</text>'
            "</svg>")


def _animation_html(unit: Unit) -> list[str]:
    """Per action and mesh of ``audit --animation``: its worst frames and a plot of the timeline."""
    entries = unit.animation.get("actions", ()) if unit.kind == "rig" else ()
    if not entries:
        return []
    out = ['<details class="animation" open><summary>animation: '
           f'{len(entries)} action/mesh timeline(s), {_fmt(unit.animation.get("frames"))} frames</summary>']
    for e in entries:
        tl = e.get("timeline", {})
        worst = e.get("worst_frames", {})
        out.append(f'<div><b>{escape(str(e.get("action")))}</b> on {escape(str(e.get("mesh")))}: '
                   f'{_fmt(e.get("frames"))} frames; worst frames: '
                   + escape("; ".join(f"{k} {', '.join(_fmt(f) for f in v)}" for k, v in worst.items() if v))
                   + "</div>")
        out.append(timeline_svg(tl.get("frame", ()), (
            ("smallest singular value", tl.get("sigma_min", ()), "#c0392b"),
            ("determinant", tl.get("det_min", ()), "#2471a3"),
            ("engine divergence / size", tl.get("engine_divergence_max", ()), "#7d3c98"))))
    out.append("</details>")
    return out


def _counts(findings: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for sev in ("ERROR", "WARNING", "INFO"):
        n = sum(1 for f in findings if f.get("severity") == sev)
        if n:
            parts.append(f"{n} {sev}")
    return ", ".join(parts) or "none"


_SEVERITY_NAME = {rank: name for name, rank in SEVERITY_RANK.items()}


def _worst_rank(findings: Sequence[Mapping[str, Any]]) -> int:
    """The highest severity rank among ``findings`` (-1 for none)."""
    return max((SEVERITY_RANK.get(str(f.get("severity")), 0) for f in findings), default=-1)


def _shares_drawing(picture: MeshPicture | None, findings: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``picture`` is worth drawing once in grey for ``findings``: a large mesh with two
    pictures or more (one picture drawn whole costs what the shared drawing costs)."""
    return (picture is not None and len(picture.triangles) > SHARED_DRAWING
            and sum(bool(_own_vertices(picture, f).size) for f in findings) >= 2)


def html_page(report: Mapping[str, Any], fail_on: str,
              pictures: Mapping[tuple[str, str], MeshPicture] | None = None, title: str = "skin_audit report") -> str:
    """The report as one self-contained HTML document.

    Parameters
    ----------
    report : dict
        The JSON-shaped report (docs/report-format.md), optionally with
        ``config`` (path and ``changes``) added by the CLI.
    fail_on : str
        'error', 'warning', 'info' or 'never': decides the verdict at the top.
    pictures : {(file path, mesh object): MeshPicture}, optional
        Geometry for the heatmap pictures; meshes without one get none.
    """
    pictures = pictures or {}
    rank = fail_rank(fail_on)
    files = list(report.get("files", ()))
    failing = [f for f in all_findings(report)
               if rank is not None and SEVERITY_RANK.get(str(f.get("severity")), 0) >= rank]
    unreadable = [fa for fa in files if fa.get("status", "ok") != "ok"]
    passed = not failing and not unreadable
    verdict = ("PASS: nothing at or above " if passed else "FAIL: ") + (
        f"{len(failing)} finding(s) at or above " if failing else "") + f"--fail-on {fail_on}" + (
        f"; {len(unreadable)} file(s) could not be audited" if unreadable else "")
    tool = report.get("tool", {})
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           # The page loads nothing: a browser blocks (and reports) any attempt.
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>",
           f"<h1>{escape(title)}</h1>",
           f'<p class="verdict {"pass" if passed else "fail"}">{escape(verdict)}</p>',
           f'<p class="muted">skin_audit {escape(str(tool.get("version", report.get("version", ""))))}, '
           f'Blender {escape(str(report.get("blender_version", "")))}; worst finding: '
           f'{escape(_fmt(report.get("summary", {}).get("worst_severity")))}</p>']
    rows = []
    for n, fa in enumerate(files):
        fnd = [f for u in units(fa) for f in u.findings]
        top = _worst_rank(fnd)
        jump = (f' <a href="#file{n}-first">first {escape(_SEVERITY_NAME[top])}</a>'
                if top >= SEVERITY_RANK["WARNING"] else "")
        rows.append(f'<tr><td><a href="#file{n}">{escape(str(fa.get("path", "")))}</a></td>'
                    f'<td>{escape(_fmt(fa.get("status")))}</td><td>{len(fa.get("rigs", ()))}</td>'
                    f'<td>{len(fa.get("meshes", ()))}</td><td>{escape(_counts(fnd))}{jump}</td></tr>')
    out += ["<h2>Files</h2>", '<table class="files"><tr><th>file</th><th>status</th><th>rigs</th><th>meshes</th>'
            "<th>findings</th></tr>" + "".join(rows) + "</table>"]
    if report.get("skeletons"):
        out += ["<h2>Skeletons</h2>", _table(
            [(g.get("skeleton"), g.get("bones"),
              "; ".join(f"{m.get('path')} ({m.get('armature')})" for m in g.get("members", ())),
              g.get("summary") or ("unrelated to skeleton 1" if g.get("related_to_skeleton_1") is False else ""))
             for g in report["skeletons"]], ("skeleton", "deform bones", "rigs", "differs from skeleton 1"))]
    changes = list(report.get("config", {}).get("changes", ()))
    if report.get("config"):
        out.append(f"<h2>Config</h2><p>Read from <code>{escape(str(report['config'].get('path', '')))}</code>; "
                   f"{len(changes)} change(s) (nothing is hidden: every one is listed).</p>")
        if changes:
            out.append(_table([(c.get("action"), c.get("path"), c.get("object"), c.get("code"), c.get("before"),
                                c.get("after"), c.get("reason")) for c in changes],
                              ("action", "file", "object", "code / option", "before", "after", "why")))
    bases: list[str] = []
    for n, fa in enumerate(files):
        path = str(fa.get("path", ""))
        fnd = [f for u in units(fa) for f in u.findings]
        serious = any(SEVERITY_RANK.get(str(f.get("severity")), 0) >= SEVERITY_RANK["WARNING"] for f in fnd)
        opened = " open" if serious or fa.get("status", "ok") != "ok" or len(files) == 1 else ""
        out.append(f'<details class="file" id="file{n}"{opened}><summary><h2>{escape(path)}</h2> '
                   f'<span class="muted">{escape(_counts(fnd))}</span></summary>')
        if fa.get("status", "ok") != "ok":
            out.append(f'<p class="error-file">Could not be audited: {escape(str(fa.get("message", "")))}</p>')
        elif not units(fa):
            out.append('<p class="muted">No skinned mesh.</p>')
        first_done, top = False, _worst_rank(fnd)
        for k, unit in enumerate(units(fa)):
            picture = pictures.get((path, unit.object)) if unit.kind == "mesh" else None
            anchor = f"file{n}-{unit.kind}{k}"
            base_id = None
            if _shares_drawing(picture, unit.findings):
                assert picture is not None
                base_id = f"mesh{n}-{k}"
                bases.append(base_svg(picture, base_id))
            text = _unit(unit, picture, anchor, base_id)
            if not first_done and top >= SEVERITY_RANK["WARNING"] and _worst_rank(unit.findings) == top:
                text = f'<span id="file{n}-first"></span>' + text  # the file table's "first ERROR" link
                first_done = True
            out.append(text)
        out.append("</details>")
    if report.get("options"):
        out += ["<h2>Options</h2>", _values_table(list(report["options"].items()), ("option", "value", "unit"))]
    if bases:
        # Each mesh drawn once in grey; every finding's picture takes it with <use> and paints its own vertices.
        out.append('<svg xmlns="http://www.w3.org/2000/svg" class="bases" width="0" height="0" aria-hidden="true">'
                   f'<defs>{"".join(bases)}</defs></svg>')
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"
