# SPDX-License-Identifier: GPL-3.0-or-later
"""The twist experiment's wireframe figure as SVG, through a real camera pipeline.

Points go look-at -> orthographic clip -> homogeneous divide -> viewport, so
the picture is drawn from the deformed vertices themselves, not a sketch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError, MeshError, NonFinitePointError, ShapeError
from ..maths.influences import as_points

EDGE_COLOUR = "#3c3c3c"
HIGHLIGHT_COLOUR = "#f28e2b"
AXIS_COLOUR = "#4e79a7"
TITLE_BAND = 28.0  # px above each panel's drawing area
CAPTION_BAND = 24.0  # px below the panels when a caption is given
MARGIN = 0.08  # fraction of the view-space extent added on each side


def _vec3(v: ArrayLike, name: str) -> NDArray[np.float64]:
    a = np.asarray(v, dtype=np.float64)
    if a.shape != (3,):
        raise ShapeError(f"{name}: expected shape (3,), got {a.shape}")
    if not np.isfinite(a).all():
        raise NonFinitePointError(f"{name}: {a.tolist()} is not finite")
    return a


def look_at(eye: ArrayLike, target: ArrayLike, up: ArrayLike) -> NDArray[np.float64]:
    """Right-handed view matrix: eye to the origin, looking down -Z, ``up`` towards +Y.

    Parameters
    ----------
    eye, target, up : (3,) float64

    Returns
    -------
    (4, 4) float64
        Acts on column vectors ``[x, y, z, 1]``.
    """
    e, t, u = _vec3(eye, "eye"), _vec3(target, "target"), _vec3(up, "up")
    f = t - e
    s = np.cross(f, u)
    if np.linalg.norm(f) == 0.0 or np.linalg.norm(s) <= 1e-12 * np.linalg.norm(f) * np.linalg.norm(u):
        raise InputError("look_at: eye equals target, or up is parallel to the view direction")
    f /= np.linalg.norm(f)
    s /= np.linalg.norm(s)
    u2 = np.cross(s, f)  # re-orthogonalised up, already unit length
    view = np.eye(4)
    view[:3, :3] = np.stack([s, u2, -f])
    view[:3, 3] = -view[:3, :3] @ e
    return view


def orthographic(
    left: float, right: float, bottom: float, top: float, near: float, far: float
) -> NDArray[np.float64]:
    """OpenGL-style orthographic clip matrix: the view box to the cube [-1, 1]^3.

    ``near`` and ``far`` are distances along -Z (z_view = -near maps to -1).

    Returns
    -------
    (4, 4) float64
    """
    if right == left or top == bottom or far == near:
        raise InputError(f"orthographic: empty box {(left, right, bottom, top, near, far)}")
    return np.array(
        [
            [2.0 / (right - left), 0.0, 0.0, -(right + left) / (right - left)],
            [0.0, 2.0 / (top - bottom), 0.0, -(top + bottom) / (top - bottom)],
            [0.0, 0.0, -2.0 / (far - near), -(far + near) / (far - near)],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def project(
    points: ArrayLike, view: ArrayLike, proj: ArrayLike, width: float, height: float
) -> NDArray[np.float64]:
    """Pixel coordinates of points, SVG convention (origin top-left, y down).

    Parameters
    ----------
    points : (N, 3) float64
    view, proj : (4, 4) float64
    width, height : float
        Viewport size in pixels.

    Returns
    -------
    (N, 2) float64
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ShapeError(f"points: expected shape (N, 3), got {p.shape}")
    v, c = np.asarray(view, dtype=np.float64), np.asarray(proj, dtype=np.float64)
    if v.shape != (4, 4) or c.shape != (4, 4):
        raise ShapeError(f"view, proj: expected shape (4, 4), got {v.shape} and {c.shape}")
    homo = np.column_stack([p, np.ones(len(p))])
    # ij,nj->ni: the combined clip matrix applied to each homogeneous column vector.
    clip = np.einsum("ij,nj->ni", c @ v, homo)
    ndc = clip[:, :2] / clip[:, 3:4]  # w is 1 for orthographic, but divide as the pipeline says
    return np.column_stack([(ndc[:, 0] + 1.0) * 0.5 * width, (1.0 - ndc[:, 1]) * 0.5 * height])


@dataclass(frozen=True)
class Panel:
    """One pose: title, mesh wireframe, highlighted edges and a dashed axis segment.

    vertices : (V, 3) float64; edges : (E, 2) intp; highlight : (E,) bool;
    axis : ((3,), (3,)) float64, the segment's two ends.
    """

    title: str
    vertices: NDArray[np.float64]
    edges: NDArray[np.intp]
    highlight: NDArray[np.bool_]
    axis: tuple[NDArray[np.float64], NDArray[np.float64]]

    def __post_init__(self) -> None:
        # Convert and check once here so render_svg can trust every panel.
        v = as_points(self.vertices, f"panel {self.title!r} vertices")
        e = np.asarray(self.edges)
        if e.ndim != 2 or e.shape[1] != 2:
            raise ShapeError(f"panel {self.title!r} edges: expected shape (E, 2), got {e.shape}")
        if e.size and (e.min() < 0 or e.max() >= len(v)):
            raise MeshError(f"panel {self.title!r}: edge index outside 0..{len(v) - 1}")
        h = np.asarray(self.highlight, dtype=np.bool_)
        if h.shape != (len(e),):
            raise ShapeError(f"panel {self.title!r} highlight: expected shape ({len(e)},), got {h.shape}")
        axis = (_vec3(self.axis[0], "axis start"), _vec3(self.axis[1], "axis end"))
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "edges", e.astype(np.intp))
        object.__setattr__(self, "highlight", h)
        object.__setattr__(self, "axis", axis)


def _f(x: float) -> str:
    return f"{round(float(x), 2) + 0.0:.2f}"  # + 0.0 turns -0.00 into 0.00 for stable output


def _line(a: NDArray[np.float64], b: NDArray[np.float64], extra: str = "") -> str:
    return f'<line x1="{_f(a[0])}" y1="{_f(a[1])}" x2="{_f(b[0])}" y2="{_f(b[1])}"{extra}/>'


def render_svg(
    panels: Sequence[Panel],
    *,
    panel_size: tuple[float, float] = (320, 360),
    eye_direction: tuple[float, float, float] = (3.0, -4.0, 2.0),
    title: str = "",
) -> str:
    """Side-by-side wireframe panels seen through one shared orthographic camera.

    Parameters
    ----------
    panels : sequence of Panel
    panel_size : (width, height) in px per panel, title band included.
    eye_direction : (3,) float64
        From the scene centre towards the eye; +Z is up, so it must not be vertical.
    title : str
        Optional caption line under the panels.

    Returns
    -------
    str
        A standalone SVG document.
    """
    if not panels:
        raise InputError("render_svg: no panels to draw")
    pw, ph = float(panel_size[0]), float(panel_size[1])
    dh = ph - TITLE_BAND
    if pw <= 0 or dh <= 0:
        raise InputError(f"render_svg: panel_size {tuple(panel_size)} leaves no room under the title band")
    allp = np.concatenate([np.vstack([p.vertices, *p.axis]) for p in panels])
    centre = 0.5 * (allp.min(axis=0) + allp.max(axis=0))
    radius = max(float(np.linalg.norm(allp - centre, axis=1).max()), 1e-9)
    d = _vec3(eye_direction, "eye_direction")
    view = look_at(centre + 3.0 * radius * d / np.linalg.norm(d), centre, (0.0, 0.0, 1.0))
    # One box from all panels' view-space extent keeps poses at the same scale.
    vs = allp @ view[:3, :3].T + view[:3, 3]
    lo, hi = vs.min(axis=0), vs.max(axis=0)
    half = 0.5 * (hi - lo) * (1.0 + 2.0 * MARGIN) + 1e-9
    hx, hy = max(half[0], half[1] * pw / dh), max(half[1], half[0] * dh / pw)  # match panel aspect
    cx, cy = 0.5 * (lo[:2] + hi[:2])
    proj = orthographic(cx - hx, cx + hx, cy - hy, cy + hy, -hi[2] - radius, -lo[2] + radius)
    total_h = ph + (CAPTION_BAND if title else 0.0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(pw * len(panels))}" height="{_f(total_h)}" '
        f'viewBox="0 0 {_f(pw * len(panels))} {_f(total_h)}">',
        '<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>',
    ]
    for k, p in enumerate(panels):
        px = project(np.vstack([p.vertices, *p.axis]), view, proj, pw, dh) + [k * pw, TITLE_BAND]
        a, b = px[p.edges[:, 0]], px[p.edges[:, 1]]
        out.append(f'<g class="panel" data-index="{k}">')
        out.append(
            f'<text x="{_f(k * pw + pw / 2)}" y="{_f(TITLE_BAND * 0.7)}" text-anchor="middle" '
            f'font-family="sans-serif" font-size="15">{escape(p.title)}</text>'
        )
        # Highlighted edges after the plain ones so the mid ring is drawn on top.
        for cls, colour, w, keep in (
            ("edges", EDGE_COLOUR, 0.6, ~p.highlight),
            ("highlight", HIGHLIGHT_COLOUR, 2.2, p.highlight),
        ):
            out.append(f'<g class="{cls}" stroke="{colour}" stroke-width="{w}" stroke-linecap="round">')
            out += [_line(a[i], b[i]) for i in np.flatnonzero(keep)]
            out.append("</g>")
        dash = f' class="axis" stroke="{AXIS_COLOUR}" stroke-width="1.2" stroke-dasharray="6 4"'
        out += [_line(px[-2], px[-1], dash), "</g>"]
    if title:
        out.append(
            f'<text x="{_f(pw * len(panels) / 2)}" y="{_f(ph + CAPTION_BAND * 0.7)}" text-anchor="middle" '
            f'font-family="sans-serif" font-size="13">{escape(title)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
