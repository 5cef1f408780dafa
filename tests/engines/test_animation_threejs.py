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


#: three.js draws float32 matrices and positions, Blender float32 meshes: per frame the audit's
#: largest distance matches theirs to this fraction of the mesh size.
CLIP_MATCH = 2e-5


def _clip_truth(bpy, path: Path, action: str, engines_dir: Path) -> tuple[list[float], list[float], list[float], dict]:
    """The audit's clip-divergence timeline of ``action`` beside the truth: three.js playing the file's
    clip at frame / fps against Blender's own evaluated mesh at that frame (the action alone playing),
    per frame the farthest vertex over the mesh size in world space; and the audit's finding on it."""
    from skin_audit.blender.run.audit_files import audit_file, load
    from skin_audit.blender.run.gltf_file import imported_match, scene_fps
    from skin_audit.core.audit.options import AuditOptions
    from skin_audit.core.engines.gltf_audit import gltf_from_blender
    from skin_audit.core.gltf.document import load_gltf

    result = audit_file(path, AuditOptions(shape_checks=False, animation=(action,)))
    assert result.status == "ok", result.message
    (rig,) = result.rigs
    (entry,) = rig.animation["actions"]
    (mesh_audit,) = result.meshes
    frames = entry["timeline"]["frame"]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    load(path)
    obj = bpy.data.objects[mesh_audit.object]
    arm = next(m.object for m in obj.modifiers if m.type == "ARMATURE")
    ad = arm.animation_data
    ad.use_nla = False
    ad.action = bpy.data.actions[action]
    if getattr(ad, "action_slot", 1) is None and ad.action.slots:
        ad.action_slot = ad.action.slots[0]
    scene = bpy.context.scene
    fps = scene_fps(scene)
    doc = load_gltf(path)
    match = imported_match(doc, obj)
    assert match.reliable
    clip = next(k for k, a in enumerate(doc.items("animations")) if a.get("name") == action)
    # The harness's mixer loops the clip, so at exactly its duration it shows the first key again: the
    # last instant is asked for a microsecond before (the audit holds the last key there, as the
    # specification clamps).
    samplers = doc.items("animations")[clip]["samplers"]
    duration = max(float(doc.items("accessors")[s["input"]]["max"][0]) for s in samplers)
    times = [min(f / fps, duration - 1e-6) for f in frames]
    drawn = run_node(engines_dir, "threejs_positions.mjs", str(path), "--clip", str(clip),
                     "--times", ",".join(f"{t:.9g}" for t in times))
    three = {(m["node"], m["primitive"]): m["positions"] for m in drawn["meshes"]}
    scale = abs(float(np.linalg.det(np.array(obj.matrix_world)[:3, :3]))) ** (1 / 3)
    size = mesh_audit.metrics["size"] * scale
    truth = []
    for k, frame in enumerate(frames):
        scene.frame_set(int(math.floor(frame)), subframe=frame - math.floor(frame))
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        co = np.array([v.co for v in ev.data.vertices])
        mw = np.array(ev.matrix_world)
        blender = gltf_from_blender(co @ mw[:3, :3].T + mw[:3, 3])
        far = 0.0
        for p, off, rows in zip(match.primitives, match.offsets, match.rows, strict=True):
            positions = np.asarray(three[(p.node, p.primitive)][k])[rows]
            far = max(far, float(np.linalg.norm(positions - blender[off:off + len(rows)], axis=1).max()))
        truth.append(far / size)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    found = {f.code: f for f in mesh_audit.findings}
    return frames, entry["timeline"]["clip_divergence_max"], truth, found


def test_the_clip_three_js_plays_against_blenders_import_of_a_real_asset(bpy, engines_dir):
    fox = Path(__file__).resolve().parents[1] / "assets/Fox/glTF-Binary/Fox.glb"
    frames, timeline, truth, found = _clip_truth(bpy, fox, "Run", engines_dir)
    np.testing.assert_allclose(timeline, truth, atol=CLIP_MATCH)
    assert max(truth) > 1e-3  # the file's keys fall between Blender's frames: the poses differ there
    worst = found["animation-clip-divergence"]
    assert worst.details["frame"] == frames[int(np.argmax(truth))] and worst.details["target"] == "threejs"


def test_sparse_keys_three_js_slerps_where_blender_lerps_the_components(bpy, tmp_path, engines_dir):
    from tests.engines.rebound import rebound_character

    # Keys at 0, 1 and 2 s turning the spine 40 and 20 degrees: Blender keys frames 0, 24 and 48 and
    # interpolates each quaternion component; three.js slerps.  They meet at the keys and halfway.
    path = rebound_character(tmp_path)
    frames, timeline, truth, found = _clip_truth(bpy, path, "Bend", engines_dir)
    np.testing.assert_allclose(timeline, truth, atol=CLIP_MATCH)
    at = dict(zip(frames, truth, strict=True))
    assert max(truth) > 1e-3
    assert found["animation-clip-divergence"].details["worst_relative"] == pytest.approx(max(truth), abs=CLIP_MATCH)
    for key in (0.0, 12.0, 24.0, 48.0):
        assert at[key] < CLIP_MATCH, key
