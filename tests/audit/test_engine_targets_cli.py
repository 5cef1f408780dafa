# SPDX-License-Identifier: GPL-3.0-or-later
"""``audit --target/--frame/--clip`` through the command line (in this process, real bpy).

The .blend rig is built in code: one vertex with six influences on six separate bones, each
bone moved along X by its index, so every target's position is a hand sum:

    weights 0.3 0.2 0.15 0.15 0.1 0.1 on bones translated by 0 1 2 3 4 5 along X
    Blender (normalises, all six):            1.85
    raw (4 largest, not renormalised):        0.95  (and the vertex scaled by 0.8: it sits at 0)
    threejs, gltf (exporter: 4 largest, renormalised by 0.8): 0.95 / 0.8 = 1.1875
    unreal (8 largest, renormalised) reads what the exporter wrote: 1.1875 too

A .blend reaches every target but ``raw`` through Blender's glTF exporter with its defaults
(docs/engines.md), which keeps 4 influences: after it, Unreal's 8 slots have nothing more to
keep, so the models predict unreal = threejs = gltf != raw on a .blend (they differ on glTF
files that carry a second set).  An FBX path for Unreal is not modelled.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.engines import variants
from tests.hostile.conftest import run_main, strict_report

pytestmark = pytest.mark.blender

WEIGHTS = (0.3, 0.2, 0.15, 0.15, 0.1, 0.1)
BLENDER_X = sum(w * k for k, w in enumerate(WEIGHTS))  # 1.85
TOP4 = WEIGHTS[:4]
EXPECTED_CURRENT = {
    "raw": abs(BLENDER_X - sum(w * k for k, w in enumerate(TOP4))),  # 0.9
    "threejs": abs(BLENDER_X - sum(w * k for k, w in enumerate(TOP4)) / sum(TOP4)),  # 0.6625
    "gltf": abs(BLENDER_X - sum(w * k for k, w in enumerate(TOP4)) / sum(TOP4)),
    "unreal": abs(BLENDER_X - sum(w * k for k, w in enumerate(TOP4)) / sum(TOP4)),
    # Babylon reads what the exporter wrote (4 slots summing to 1): its divide by the sum changes nothing.
    "babylon": abs(BLENDER_X - sum(w * k for k, w in enumerate(TOP4)) / sum(TOP4)),
}
CESIUM = Path(__file__).resolve().parents[1] / "assets" / "CesiumMan" / "glTF-Binary" / "CesiumMan.glb"


@pytest.fixture(scope="module")
def six_influences(bpy, tmp_path_factory) -> Path:
    """Six root bones along +Y, posed by translation; vertex 0 at the origin weighs on all six."""
    from tests.factories.blender_rigs import BoneSpec, build_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bones = [BoneSpec(f"B{k}", (0.0, 0.0, float(k)), (0.0, 1.0, float(k))) for k in range(6)]
    verts = [(0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)]
    weights = {f"B{k}": ([0], [w]) for k, w in enumerate(WEIGHTS)}
    weights["B0"] = ([0, 1, 2], [WEIGHTS[0], 1.0, 1.0])
    mesh, arm = build_rig("Six", bones, verts, [], weights)
    for k, pb in enumerate(arm.pose.bones):
        pb.location = (float(k), 0.0, 0.0)  # bone along +Y, roll 0: local X is armature X
    bpy.context.view_layer.update()
    path = tmp_path_factory.mktemp("six") / "six.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


@pytest.fixture(scope="module")
def six_animated(bpy, six_influences, tmp_path_factory) -> Path:
    """The same rig keyed at rest on frame 1 and posed on frame 11; saved on frame 1."""
    bpy.ops.wm.open_mainfile(filepath=str(six_influences))
    arm = bpy.data.objects["Six_Armature"]
    for pb in arm.pose.bones:
        pb.keyframe_insert("location", frame=11)
        pb.location = (0.0, 0.0, 0.0)
        pb.keyframe_insert("location", frame=1)
    bpy.context.scene.frame_set(1)
    path = tmp_path_factory.mktemp("animated") / "six_animated.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def audit_json(tmp_path: Path, *args: str | Path) -> dict:
    out = tmp_path / f"report{len(list(tmp_path.glob('report*.json')))}.json"
    code, _stdout, stderr = run_main("audit", *args, "--json", out, "--no-shape-checks", "--fail-on", "never")
    assert code == 0, stderr
    return strict_report(out)  # strict JSON, validated against docs/report.schema.json


def only_mesh(report: dict) -> dict:
    (f,) = report["files"]
    assert f["status"] == "ok", f.get("message")
    (mesh,) = f["meshes"]
    return mesh


@pytest.mark.parametrize("target", sorted(EXPECTED_CURRENT))
def test_target_divergence_is_the_hand_sum(six_influences, tmp_path, target):
    report = audit_json(tmp_path, six_influences, "--target", target)
    assert report["options"]["target"] == target
    mesh = only_mesh(report)
    by_pose = mesh["metrics"]["engine_divergence_by_pose"]
    assert by_pose["current"] == pytest.approx(EXPECTED_CURRENT[target], abs=1e-6)
    assert len(by_pose) > 1  # the stress poses too
    assert mesh["metrics"]["max_engine_divergence"] == pytest.approx(max(by_pose.values()), rel=1e-12)
    engine = [f for f in mesh["findings"] if f["code"] == "engine-divergence"]
    if max(by_pose.values()) > 1e-3:
        (finding,) = engine
        assert finding["details"]["target"] == target and target in finding["message"]
        assert finding["details"]["target_verified"] == (target in ("threejs", "babylon"))
        assert finding["details"]["by_pose"] == by_pose
    else:
        assert not engine


def test_default_target_is_threejs(six_influences, tmp_path):
    mesh = only_mesh(report := audit_json(tmp_path, six_influences))
    assert report["options"]["target"] == "threejs"
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] == pytest.approx(EXPECTED_CURRENT["threejs"],
                                                                                   abs=1e-6)


def test_unknown_target_is_bad_usage(six_influences, tmp_path, capsys):
    code, _out, _err = run_main("audit", six_influences, "--target", "nosuch", "--json", tmp_path / "r.json")
    assert code == 2 and "nosuch" in capsys.readouterr().err  # argparse writes to sys.stderr
    assert not (tmp_path / "r.json").exists()


def _blender_vs_threejs(bpy, path: Path, frame: int) -> float:
    """Independently of the audit's plumbing: import, go to ``frame``, compare Blender's evaluated
    mesh with our reader's threejs positions at ``frame / fps`` (Y-up to Z-up by hand)."""
    from skin_audit.blender.session import reset_to_empty_scene
    from skin_audit.core.engines.gltf_path import gltf_engine_positions
    from skin_audit.core.engines.targets import THREEJS
    from skin_audit.core.gltf.document import load_gltf

    reset_to_empty_scene()
    bpy.ops.import_scene.gltf(filepath=str(path))
    scene = bpy.context.scene
    scene.frame_set(frame)
    obj = next(o for o in scene.objects if o.type == "MESH" and any(m.type == "ARMATURE" for m in o.modifiers))
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    me = ev.to_mesh()
    co = np.zeros(len(me.vertices) * 3)
    me.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    mw = np.array(obj.matrix_world)
    world = co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]
    blender = np.column_stack([world[:, 0], world[:, 2], -world[:, 1]])
    (drawn,) = gltf_engine_positions(load_gltf(path), THREEJS, None, frame / scene.render.fps)
    return float(np.linalg.norm(drawn.positions - blender, axis=1).max())


def test_frame_moves_the_gltf_comparison(bpy, tmp_path):
    """Unnormalised CesiumMan: Blender clamps weights above 1, three.js divides by the sum, so
    their distance depends on the pose; --frame reads both sides at frame / fps."""
    broken = variants.unnormalised(tmp_path)
    currents = {}
    for frame in (0, 30):
        mesh = only_mesh(audit_json(tmp_path, broken, "--frame", str(frame)))
        assert mesh["metrics"]["gltf_time"] == pytest.approx(frame / 24)
        currents[frame] = mesh["metrics"]["engine_divergence_by_pose"]["current"]
        assert list(mesh["metrics"]["engine_divergence_by_pose"]) == ["current"]  # a file has no stress poses
        assert currents[frame] == pytest.approx(_blender_vs_threejs(bpy, broken, frame), rel=1e-6, abs=1e-9)
    assert abs(currents[0] - currents[30]) > 1e-4, currents


def test_frame_on_a_clean_file_finds_nothing_engine_side(tmp_path):
    mesh = only_mesh(audit_json(tmp_path, CESIUM, "--frame", "12"))
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] < 1e-5 * mesh["metrics"]["size"] * 10
    assert not [f for f in mesh["findings"] if f["code"].startswith("gltf-") or f["code"] == "engine-divergence"]


def test_unknown_clip_is_an_error_of_that_file(tmp_path):
    code, _out, _err = run_main("audit", CESIUM, "--clip", "Nope", "--json", tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 2 and report["files"][0]["status"] == "error"
    assert "Nope" in report["files"][0]["message"]


@pytest.mark.parametrize("variant, codes", [
    ("unnormalised", {"gltf-weights-not-normalised", "gltf-blender-clamps-weight", "gltf-blender-changes-weights",
                      "engine-divergence"}),
    ("all_zero", {"gltf-weights-not-normalised", "gltf-blender-changes-weights"}),
    ("second_set", {"gltf-blender-merges-sets", "gltf-joint-repeated", "engine-divergence"}),
])
def test_gltf_file_findings_reach_the_report(tmp_path, variant, codes):
    """The file's own findings (validator codes) and what Blender's importer changed, on the mesh
    the primitive became, their rows as Blender vertex indices."""
    from skin_audit.core.gltf.checks import file_checks
    from skin_audit.core.gltf.document import load_gltf

    path = getattr(variants, variant)(tmp_path)
    mesh = only_mesh(audit_json(tmp_path, path))
    found = {f["code"]: f for f in mesh["findings"]}
    assert codes <= set(found), sorted(found)
    # CesiumMan has one primitive: Blender's vertex i is the file's row i.
    for f in file_checks(load_gltf(path)):
        if f.details.get("where") == "file":  # file-wide: on the rig entry
            continue
        assert found[f.code]["count"] == f.count
        assert found[f.code]["details"]["validator_code"] == f.details["validator_code"]
        assert found[f.code]["vertices"] == list(f.vertices[:1000])
    if "engine-divergence" in codes:
        assert found["engine-divergence"]["details"]["target"] == "threejs"
        assert "Blender shows this file differently from engines" in found["engine-divergence"]["message"]
    if variant == "all_zero":
        change = found["gltf-blender-changes-weights"]
        assert change["details"]["all_zero"] == change["count"] == found["gltf-weights-not-normalised"]["count"]


def test_config_target_is_used_and_checked(six_influences, tmp_path, capsys):
    config = tmp_path / "skin_audit.toml"
    config.write_text('[audit]\ntarget = "raw"\n', encoding="utf-8")
    mesh = only_mesh(report := audit_json(tmp_path, six_influences, "--config", config))
    assert report["options"]["target"] == "raw"
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] == pytest.approx(EXPECTED_CURRENT["raw"], abs=1e-6)
    # The flag wins over the file.
    mesh = only_mesh(audit_json(tmp_path, six_influences, "--config", config, "--target", "threejs"))
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] == pytest.approx(EXPECTED_CURRENT["threejs"],
                                                                                   abs=1e-6)
    config.write_text('[audit]\ntarget = "nosuch"\n', encoding="utf-8")
    code, _out, err = run_main("audit", six_influences, "--config", config, "--json", tmp_path / "x.json")
    assert code == 2 and "nosuch" in err + capsys.readouterr().err


def test_frame_on_a_blend_audits_that_frame(six_animated, tmp_path):
    """Saved on frame 1 (rest): nothing to see; --frame 11 poses the bones as the hand sums say.
    The file is never saved: it is still on frame 1 afterwards."""
    before = six_animated.read_bytes()
    at_rest = only_mesh(audit_json(tmp_path, six_animated, "--target", "raw"))
    assert at_rest["metrics"]["engine_divergence_by_pose"]["current"] < 1e-9
    posed = only_mesh(report := audit_json(tmp_path, six_animated, "--target", "raw", "--frame", "11"))
    assert report["options"]["frame"] == 11
    assert posed["metrics"]["engine_divergence_by_pose"]["current"] == pytest.approx(EXPECTED_CURRENT["raw"],
                                                                                    abs=1e-6)
    assert six_animated.read_bytes() == before


def test_clip_plays_the_same_animation_on_both_sides(tmp_path):
    """Fox's Run clip at frame 10: Blender (its importer's action for Run) and threejs (the file's
    Run) agree; the clip matters, so a side left on the first clip would be far off."""
    from skin_audit.core.engines.gltf_path import gltf_engine_positions
    from skin_audit.core.engines.targets import THREEJS
    from skin_audit.core.gltf.document import load_gltf

    fox = CESIUM.parents[2] / "Fox" / "glTF-Binary" / "Fox.glb"
    mesh = only_mesh(report := audit_json(tmp_path, fox, "--clip", "Run", "--frame", "10"))
    assert report["options"]["clip"] == "Run"
    size = mesh["metrics"]["size"]
    assert mesh["metrics"]["engine_divergence_by_pose"]["current"] < 1e-6 * size * 10
    doc = load_gltf(fox)
    (run,) = gltf_engine_positions(doc, THREEJS, "Run", 10 / 24)
    (first,) = gltf_engine_positions(doc, THREEJS, None, 10 / 24)
    assert np.linalg.norm(run.positions - first.positions, axis=1).max() > 1e-2 * size
