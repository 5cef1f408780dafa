# SPDX-License-Identifier: GPL-3.0-or-later
"""The twist experiment's files: JSON scene, CSV of ring radii, SVG figure,
and the human summary.  Inputs are plain data; no Blender here."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding
from .checks import BindCheck, PoseCheck
from .cylinder import unique_edges
from .figure import Panel, render_svg
from .seed import SeedFigures

F64 = NDArray[np.float64]

SCENE_FORMAT = "skin_audit.twist_scene"
SCENE_VERSION = 1
SCENE_FILE = "twist_scene.json"
RADII_FILE = "twist_radii.csv"
FIGURE_FILE = "twist_wireframe.svg"


@dataclass(frozen=True)
class ScenePose:
    method: str
    angle_deg: float
    current: F64  # (J, 4, 4)
    skin: F64  # (J, 4, 4)
    numpy_positions: F64  # (V, 3)
    blender_positions: F64  # (V, 3)


@dataclass(frozen=True)
class Scene:
    """What the JSON scene holds: enough to recompute every output vertex."""

    tool_version: str
    blender_version: str
    mesh_object: str
    armature_object: str
    bone_names: tuple[str, ...]
    parents: tuple[int, ...]
    bind_vertices: F64
    triangles: NDArray[np.intp]
    ring_of: NDArray[np.intp]
    indices: NDArray[np.intp]
    weights: F64
    bind: F64
    bind_inverse: F64
    poses: tuple[ScenePose, ...]


def scene_json(scene: Scene) -> dict[str, Any]:
    """The scene as JSON-ready data (float64 values written with full precision)."""
    return {
        "format": SCENE_FORMAT,
        "format_version": SCENE_VERSION,
        "tool": {"name": "skin_audit", "version": scene.tool_version},
        "blender_version": scene.blender_version,
        "conventions": "world space, right-handed, column vectors p' = M p, radians; "
                       "C_j = G_j B_j^-1; blender_positions are Blender's float32 output",
        "tolerances": {"float64": tolerances.CLOSED_FORM_FLOAT64,
                       "float32_relative": tolerances.FLOAT32_RELATIVE},
        "mesh": {
            "object": scene.mesh_object,
            "bind_vertices": scene.bind_vertices.tolist(),
            "triangles": scene.triangles.tolist(),
            "ring_of_vertex": scene.ring_of.tolist(),
        },
        "armature": {
            "object": scene.armature_object,
            "bones": list(scene.bone_names),
            "parents": list(scene.parents),
            "bind_matrices": scene.bind.tolist(),
            "inverse_bind_matrices": scene.bind_inverse.tolist(),
        },
        "influences": {"joint_indices": scene.indices.tolist(), "weights": scene.weights.tolist()},
        "poses": [
            {
                "method": p.method,
                "angle_deg": p.angle_deg,
                "current_world_matrices": p.current.tolist(),
                "skinning_matrices": p.skin.tolist(),
                "numpy_positions": p.numpy_positions.tolist(),
                "blender_positions": p.blender_positions.tolist(),
            }
            for p in scene.poses
        ],
    }


RADII_COLUMNS = ("method", "angle_deg", "ring", "z", "child_weight", "analytic_ratio",
                 "numpy_ratio", "numpy_error", "blender_ratio", "blender_error")


def radii_csv(checks: Sequence[PoseCheck]) -> str:
    """Every ring at every pose: measured numpy and Blender radius ratios, analytic, errors."""
    buf = io.StringIO()
    buf.write(",".join(RADII_COLUMNS) + "\n")
    for c in checks:
        for r in c.rings:
            buf.write(f"{r.method},{r.angle_deg:g},{r.ring},{r.z:.17g},{r.child_weight:.17g},"
                      f"{r.analytic:.17g},{r.numpy:.17g},{r.numpy_error:.3e},"
                      f"{r.blender:.17g},{r.blender_error:.3e}\n")
    return buf.getvalue()


def wireframe_svg(scene: Scene, mid_ring: int) -> str:
    """One wireframe panel per pose, drawn from Blender's output vertices."""
    edges = unique_edges(scene.triangles)
    on_mid = (scene.ring_of[edges[:, 0]] == mid_ring) & (scene.ring_of[edges[:, 1]] == mid_ring)
    lo, hi = scene.bind_vertices.min(axis=0), scene.bind_vertices.max(axis=0)
    axis = (np.array([0.0, 0.0, lo[2] - 0.2]), np.array([0.0, 0.0, hi[2] + 0.2]))
    panels = [
        Panel(f"{p.method.upper()} {p.angle_deg:g}\N{DEGREE SIGN}", p.blender_positions, edges, on_mid, axis)
        for p in scene.poses
    ]
    return render_svg(panels, title="Twisted cylinder: Blender's Armature modifier (mid ring orange)")


def twist_summary_text(
    binds: Sequence[BindCheck], checks: Sequence[PoseCheck], findings: Sequence[Finding],
    seed: SeedFigures | None = None,
) -> str:
    """The human summary: bind drift, the radius table and the verdict."""
    lines = ["Twist experiment: two-bone cylinder, 9 rings x 24 vertices", ""]
    for b in binds:
        lines.append(f"bind-pose drift {b.method.upper()}: numpy {b.numpy_drift:.3g}, "
                     f"Blender {b.blender_drift:.3g}")
    header = ("method", "angle", "mid r'/r analytic", "numpy", "Blender", "|np-Bl| max", "ring err np",
              "ring err Bl", "degenerate")
    row = "{:<6} {:>6} {:>18} {:>22} {:>14} {:>11} {:>11} {:>11} {:>10}"
    lines += ["", row.format(*header)]
    for c in checks:
        lines.append(row.format(
            c.method.upper(), f"{c.angle_deg:g}", f"{c.mid_ring_analytic:.15g}", f"{c.mid_ring_numpy:.15g}",
            f"{c.mid_ring_blender:.8g}", f"{c.numpy_vs_blender:.3g}", f"{c.ring_error_numpy:.2g}",
            f"{c.ring_error_blender:.2g}", str(c.degenerate_blender),
        ))
    if seed is not None:
        lines += ["", "Seed reproduction (pure float64 numpy, no Blender):",
                  f"  bind drift {seed.bind_drift:.3g}; mid-ring radius at "
                  + ", ".join(f"{a:g} deg = {r:.15g}" for a, r in zip(seed.angles_deg, seed.mid_ring_radius,
                                                                       strict=True)),
                  f"  {seed.ring_count} ring radii vs formula: max error {seed.ring_radius_max_error:.3g}; "
                  f"heights {seed.height_max_error:.3g}",
                  f"  {seed.position_count} positions vs closed form: "
                  f"max error {seed.position_max_error:.3g}; "
                  f"end rings vs quaternion rotation {seed.end_ring_vs_quaternion:.3g}"]
    lines += ["", "Verdict:"]
    if not findings:
        lines.append("  no findings")
    for f in findings:
        lines.append(f"  [{f.severity}] {f.code}: {f.message}")
    return "\n".join(lines) + "\n"
