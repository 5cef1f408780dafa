# SPDX-License-Identifier: GPL-3.0-or-later
"""The .blend path: a rig built in code, exported with Blender's own glTF exporter (its
defaults), then (1) the file's influences against our exporter model and (2) three.js's
drawn positions at a pose against ``exported_deform`` with the ``threejs`` target,
computed from Blender's own vertex groups and bone matrices.  B-Bones and vertices with
more than 4 influences, tiny weights, unnormalised sums and no weight at all included."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.engines.targets import BLENDER_GLTF_EXPORTER, THREEJS
from skin_audit.core.engines.weights import exporter_weights
from skin_audit.core.gltf.document import load_gltf
from skin_audit.core.gltf.skin import skinned_primitives
from tests.factories.engine_reference import exported_deform

from .conftest import run_node

pytestmark = pytest.mark.blender

BONES = ("B0", "B1", "B2", "B3", "B4", "B5")
#: Same tolerance as the glTF samples (three.js stores float32; measured far below it).
THREEJS_MATCH_RELATIVE = 1e-5


def _rig(bpy):
    from tests.factories.blender_rigs import build_rig, chain_bones, cylinder

    verts, faces = cylinder(rings=9, segments=8, radius=0.4, height=3.0)
    rng = np.random.default_rng(11)
    n = len(verts)
    weights = rng.uniform(0.0, 1.0, (n, len(BONES)))
    keep = rng.integers(1, len(BONES) + 1, n)  # 1..6 influences per vertex
    for v in range(n):
        weights[v, rng.permutation(len(BONES))[keep[v] :]] = 0.0
    weights[::5] *= 1.7  # unnormalised sums
    weights[3::11, 0] = 5e-5  # below the exporter's 1e-4 cut
    weights[7::13] = 0.0  # unweighted
    spec = {b: (np.flatnonzero(weights[:, k] > 0), weights[weights[:, k] > 0, k]) for k, b in enumerate(BONES)}
    bones = chain_bones(BONES, 3.0)
    bones[2] = type(bones[2])(**{**bones[2].__dict__, "bbone_segments": 4})  # a B-Bone: flattened by the exporter
    mesh, arm = build_rig("Tube", bones, verts, faces, spec)
    # Blender's own weights (it clamps what it is given to [0, 1]): the exporter reads these.
    stored = np.zeros_like(weights)
    column = {g.index: BONES.index(g.name) for g in mesh.vertex_groups}
    for v in mesh.data.vertices:
        for g in v.groups:
            stored[v.index, column[g.group]] = g.weight
    return mesh, arm, verts, stored


def _pose(bpy, arm) -> None:
    for k, name in enumerate(BONES):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (math.radians(10 + 5 * k), 0.0, math.radians(7 * k))
        for frame in (1, 2):
            pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.scene.frame_set(1)


def _export(bpy, path: Path) -> Path:
    bpy.ops.export_scene.gltf(filepath=str(path), export_format="GLTF_SEPARATE")
    return path


def _match_vertices(exported_yup: np.ndarray, verts_zup: np.ndarray) -> np.ndarray:
    # glTF is Y-up: the exporter writes Blender's (x, y, z) as (x, z, -y).
    blender = np.column_stack([exported_yup[:, 0], -exported_yup[:, 2], exported_yup[:, 1]])
    d = np.linalg.norm(blender[:, None, :] - verts_zup[None, :, :], axis=2)
    match = d.argmin(axis=1)
    assert d[np.arange(len(match)), match].max() < 1e-5
    return match


def test_exported_influences_follow_the_exporter_model(bpy, empty_scene, tmp_path, engines_dir):
    mesh, arm, verts, weights = _rig(bpy)
    doc = load_gltf(_export(bpy, tmp_path / "tube.gltf"))
    (prim,) = skinned_primitives(doc)
    assert len(prim.sets) == 1  # one set: 4 influences by default
    names = [doc.json["nodes"][j].get("name") for j in doc.json["skins"][prim.skin]["joints"]]
    match = _match_vertices(prim.positions, verts)
    joints = np.tile(np.arange(len(BONES)), (len(verts), 1))
    exp_j, exp_w, neutral = exporter_weights(joints, weights, BLENDER_GLTF_EXPORTER)
    got_w = prim.sets[0].weights
    got_names = np.array(names, dtype=object)[prim.sets[0].joints]
    for row, v in enumerate(match):
        if neutral[v]:
            assert got_names[row, 0] not in BONES and got_w[row, 0] == 1.0  # the added neutral joint
            continue
        expected = {BONES[j]: w for j, w in zip(exp_j[v], exp_w[v], strict=True) if w > 0}
        got = {got_names[row, k]: got_w[row, k] for k in range(4) if got_w[row, k] > 0}
        assert got.keys() == expected.keys(), (v, got, expected)
        np.testing.assert_allclose([got[k] for k in expected], list(expected.values()), rtol=0, atol=1e-7)
    assert neutral.any() and (weights > 0).sum(axis=1).max() > 4  # the rig exercises both rules


def test_threejs_draws_the_exported_path(bpy, empty_scene, tmp_path, engines_dir):
    mesh, arm, verts, weights = _rig(bpy)
    _pose(bpy, arm)
    path = _export(bpy, tmp_path / "tube_posed.gltf")
    drawn = run_node(engines_dir, "threejs_positions.mjs", str(path), "--times", "0")
    (mesh_out,) = drawn["meshes"]
    yup = np.asarray(mesh_out["positions"][0])
    three = np.column_stack([yup[:, 0], -yup[:, 2], yup[:, 1]])
    (prim,) = skinned_primitives(load_gltf(path))
    match = _match_vertices(prim.positions, verts)
    # Blender's own skinning matrices in armature space (armature and mesh at the origin).
    mats = np.array(
        [np.array(arm.pose.bones[b].matrix) @ np.linalg.inv(np.array(arm.data.bones[b].matrix_local)) for b in BONES]
    )
    joints = np.tile(np.arange(len(BONES)), (len(verts), 1))
    predicted = exported_deform(verts, joints, weights, mats, THREEJS)[match]
    size = float(np.ptp(verts, axis=0).max())
    worst = float(np.abs(three - predicted).max()) / size
    assert worst < THREEJS_MATCH_RELATIVE, f"threejs target off three.js by {worst:.3g} of the mesh size"
    # Not vacuous: Blender itself draws this rig differently (all influences, B-Bone curve).
    evaluated = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    blender = np.array([v.co[:] for v in evaluated.vertices])[match]
    assert float(np.abs(three - blender).max()) / size > 100 * THREEJS_MATCH_RELATIVE


def _non_deform_rig(bpy):
    """A tube on two deform bones plus a control bone with Deform off ('Ctrl', child of the root)
    whose group weighs the upper half at 0.4 beside the deform weights; Ctrl is posed."""
    from tests.factories.blender_rigs import BoneSpec, build_rig, chain_bones, chain_weights, cylinder

    verts, faces = cylinder(rings=9, segments=8, radius=0.4, height=2.0)
    bones = [*chain_bones(("Root", "Child"), 2.0), BoneSpec("Ctrl", (0.6, 0.0, 1.0), (0.6, 0.0, 1.5), "Root",
                                                          use_deform=False)]
    spec = chain_weights(verts[:, 2], ("Root", "Child"), 2.0)
    upper = np.flatnonzero(verts[:, 2] > 1.01)
    spec["Ctrl"] = (upper, np.full(len(upper), 0.4))
    mesh, arm = build_rig("Tube", bones, verts, faces, spec)
    for name, rot in (("Child", (0.3, 0.0, 0.0)), ("Ctrl", (0.0, 0.9, 0.4))):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = rot
        for frame in (1, 2):
            pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.scene.frame_set(1)
    return mesh, arm, verts, upper


def test_exporter_writes_non_deform_groups_and_the_audit_predicts_three_js(bpy, empty_scene, tmp_path, engines_dir):
    """Blender's exporter (defaults: every bone a joint) writes the group of a bone with Deform off,
    so three.js moves those vertices with it while Blender does not; the audit's engine divergence at
    the current pose is the distance between three.js and Blender's evaluated mesh."""
    from tests.hostile.conftest import run_main, strict_report

    mesh, arm, verts, upper = _non_deform_rig(bpy)
    blend = tmp_path / "ctrl.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    path = _export(bpy, tmp_path / "ctrl.gltf")
    doc = load_gltf(path)
    names = [doc.json["nodes"][j].get("name") for j in doc.json["skins"][0]["joints"]]
    assert "Ctrl" in names  # a joint although Blender does not deform with it
    drawn = run_node(engines_dir, "threejs_positions.mjs", str(path), "--times", "0")
    yup = np.asarray(drawn["meshes"][0]["positions"][0])
    three = np.column_stack([yup[:, 0], -yup[:, 2], yup[:, 1]])
    (prim,) = skinned_primitives(doc)
    match = _match_vertices(prim.positions, verts)
    evaluated = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    blender = np.array([v.co[:] for v in evaluated.vertices])[match]
    truth = np.linalg.norm(three - blender, axis=1)
    size = float(np.ptp(verts, axis=0).max())
    assert truth.max() > 0.05 * size  # not vacuous: the control bone moves them in three.js
    moved = set(match[truth > 1e-5 * size].tolist())
    assert moved <= set(upper.tolist())
    out = tmp_path / "report.json"
    code, _stdout, stderr = run_main("audit", blend, "--json", out, "--no-shape-checks", "--fail-on", "never")
    assert code == 0, stderr[-3000:]
    (entry,) = strict_report(out)["files"][0]["meshes"]
    current = entry["metrics"]["engine_divergence_by_pose"]["current"]
    assert abs(current - float(truth.max())) < THREEJS_MATCH_RELATIVE * size, (current, float(truth.max()))
    (finding,) = [f for f in entry["findings"] if f["code"] == "engine-divergence"]
    assert finding["details"]["non_deform_groups"] == ["Ctrl"]
    assert "Deform off" in finding["message"] and "Ctrl" in finding["message"]
