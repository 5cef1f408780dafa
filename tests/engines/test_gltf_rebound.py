# SPDX-License-Identifier: GPL-3.0-or-later
"""A skinned glTF that Blender's importer re-skins into its own bind pose (``skin_into_bind_pose``)
is still compared with the engine: the audit pairs Blender's vertices with the file's rows by the
importer's order, and three.js r187 running the file agrees with Blender's evaluated mesh under
that pairing.

The file (tests/engines/rebound.py) moves Blender's rest positions far from POSITION (its joints
hang under a rotated, 0.01-scaled Armature node), skips rows and lists rows out of order in five
primitives (triangle lists, a strip, a fan), and holds its joints away from the bind pose.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.engines.gltf_audit import gltf_from_blender, imported_layout
from skin_audit.core.engines.gltf_path import gltf_engine_positions
from skin_audit.core.engines.targets import THREEJS
from skin_audit.core.gltf.document import load_gltf
from skin_audit.core.gltf.skin import skinned_primitives
from tests.hostile.conftest import run_main, strict_report

from .conftest import run_node
from .rebound import rebound_character, shared_mesh

pytestmark = pytest.mark.blender

#: Blender and three.js both store float32; measured 4.6e-7 of the mesh size on this file.
MATCH_RELATIVE = 1e-5
#: The clip's middle key (1 s of 2) at Blender's 24 fps: a key on both sides (three.js loops at the end).
FRAME, TIME = 24, 1.0


def _blender_world(bpy, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Blender's import of ``path`` at FRAME: (rest positions, evaluated world positions), glTF axes."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=str(path))
    bpy.context.scene.frame_set(FRAME)
    obj = bpy.data.objects["Body"]
    rest = np.array([v.co[:] for v in obj.data.vertices])
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mw = np.array(ev.matrix_world)
    co = np.array([v.co[:] for v in ev.data.vertices])
    world = co @ mw[:3, :3].T + mw[:3, 3]
    return gltf_from_blender(rest), gltf_from_blender(world)


def test_rebound_mesh_is_compared_and_three_js_agrees(bpy, empty_scene, tmp_path, engines_dir):
    path = rebound_character(tmp_path)
    doc = load_gltf(path)
    prims = skinned_primitives(doc)
    layout = imported_layout(doc, 0)
    assert [len(lp.rows) for lp in layout] == [32, 40, 24, 16, 9]  # used rows only
    stored = np.concatenate([p.positions[lp.rows] for p, lp in zip(prims, layout, strict=True)])
    rest, blender = _blender_world(bpy, path)
    size = float(np.ptp(stored, axis=0).max())
    # Not vacuous: Blender's rest positions are far from POSITION (the old pairing refused this mesh).
    assert float(np.abs(rest - stored).max()) > 10 * size
    # three.js running the file, paired by the importer's order, against Blender's evaluated mesh.
    drawn = run_node(engines_dir, "threejs_positions.mjs", str(path), "--times", str(TIME))
    three = np.concatenate([np.asarray(m["positions"][0])[lp.rows]
                            for m, lp in zip(drawn["meshes"], layout, strict=True)])
    assert float(np.abs(three - blender).max()) / size < MATCH_RELATIVE
    ours = np.concatenate([e.positions[lp.rows]
                           for e, lp in zip(gltf_engine_positions(doc, THREEJS, None, TIME), layout, strict=True)])
    np.testing.assert_allclose(ours, three, rtol=0, atol=MATCH_RELATIVE * size)
    # The audit makes that comparison: no gltf-not-compared, a divergence at the float32 level.
    out = tmp_path / "report.json"
    code, _stdout, stderr = run_main("audit", path, "--frame", str(FRAME), "--json", out, "--no-shape-checks",
                                     "--fail-on", "never")
    assert code == 0, stderr[-3000:]
    (mesh,) = strict_report(out)["files"][0]["meshes"]
    assert "gltf-not-compared" not in {f["code"] for f in mesh["findings"]}
    assert mesh["metrics"]["engine_divergence_by_pose"].keys() == {"current"}
    worst = mesh["metrics"]["max_engine_divergence"]
    assert worst is not None and worst / size < MATCH_RELATIVE
    # Same distance as three.js against Blender, to float32 rounding.
    assert abs(worst - float(np.linalg.norm(three - blender, axis=1).max())) < MATCH_RELATIVE * size


def test_one_mesh_drawn_by_two_skins_pairs_each_object_with_its_node(bpy, empty_scene, tmp_path):
    """Same faces on both objects: the vertex groups (the skin's joints as the importer names them)
    pick the node, so neither object is compared with the other node's drawing (3.2 away)."""
    path = shared_mesh(tmp_path)
    out = tmp_path / "report.json"
    code, _stdout, stderr = run_main("audit", path, "--json", out, "--no-shape-checks", "--fail-on", "never")
    assert code == 0, stderr[-3000:]
    meshes = strict_report(out)["files"][0]["meshes"]
    assert len(meshes) == 2
    for mesh in meshes:
        codes = {f["code"] for f in mesh["findings"]}
        assert not codes & {"gltf-not-compared", "engine-divergence"}, (mesh["object"], codes)
        assert mesh["metrics"]["max_engine_divergence"] < 1e-6
