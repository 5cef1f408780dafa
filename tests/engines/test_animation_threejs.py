# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit against three.js playing the clip: the twist rig's action exported with
Blender's own glTF exporter, three.js r187 drawing it at the time of every frame, and the mid ring's
radius it draws against the audit's timeline (of the .blend, and of the exported .glb audited as a
file), which is the seed's closed form at the keyed 170 degrees."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.factories.animated_rigs import TWIST_PEAK_DEGREES, TWIST_PEAK_FRAME, save_animated_twist

from .conftest import run_node

pytestmark = pytest.mark.blender
FPS = 24  # Blender's default scene rate: the exporter writes frame f at f / 24 s
#: three.js stores float32 and slerps between the exporter's per-frame samples: at a frame's own time
#: it draws that sample (measured 1e-7 here).
RADIUS_MATCH = 1e-5


def _timeline(bpy, path: Path) -> dict:
    from skin_audit.blender.run.audit_files import audit_file
    from skin_audit.core.audit.options import AuditOptions

    result = audit_file(path, AuditOptions(shape_checks=False, animation=()))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert result.status == "ok", result.message
    (rig,) = result.rigs
    (entry,) = [e for e in rig.animation["actions"] if e["frames"] > 1]
    return entry["timeline"]


def test_three_js_draws_the_mid_ring_the_audit_measures_at_every_frame(bpy, tmp_path, engines_dir):
    blend = save_animated_twist(tmp_path / "twist.blend")
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    glb = tmp_path / "twist.glb"
    bpy.ops.export_scene.gltf(filepath=str(glb), export_format="GLB", export_animations=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    timeline = _timeline(bpy, blend)
    frames = timeline["frame"]
    times = [f / FPS for f in frames]  # the exporter writes frame f at time f / fps
    drawn = run_node(engines_dir, "threejs_positions.mjs", str(glb), "--clip", "0",
                     "--times", ",".join(f"{t:.9g}" for t in times))
    (mesh,) = drawn["meshes"]
    radii = []
    for positions in mesh["positions"]:
        p = np.asarray(positions)  # glTF is Y-up: the cylinder's axis is Y, the mid ring at y = 1
        ring = np.abs(p[:, 1] - 1.0) < 1e-4
        assert ring.sum() == 24
        radii.append(float(np.hypot(p[ring, 0], p[ring, 2]).mean()))
    np.testing.assert_allclose(timeline["sigma_min"], radii, atol=RADIUS_MATCH)
    peak = radii[frames.index(TWIST_PEAK_FRAME)]
    assert peak == pytest.approx(abs(math.cos(math.radians(TWIST_PEAK_DEGREES) / 2)), abs=RADIUS_MATCH)
    # The exported file audited as a file: the imported clip's timeline draws the same.
    imported = _timeline(bpy, glb)
    at = {f: s for f, s in zip(imported["frame"], imported["sigma_min"], strict=True)}
    for f, r in zip(frames, radii, strict=True):
        if f in at:
            assert at[f] == pytest.approx(r, abs=RADIUS_MATCH), f
