# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit report as one self-contained HTML page (inline CSS and SVG, no
script, no network, no external file): a lead opens it from a CI artifact.

The page has the run's verdict and summary, one section per file and mesh,
every finding with its explanation and what to do, and, where the caller
hands over the mesh, a picture of where the problem is (``picture``: the mesh
drawn from arrays, coloured by the finding's per-vertex values).

The report dict carries no geometry; pass ``pictures`` keyed by
``(file path, mesh object)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..codes import CODES
from ..findings import SEVERITY_RANK
from .code_help import help_for
from .junit import fail_rank
from .picture import (
    CODE_MEASURE,
    MeshPicture,
    base_svg,
    cluster_triangles,
    heatmap_svg,
    ramp_colours,
    svg_number,
    values_from_measures,
    vertices_of,
)
from .units import Unit, all_findings, units

__all__ = [
    "CODE_LEGEND", "CODE_MEASURE", "CSP", "MeshPicture", "base_svg", "cluster_triangles", "heatmap_svg",
    "html_page", "ramp_colours", "timeline_svg", "values_from_measures", "vertices_of",
]

#: What a picture's values are, by finding code (the legend's words).
CODE_LEGEND: dict[str, str] = {c: e.legend for c, e in CODES.items() if e.legend}
#: Nothing but the page's own inline style may load (no script, image, font or request).
CSP = "default-src 'none'; style-src 'unsafe-inline'"
#: Findings listed with their vertex indices show at most this many.
VERTICES_SHOWN = 40


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
        return f"{svg_number(4 + (w - 8) * (f - lo) / span)},{svg_number(h - 14 - (h - 22) * v / top)}"

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
        frames = tl.get("frame", ())
        series = (("smallest singular value", tl.get("sigma_min", ()), "#c0392b"),
                  ("determinant", tl.get("det_min", ()), "#2471a3"),
                  ("engine divergence / size", tl.get("engine_divergence_max", ()), "#7d3c98"),
                  ("clip divergence / size", tl.get("clip_divergence_max", ()), "#1e8449"))
        # (a report written before a series existed has none, and the clip's is measured for glTF
        # files only: left out then)
        kept = tuple(t for t in series if len(t[1]) == len(frames)
                     and (t[0] != "clip divergence / size" or any(v is not None for v in t[1])))
        out.append(timeline_svg(frames, kept))
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
