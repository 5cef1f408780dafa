# SPDX-License-Identifier: GPL-3.0-or-later
"""Compressed glTF files through the command line (real bpy): a Draco file, written by Blender's
own exporter with Draco on, is imported by Blender (its wheel ships the Draco decoder) and that
import is audited, with one INFO per mesh saying which comparison is skipped and why; a file that
requires meshopt, which Blender's importer refuses, is an input error saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import run_main, strict_report

pytestmark = pytest.mark.blender


@pytest.fixture
def draco_file(bpy, empty_scene, tmp_path) -> Path:
    from tests.factories.blender_rigs import chain_rig

    _mesh, arm = chain_rig("Tube")
    arm.pose.bones["Child"].rotation_mode = "XYZ"
    arm.pose.bones["Child"].rotation_euler = (0.5, 0.0, 0.0)
    path = tmp_path / "draco.glb"
    bpy.ops.export_scene.gltf(filepath=str(path), export_draco_mesh_compression_enable=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def test_draco_file_is_audited_as_blender_imports_it(bpy, draco_file, tmp_path):
    raw = draco_file.read_bytes()
    if b"KHR_draco_mesh_compression" not in raw[: 20 + int.from_bytes(raw[12:16], "little")]:
        pytest.skip(f"Blender {bpy.app.version_string}'s glTF exporter wrote no Draco data (no Draco library)")
    out = tmp_path / "report.json"
    code, _stdout, stderr = run_main("audit", draco_file, "--json", out, "--no-shape-checks", "--fail-on", "never")
    assert code == 0, stderr[-3000:]
    (entry,) = strict_report(out)["files"]
    assert entry["status"] == "ok"
    (mesh,) = entry["meshes"]
    # Blender's side is audited: the recomputation compared every vertex with Blender's mesh.
    assert mesh["metrics"]["vertices_compared"] == 40 and mesh["metrics"]["max_numpy_vs_blender"] < 1e-5
    (skipped,) = [f for f in mesh["findings"] if f["code"] == "gltf-not-compared"]
    assert skipped["severity"] == "INFO"
    assert "requires KHR_draco_mesh_compression" in skipped["message"]
    assert "does not decode" in skipped["message"] and "file's own checks" in skipped["message"]
    # No engine number pretends to describe the file.
    assert mesh["metrics"]["max_engine_divergence"] is None and mesh["metrics"]["engine_divergence_by_pose"] == {}
    assert "engine-divergence" not in {f["code"] for f in mesh["findings"]}


def test_meshopt_file_is_refused_saying_blender_cannot_decode_it(bpy, tmp_path):
    from tests.engines.rebound import rebound_character

    path = rebound_character(tmp_path, animated=False)
    doc = json.loads(path.read_text())
    doc["extensionsUsed"] = doc["extensionsRequired"] = ["EXT_meshopt_compression"]
    path.write_text(json.dumps(doc))
    out = tmp_path / "report.json"
    code, stdout, _stderr = run_main("audit", path, "--json", out, "--fail-on", "never")
    (entry,) = json.loads(out.read_text())["files"]
    if code == 0 and entry["status"] == "ok":
        pytest.skip(f"Blender {bpy.app.version_string}'s glTF importer decodes EXT_meshopt_compression")
    assert code == 2
    assert entry["status"] == "error"
    assert "requires EXT_meshopt_compression, which Blender's glTF importer does not decode" in entry["message"]
    assert "EXT_meshopt_compression" in stdout
