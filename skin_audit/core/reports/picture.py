# SPDX-License-Identifier: GPL-3.0-or-later
"""The report's pictures of a mesh, drawn by us from arrays as inline SVG.

An orthographic camera from the front and from the back, triangles sorted back
to front, flat-lit, coloured by per-vertex values with Blender's weight-paint
ramp, blue low to red high; a large mesh merged by vertex clustering first.  A
mesh shown by several findings is drawn once in grey (``base_svg``) and each
picture paints over it only what its coloured triangles cover (``heatmap_svg``).
The page around the pictures is ``html``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..codes import CODES
from ..errors import MeshError, ShapeError
from ..twist.figure import look_at

F64 = NDArray[np.float64]

#: Finding code -> the MeshAudit.measures entry that paints it (red high), from core/codes.py.  A
#: code not listed, or whose measure is missing, is painted by its vertex list instead.
CODE_MEASURE: dict[str, str] = {c: e.measure for c, e in CODES.items() if e.measure}
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


def svg_number(x: float) -> str:
    """A coordinate in an SVG attribute: to a tenth, shortest form, never '-0'."""
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
                out.append(f'<line x1="{svg_number(a[0])}" y1="{svg_number(a[1])}" '
                           f'x2="{svg_number(b[0])}" y2="{svg_number(b[1])}" stroke="{colour[i]}"/>')
        out.append(f'<text x="{k * w + 8}" y="18" class="view-name">{view.name}</text></g>')
    out.append("</svg>")
    return "".join(out)
