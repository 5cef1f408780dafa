# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit of every real rig in ``tests/assets`` (copies of public assets, with licences), end to end.

Expected findings come from two independent places: the facts the assets'
README states (vertex counts, the weight defects of the BlenderIO files,
normalised glTF weights), and this file's own reading of each loaded file
(weights one ``v.groups`` entry at a time, bones, parents, scales, and Blender's
evaluated mesh).  The audit must also leave everything as it found it: a
fingerprint of the session before and after, and the files' SHA-256.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.audit import mesh_audit as audit_mesh
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.tolerances import BLENDER_MIN_CONTRIB, SKINNING_MATCH_RELATIVE
from tests.independent_readers import own_weights

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]

REPO = Path(__file__).resolve().parents[2]
#: Real rigs nobody on the project made, kept in the repository with their licences and sources.
ASSETS = REPO / "tests" / "assets"
SUFFIXES = (".blend", ".glb", ".gltf")
ASSET_FILES = (
    "BlenderIO_03_skinned_cylinder/03_skinned_cylinder.blend",
    "BlenderIO_03_skinned_cylinder/03_skinned_cylinder.gltf",
    "BlenderIO_32_weights_influence/32_weights_influence_4.blend",
    "BlenderIO_32_weights_influence/32_weights_influence_6.blend",
    "BlenderIO_32_weights_influence/32_weights_influence_9.blend",
    "BlenderIO_32_weights_influence/32_weights_influence_all.blend",
    "BlenderIO_parent_is_skined/parent_is_skined.blend",
    "CesiumMan/glTF-Binary/CesiumMan.glb",
    "Fox/glTF-Binary/Fox.glb",
    "RiggedFigure/glTF-Binary/RiggedFigure.glb",
    "RiggedSimple/glTF-Binary/RiggedSimple.glb",
    "RiggedSimple/glTF/RiggedSimple.gltf",
    "SimpleSkin/glTF-Embedded/SimpleSkin.gltf",
    "SimpleSkin/glTF/SimpleSkin.gltf",
)
#: Skinned vertices per file, from the assets README (Blender 5.0.1 import).
README_VERTICES = {
    "SimpleSkin": 10, "RiggedSimple": 160, "RiggedFigure": 370, "CesiumMan": 3273, "Fox": 1728,
    "BlenderIO_03_skinned_cylinder/03_skinned_cylinder.blend": 160, "BlenderIO_parent_is_skined": 1014,
}
#: Codes of the audit rules judged here (other issues' checks have their own tests).
RULE_CODES = audit_mesh.RULE_CODES
on_blender42 = pytest.mark.blender42


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def assets() -> Path:
    if not ASSETS.is_dir():
        pytest.fail(f"the real rigs are missing: expected {ASSETS} (tests/assets in the repository)", pytrace=False)
    return ASSETS


@pytest.fixture(scope="module")
def audited(assets, bpy):
    """Every asset audited in-process by ``audit_paths`` on the folder, with SHA-256 before and after."""
    from skin_audit.blender.run.audit_files import audit_paths

    files = sorted(f for f in assets.rglob("*") if f.suffix.lower() in SUFFIXES)
    before = {f: sha256(f) for f in files}
    results = audit_paths([str(assets)], AuditOptions())
    after = {f: sha256(f) for f in files}
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return {"files": files, "results": {Path(r.path): r for r in results}, "before": before, "after": after}


# ------------------------------------------------------------ this file's own reading




def own_positions(mesh) -> np.ndarray:
    return np.array([tuple(v.co) for v in mesh.vertices], dtype=np.float64)


def apply(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    return p @ m[:3, :3].T + m[:3, 3]


def own_skinned(bpy) -> list[tuple]:
    """(mesh object, Armature modifier) pairs of the loaded scene, found by hand."""
    return [(o, m) for o in bpy.context.scene.objects if o.type == "MESH" for m in o.modifiers
            if m.type == "ARMATURE" and m.show_viewport and m.object is not None]


def own_roots(bones) -> set[str]:
    """Roots of the deform hierarchy (each deform bone under its nearest deform ancestor) when it
    has several, else of the whole tree when it has several (helper roots, told as INFO)."""
    def deform_ancestor(b):
        p = b.parent
        while p is not None and not p.use_deform:
            p = p.parent
        return p

    deform_roots = {b.name for b in bones if b.use_deform and deform_ancestor(b) is None}
    tree_roots = {b.name for b in bones if b.parent is None}
    return deform_roots if len(deform_roots) > 1 else tree_roots if len(tree_roots) > 1 else set()


def own_view(bpy, obj, mod, used_by_rig: set[str] | None = None) -> dict:
    """What the rules should say about one skinned mesh and its armature, from this file's own
    reading; ``used_by_rig``: deform bones weighted by any mesh of the armature."""
    arm = mod.object
    bones = arm.data.bones
    names, w = own_weights(obj)
    deform = [n in bones and bones[n].use_deform for n in names]
    dw = w[:, deform] if any(deform) else np.zeros((len(w), 0))
    sums = dw.sum(axis=1)
    count = (dw > 0).sum(axis=1)
    weighted = (w > 0).any(axis=0)
    unweighted = sums <= BLENDER_MIN_CONTRIB
    world = np.array(arm.matrix_world)
    col_norms = np.linalg.norm(world[:3, :3], axis=0)
    used_bones = {n for n, d, u in zip(names, deform, weighted, strict=True) if d and u}
    view = {
        "unweighted-vertices": set(np.flatnonzero(unweighted)),
        "weights-not-normalized": set(np.flatnonzero(~unweighted & (np.abs(sums - 1.0) > 1e-4))),
        "too-many-influences": set(np.flatnonzero(count > 4)),
        "group-without-bone": {n for n, u in zip(names, weighted, strict=True)
                               if u and n not in bones and n != mod.vertex_group},
        "weights-on-non-deform-bone": {n for n, u in zip(names, weighted, strict=True)
                                       if u and n in bones and not bones[n].use_deform},
        "deform-bone-without-weights": {b.name for b in bones if b.use_deform and
                                        b.name not in (used_bones if used_by_rig is None else used_by_rig)},
        "multiple-root-bones": own_roots(bones),
        "no-deform-bones": not any(b.use_deform for b in bones),
        "negative-armature-scale": np.linalg.det(world[:3, :3]) < 0,
        "non-uniform-armature-scale": np.ptp(col_norms) > 1e-4 * col_norms.max(),
        "preserve-volume-on": mod.use_deform_preserve_volume,
        "bbones-on-deform-bones": {b.name for b in bones if b.use_deform and b.bbone_segments > 1},
        "mesh-not-parented-to-armature": obj.parent != arm,
    }
    view["sums"], view["count"], view["used"] = sums, count, used_bones
    return view


def expected_codes(view) -> set[str]:
    return {code for code, value in view.items() if code not in ("sums", "count", "used") and
            (len(value) if isinstance(value, set) else bool(value))}


def findings_by_code(mesh_audit) -> dict:
    out: dict = {}
    for f in mesh_audit.findings:
        if f.code in RULE_CODES:
            out.setdefault(f.code, []).append(f)
    return out


def load(bpy, path: Path) -> None:
    from skin_audit.blender.run.audit_files import load as project_load

    project_load(path)


# ------------------------------------------------------------ the audit of every asset


@on_blender42
def test_every_asset_is_audited_and_left_unchanged_on_disk(audited):
    rel = sorted(str(p.relative_to(ASSETS)) for p in audited["results"])
    assert rel == sorted(ASSET_FILES)
    for path, result in audited["results"].items():
        assert result.status == "ok", result.message
        assert result.meshes, path
    assert audited["after"] == audited["before"]


@on_blender42
def test_readme_facts(audited):
    by_rel = {str(p.relative_to(ASSETS)): r for p, r in audited["results"].items()}
    for key, vertices in README_VERTICES.items():
        totals = {rel: sum(m.vertices for m in r.meshes) for rel, r in by_rel.items() if rel.startswith(key)}
        assert totals and set(totals.values()) == {vertices}, (key, totals)
    for rel, r in by_rel.items():
        assert "Icosphere" not in {m.object for m in r.meshes}  # the importer's bone shape
        if rel.endswith((".glb", ".gltf")):  # glTF weights are normalised
            assert all("weights-not-normalized" not in findings_by_code(m) for m in r.meshes), rel
    # BlenderIO_03 (.blend): every one of the 160 vertices is off, by up to 0.024; INFO, as the default
    # target (threejs through Blender's glTF exporter, which divides by the sum) draws them as Blender does.
    (cylinder,) = by_rel["BlenderIO_03_skinned_cylinder/03_skinned_cylinder.blend"].meshes
    (f,) = findings_by_code(cylinder)["weights-not-normalized"]
    assert (f.severity, f.count, f.vertices) == ("INFO", 160, tuple(range(160)))
    assert 0.02 < f.details["max_error"] <= 0.0241
    # BlenderIO_32: up to 10 influences, sums off by up to 0.5.
    io32 = [m for rel, r in by_rel.items() if rel.startswith("BlenderIO_32") for m in r.meshes]
    assert max(m.metrics["max_influences"] for m in io32) == 10
    errors = [f.details["max_error"] for m in io32 for f in findings_by_code(m).get("weights-not-normalized", [])]
    assert 0.45 <= max(errors) <= 0.5 + 1e-6


@on_blender42
@pytest.mark.parametrize("rel", ASSET_FILES)
def test_findings_match_this_files_own_reading(bpy, audited, rel):
    path = ASSETS / rel
    result = audited["results"][path]
    load(bpy, path)
    pairs = own_skinned(bpy)
    assert sorted((m.object, m.armature) for m in result.meshes) == sorted((o.name, m.object.name) for o, m in pairs)
    audits = {(m.object, m.armature): m for m in result.meshes}
    # The armature's findings are reported once, in its rig entry, over all its meshes.
    rigs = {r.armature: r for r in result.rigs}
    assert sorted(rigs) == sorted({mod.object.name for _, mod in pairs})
    used: dict[str, set[str]] = {}
    for obj, mod in pairs:
        used.setdefault(mod.object.name, set()).update(own_view(bpy, obj, mod)["used"])
    for obj, mod in pairs:
        audit = audits[obj.name, mod.object.name]
        found = findings_by_code(audit)
        for f in rigs[mod.object.name].findings:
            if f.code in RULE_CODES:
                found.setdefault(f.code, []).append(f)
        view = own_view(bpy, obj, mod, used[mod.object.name])
        where = f"{rel}: {obj.name}"
        # The rules that need no pose: exactly the codes this file's own reading predicts...
        static = expected_codes(view)
        assert {c for c in found if c in view} == static, where
        # ...with the same vertices, groups and bones.
        for code in ("unweighted-vertices", "weights-not-normalized", "too-many-influences"):
            if code in static:
                (f,) = found[code]
                assert set(f.vertices) == view[code] and f.count == len(view[code]), (where, code)
        for code in ("group-without-bone", "weights-on-non-deform-bone"):
            assert {g for f in found.get(code, []) for g in f.groups} == view[code], (where, code)
        for code in ("deform-bone-without-weights", "multiple-root-bones", "bbones-on-deform-bones"):
            assert {b for f in found.get(code, []) for b in f.bones} == view[code], (where, code)
        assert audit.metrics["max_influences"] == int(view["count"].max())
        # Blender and the recomputation agree everywhere (a mesh saved in Edit Mode: see below).
        assert "skinning-mismatch" not in found, where
        if obj.mode != "EDIT":
            assert "not-reproduced" not in found, where
            assert audit.metrics["max_numpy_vs_blender"] <= SKINNING_MATCH_RELATIVE * max(audit.metrics["size"], 1)
        # Engines diverge only where weights are off or too many.
        suspects = view["unweighted-vertices"] | view["weights-not-normalized"] | view["too-many-influences"]
        for f in found.get("engine-divergence", []):
            assert set(f.vertices) <= suspects, where


@on_blender42
@pytest.mark.parametrize("rel", ASSET_FILES)
def test_no_bind_pose_drift_matches_blender(bpy, audited, rel):
    """No asset drifts: checked here by putting this session's own copy at Rest Position and by
    clearing every pose channel and action, then reading Blender's evaluated mesh."""
    path = ASSETS / rel
    result = audited["results"][path]
    load(bpy, path)
    tolerance = AuditOptions().drift_relative
    pairs = list(own_skinned(bpy))
    # As many (mesh, modifier) pairs here as the audit reported: none dropped, none checked twice.
    assert len(pairs) == len(result.meshes) > 0, (rel, [o.name for o, _ in pairs])
    checked = 0
    for obj, mod in pairs:
        if obj.mode == "EDIT":
            continue  # its evaluated mesh is empty in this session (see the Edit Mode test)
        checked += 1
        audit = next(m for m in result.meshes if m.object == obj.name)
        modelled = own_positions(obj.data)
        arm = mod.object
        arm.data.pose_position = "REST"
        bpy.context.view_layer.update()
        at_rest = own_positions(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data)
        arm.data.pose_position = "POSE"
        if arm.animation_data is not None:
            arm.animation_data.action = None
        for pb in arm.pose.bones:
            pb.location, pb.scale = (0, 0, 0), (1, 1, 1)
            pb.rotation_quaternion, pb.rotation_euler = (1, 0, 0, 0), (0, 0, 0)
            pb.rotation_axis_angle = (0, 0, 1, 0)
        bpy.context.view_layer.update()
        cleared = own_positions(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data)
        size = max(float(np.ptp(modelled, axis=0).max()), 1.0)
        drift = max(np.abs(at_rest - modelled).max(), np.abs(cleared - modelled).max())
        assert drift <= tolerance * size, (rel, obj.name, drift)
        assert "bind-pose-drift" not in findings_by_code(audit)
        assert audit.metrics["max_bind_drift"] <= tolerance * size
    assert checked >= 1, rel


@on_blender42
@pytest.mark.parametrize("rel", ASSET_FILES)
def test_recomputation_matches_blenders_evaluated_mesh(bpy, assets, rel):
    """The numpy recomputation against Blender's evaluated mesh read here, and Blender's against
    this file's own renormalised LBS from the pose matrices."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.armature_modifier import recompute_blender

    load(bpy, assets / rel)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    checked = 0
    for obj, mod in own_skinned(bpy):
        if obj.mode == "EDIT":
            continue  # its evaluated mesh is empty in this session (see the Edit Mode test)
        checked += 1
        mesh = extract(obj, mod, depsgraph, measure_drift=False)
        rec = recompute_blender(mesh, mesh.read_pose)
        evaluated = own_positions(obj.evaluated_get(depsgraph).data)
        modelled = own_positions(obj.data)
        size = max(float(np.ptp(modelled, axis=0).max()), 1.0)
        assert np.linalg.norm(rec.positions - evaluated, axis=1).max() <= SKINNING_MATCH_RELATIVE * size
        # Own LBS: object -> armature space, sum_j w_j C_j p / sum_j w_j over deform groups, and back.
        arm = mod.object
        to_arm = np.linalg.inv(np.array(arm.matrix_world)) @ np.array(obj.matrix_world)
        p = apply(to_arm, modelled)
        names, w = own_weights(obj)
        out, total = np.zeros_like(p), np.zeros(len(p))
        for g, name in enumerate(names):
            if name in arm.pose.bones and arm.data.bones[name].use_deform:
                c = np.array(arm.pose.bones[name].matrix) @ np.linalg.inv(np.array(arm.data.bones[name].matrix_local))
                out += w[:, [g]] * apply(c, p)
                total += w[:, g]
        own = apply(np.linalg.inv(to_arm), out / total[:, None])
        assert np.abs(own - evaluated).max() <= SKINNING_MATCH_RELATIVE * size, (rel, obj.name)
    assert checked >= 1, rel  # a file with nothing compared proves nothing


def test_mesh_saved_in_edit_mode_is_compared(audited):
    path = ASSETS / "BlenderIO_32_weights_influence/32_weights_influence_4.blend"
    plane = next(m for m in audited["results"][path].meshes if m.object == "Plane.002")
    assert "not-reproduced" not in findings_by_code(plane)
    # Compared, every vertex of it, and within the float32 tolerance of Blender's evaluated mesh.
    assert plane.metrics["vertices_compared"] == plane.vertices > 0
    assert 0.0 <= plane.metrics["max_numpy_vs_blender"] <= SKINNING_MATCH_RELATIVE * max(plane.metrics["size"], 1.0)


# ------------------------------------------------------------ the audit changes nothing


def _rna_values(struct) -> dict:
    """Every readable RNA property of ``struct``: values, vectors as tuples, ID pointers by name."""
    out = {}
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key in ("rna_type",) or prop.type == "COLLECTION":
            continue
        value = getattr(struct, key, None)
        if prop.type == "POINTER":
            value = getattr(value, "name", None) if value is not None else None
        elif hasattr(value, "__len__") and not isinstance(value, str):
            value = tuple(tuple(v) if hasattr(v, "__len__") else v for v in value)
        out[key] = value
    return out


def fingerprint(bpy) -> dict:
    """Everything an audit must leave as it found it, as plain comparable values."""
    data = bpy.data
    view_layer = bpy.context.view_layer
    fp: dict = {
        "counts": {k: len(getattr(data, k)) for k in dir(data)
                   if isinstance(getattr(data, k, None), bpy.types.bpy_prop_collection)},
        "scenes": {s.name: (s.frame_current, s.frame_subframe, s.camera and s.camera.name) for s in data.scenes},
        "scene": bpy.context.scene.name,
        "active": view_layer.objects.active.name if view_layer.objects.active else None,
        "selected": sorted(o.name for o in view_layer.objects if o.select_get()),
        "objects": {},
    }
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for o in data.objects:
        item = {
            "mode": o.mode, "parent": o.parent.name if o.parent else None,
            "matrix_world": np.array(o.matrix_world).tobytes(),
            "transform": (tuple(o.location), tuple(o.rotation_euler), tuple(o.rotation_quaternion), tuple(o.scale)),
            "hidden": (o.hide_viewport, o.hide_render),
            "action": (o.animation_data.action.name if o.animation_data and o.animation_data.action else None,
                       len(o.animation_data.drivers) if o.animation_data else 0,
                       o.animation_data.use_nla if o.animation_data else None),
            "modifiers": [_rna_values(m) for m in o.modifiers],
        }
        if o.type == "ARMATURE":
            item["pose"] = {pb.name: (tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
                                      tuple(pb.rotation_axis_angle), tuple(pb.scale), pb.rotation_mode,
                                      np.array(pb.matrix).tobytes(),
                                      [(c.type, c.mute, c.influence) for c in pb.constraints])
                            for pb in o.pose.bones}
            item["pose_position"] = o.data.pose_position
        if o.type == "MESH":
            me = o.data
            co = np.empty(len(me.vertices) * 3, dtype=np.float32)
            me.vertices.foreach_get("co", co)
            item["vertices"] = co.tobytes()
            item["weights"] = [tuple((g.group, g.weight) for g in v.groups) for v in me.vertices]
            item["groups"] = [(g.name, g.lock_weight) for g in o.vertex_groups]
            item["shape_keys"] = [(k.name, k.value, k.mute) for k in me.shape_keys.key_blocks] if me.shape_keys \
                else None
            item["active_shape_key"] = (o.active_shape_key_index, o.show_only_shape_key)
            if o.mode != "EDIT":
                evaluated = o.evaluated_get(depsgraph).data
                ev = np.empty(len(evaluated.vertices) * 3, dtype=np.float32)
                evaluated.vertices.foreach_get("co", ev)
                item["evaluated"] = ev.tobytes()
        fp["objects"][o.name] = item
    return fp


def _built_rig_in_pose_mode(bpy):
    """A rig with an action, an NLA track, a driver, a constraint and a shape key, posed at frame 7,
    its armature active in Pose Mode and the mesh selected."""
    from tests.factories.blender_rigs import chain_rig

    mesh, arm = chain_rig("Fingerprint", ("Root", "Child", "Tip"), rings=9, height=3.0)
    pb = arm.pose.bones["Child"]
    pb.rotation_mode = "XYZ"
    for frame, angle in ((1, 0.0), (10, 0.9)):
        pb.rotation_euler = (angle, 0.0, 0.0)
        pb.keyframe_insert("rotation_euler", frame=frame)
    track = arm.animation_data.nla_tracks.new()
    track.strips.new("Held", 1, arm.animation_data.action)
    tip = arm.pose.bones["Tip"]
    tip.rotation_mode = "XYZ"
    fcurve = tip.driver_add("rotation_euler", 2)
    fcurve.driver.type, fcurve.driver.expression = "SCRIPTED", "0.3"
    limit = tip.constraints.new("LIMIT_ROTATION")
    limit.owner_space, limit.use_limit_x, limit.min_x, limit.max_x = "LOCAL", True, 0.1, 0.2
    mesh.shape_key_add(name="Basis")
    key = mesh.shape_key_add(name="Bulge")
    key.data[3].co.x += 0.1
    key.value = 0.5
    other = bpy.data.objects.new("Other", None)
    bpy.context.scene.collection.objects.link(other)
    bpy.context.scene.frame_set(7)
    mesh.select_set(True)
    other.select_set(True)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    pb.location = (0.0, 0.05, 0.0)  # an unkeyed change the user has not keyed yet
    bpy.context.view_layer.update()


@on_blender42
@pytest.mark.parametrize("rel", [*ASSET_FILES, "built rig in Pose Mode"])
def test_audit_changes_nothing(bpy, assets, rel):
    from skin_audit.blender.run.audit_scene import audit_meshes, skinned_meshes

    if rel in ASSET_FILES:
        path = assets / rel
        digest = sha256(path)
        load(bpy, path)
    else:
        path, digest = None, None
        _built_rig_in_pose_mode(bpy)
    before = fingerprint(bpy)
    meshes = skinned_meshes(bpy.context.scene.objects)
    results = audit_meshes(bpy.context, meshes, AuditOptions(), allow_edit_mode=True)
    assert len(results) == len(meshes) > 0
    after = fingerprint(bpy)
    for key in before:
        if key != "objects":
            assert after[key] == before[key], key
    assert after["objects"].keys() == before["objects"].keys()
    for name, item in before["objects"].items():
        for key, value in item.items():
            assert after["objects"][name][key] == value, (name, key)
    if path is not None:
        assert sha256(path) == digest
