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
#: polygon costs about 60 bytes, so 3000 keeps a picture near 350 kB for two views.
MAX_TRIANGLES = 3000
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
    edges : (E, 2) intp, drawn as a wireframe only when there are no triangles.
    """

    positions: F64
    triangles: NDArray[np.intp]
    values: Mapping[str, F64] = field(default_factory=dict)
    edges: NDArray[np.intp] = field(default_factory=lambda: np.zeros((0, 2), dtype=np.intp))
    _clustered: dict[int, tuple[F64, NDArray[np.intp], NDArray[np.intp]]] = field(
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


def heatmap_svg(picture: MeshPicture, values: F64, *, size: tuple[int, int] = (300, 340),
                max_triangles: int = MAX_TRIANGLES, label: str = "", hottest_corner: bool = True) -> str:
    """Inline SVG: the mesh from the front and the back, coloured by ``values``.

    Parameters
    ----------
    picture : MeshPicture
    values : (V,) float64
        Higher is worse; scaled from its minimum (blue) to its maximum (red).
    size : (width, height) in px of each view.
    max_triangles : drawn per view at most (``cluster_triangles`` beyond).
    label : accessible name of the picture.
    hottest_corner : colour a triangle by its highest corner (default: a problem
        vertex shows in every triangle around it, never averaged away on a
        coarse mesh) rather than the mean of its corners.
    """
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    span = hi - lo
    # A flat field is shown at the top of the ramp when it is the finding itself (every vertex hit).
    t = (v - lo) / span if span > 0 else np.where(np.isfinite(v), 1.0 if hi > 0 else 0.0, np.nan)
    # One clustering per mesh and size, shared by every finding's picture of it.
    if max_triangles not in picture._clustered:
        picture._clustered[max_triangles] = cluster_mesh(picture.positions, picture.triangles, max_triangles)
    pos, tri, cell = picture._clustered[max_triangles]
    tv = t if pos is picture.positions else cluster_values(t, cell, len(pos))
    w, h = size
    centre = 0.5 * (pos.min(axis=0) + pos.max(axis=0)) if len(pos) else np.zeros(3)
    bases = [_view_basis(d) for _, d in VIEWS]
    # One scale for both views so front and back match.
    half = max(max(float(np.abs((pos - centre) @ b[:2].T).max(initial=0.0)) for b in bases), 1e-9)
    scale = 0.46 * min(w, h) / half
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" aria-label="{escape(label)}" '
           f'width="{w * len(VIEWS)}" height="{h}" viewBox="0 0 {w * len(VIEWS)} {h}">',
           f'<rect width="{w * len(VIEWS)}" height="{h}" fill="#f4f4f4"/>']
    for k, ((name, _), basis) in enumerate(zip(VIEWS, bases, strict=True)):
        view = (pos - centre) @ basis.T
        px = np.column_stack([k * w + w / 2 + view[:, 0] * scale, h / 2 - view[:, 1] * scale])
        out.append(f'<g class="view" data-view="{name}">')
        if len(tri):
            corners = view[tri]
            # Back to front: the farthest (smallest distance towards the eye) first.
            order = np.argsort(corners[:, :, 2].mean(axis=1), kind="stable")
            normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
            length = np.linalg.norm(normal, axis=1)
            facing = np.abs(normal[:, 2]) / np.where(length > 0, length, 1.0)
            shade = 0.55 + 0.45 * facing  # two-sided: open meshes show their inside
            corner = tv[tri]
            heat = np.where(np.isfinite(corner), corner, -np.inf).max(axis=1) if hottest_corner \
                else _mean_finite(corner)
            colour = _hex(ramp_colours(np.where(np.isneginf(heat), np.nan, heat)) * shade[:, None])
            p2 = px[tri]
            area = np.abs((p2[:, 1, 0] - p2[:, 0, 0]) * (p2[:, 2, 1] - p2[:, 0, 1])
                          - (p2[:, 2, 0] - p2[:, 0, 0]) * (p2[:, 1, 1] - p2[:, 0, 1]))
            # Tenths of a pixel, corners after the first relative: the picture's size is
            # mostly these numbers.  Runs of one colour in drawing order share a path.
            q = np.rint(p2 * 10).astype(np.int64)
            run: list[str] = []
            drawn = order[area[order] > 1e-4].tolist()
            for n, i in enumerate(drawn):
                a, b, c = q[i].tolist()
                run.append(f"M{_pair(a[0], a[1])}l{_pair(b[0] - a[0], b[1] - a[1])}"
                           f"l{_pair(c[0] - b[0], c[1] - b[1])}z")
                if n + 1 == len(drawn) or colour[drawn[n + 1]] != colour[i]:
                    out.append(f'<path d="{"".join(run)}" fill="{colour[i]}" stroke="{colour[i]}"/>')
                    run = []
        elif len(picture.edges):
            e = picture.edges  # no triangles, so nothing was clustered
            depth = view[e].mean(axis=1)[:, 2]
            colour = _hex(ramp_colours(_mean_finite(tv[e])))
            for i in np.argsort(depth, kind="stable").tolist():
                a, b = px[e[i, 0]], px[e[i, 1]]
                out.append(f'<line x1="{_num(a[0])}" y1="{_num(a[1])}" x2="{_num(b[0])}" y2="{_num(b[1])}" '
                           f'stroke="{colour[i]}"/>')
        out.append(f'<text x="{k * w + 8}" y="18" class="view-name">{name}</text></g>')
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
"""


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "n/a"
    return str(value)


def _table(rows: Sequence[Sequence[object]], head: Sequence[str] = ()) -> str:
    out = ["<table>"]
    if head:
        out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{escape(_fmt(c))}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _picture(picture: MeshPicture, finding: Mapping[str, Any]) -> str:
    code = str(finding.get("code"))
    values = picture.values.get(code)
    what = CODE_LEGEND.get(code, "value per vertex")
    if values is None:
        listed = [int(i) for i in finding.get("vertices", ()) if 0 <= int(i) < len(picture.positions)]
        if not listed:
            return ""
        values = np.zeros(len(picture.positions))
        values[listed] = 1.0
        what = "affected vertices (red)"
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    svg = heatmap_svg(picture, values, label=f"{code}: {what} on the mesh, blue low, red high")
    return (f'<figure>{svg}<figcaption><div class="legend"><span>{escape(_fmt(lo))}</span>'
            f'<span class="ramp"></span><span>{escape(_fmt(hi))}</span><span>{escape(what)}</span></div>'
            f"</figcaption></figure>")


def _finding(f: Mapping[str, Any], picture: MeshPicture | None) -> str:
    code, sev = str(f.get("code")), str(f.get("severity"))
    h = help_for(code)
    out = [f'<div class="finding {escape(sev)}" data-code="{escape(code)}">',
           f'<h4><span class="badge sev-{escape(sev)}">{escape(sev)}</span><code>{escape(code)}</code> '
           f"{escape(h.title)}</h4>",
           f"<p>{escape(str(f.get('message', '')))}</p>",
           f'<p class="rule">{escape(h.rule)}</p>']
    if h.action:
        out.append(f'<p class="action">What to do: {escape(h.action)}</p>')
    total = int(f.get("vertices_total", len(f.get("vertices", ()))))
    facts = []
    if total:
        shown = list(f.get("vertices", ()))[:VERTICES_SHOWN]
        more = f" ... ({total - len(shown)} more)" if total > len(shown) else ""
        facts.append(f'<div>{total} vertices: <span class="vertices">'
                     f"{escape(', '.join(str(v) for v in shown))}{more}</span></div>")
    for key in ("bones", "groups"):
        if f.get(key):
            facts.append(f"<div>{key}: {escape(', '.join(str(b) for b in f[key]))}</div>")
    if f.get("details"):
        facts.append(_table([(k, v) for k, v in f["details"].items()]))
    out += facts
    if picture is not None:
        out.append(_picture(picture, f))
    out.append("</div>")
    return "".join(out)


def _unit(unit: Unit, picture: MeshPicture | None) -> str:
    findings = sorted(unit.findings, key=lambda f: -SEVERITY_RANK.get(str(f.get("severity")), 0))
    metrics = [(k, v) for k, v in unit.metrics.items() if not isinstance(v, dict | list)]
    if unit.kind == "rig":
        head = (f"{escape(unit.armature)} <span class=\"muted\">rig, deforms "
                f"{escape(', '.join(unit.meshes) or 'no mesh')}</span>")
    else:
        head = (f"{escape(unit.object)} <span class=\"muted\">deformed by {escape(unit.armature)}, "
                f"{escape(_fmt(unit.vertices))} vertices</span>")
    out = [f'<section class="{unit.kind}"><h3>{head}</h3>']
    if metrics:
        out.append(_table(metrics, ("metric", "value")))
    if not findings:
        out.append('<p class="muted">No findings.</p>')
    out += [_finding(f, picture) for f in findings]
    out.append("</section>")
    return "".join(out)


def _counts(findings: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for sev in ("ERROR", "WARNING", "INFO"):
        n = sum(1 for f in findings if f.get("severity") == sev)
        if n:
            parts.append(f"{n} {sev}")
    return ", ".join(parts) or "none"


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
    for fa in files:
        fnd = [f for u in units(fa) for f in u.findings]
        rows.append((fa.get("path"), fa.get("status"), len(fa.get("rigs", ())), len(fa.get("meshes", ())),
                     _counts(fnd)))
    out += ["<h2>Files</h2>", _table(rows, ("file", "status", "rigs", "meshes", "findings"))]
    changes = list(report.get("config", {}).get("changes", ()))
    if report.get("config"):
        out.append(f"<h2>Config</h2><p>Read from <code>{escape(str(report['config'].get('path', '')))}</code>; "
                   f"{len(changes)} change(s) (nothing is hidden: every one is listed).</p>")
        if changes:
            out.append(_table([(c.get("action"), c.get("path"), c.get("object"), c.get("code"), c.get("before"),
                                c.get("after"), c.get("reason")) for c in changes],
                              ("action", "file", "object", "code / option", "before", "after", "why")))
    for fa in files:
        path = str(fa.get("path", ""))
        out.append(f'<section class="file"><h2>{escape(path)}</h2>')
        if fa.get("status", "ok") != "ok":
            out.append(f'<p class="error-file">Could not be audited: {escape(str(fa.get("message", "")))}</p>')
        elif not units(fa):
            out.append('<p class="muted">No skinned mesh.</p>')
        for unit in units(fa):
            picture = pictures.get((path, unit.object)) if unit.kind == "mesh" else None
            out.append(_unit(unit, picture))
        out.append("</section>")
    if report.get("options"):
        out += ["<h2>Options</h2>", _table(list(report["options"].items()), ("option", "value"))]
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"
