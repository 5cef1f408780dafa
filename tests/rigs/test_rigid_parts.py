# SPDX-License-Identifier: GPL-3.0-or-later
"""Meshes an armature moves without an Armature modifier, in real Blender:

- a mesh parented to a bone is a rigid part: its bone moves vertices (never "turn Deform off"),
  and the Unreal target says its import leaves such a mesh out;
- a mesh parented with parent type Armature is deformed by Blender's hidden Armature modifier and
  audited like a skinned mesh: the recomputation against Blender's evaluated mesh, the bind pose
  and the spot checks' copies (which must follow the parent's copy);
- an unparented object sharing its mesh data with a skinned one is a static instance (INFO), as
  in the glTF exporter's test scene 25_mesh_instances.blend; with data of its own it is an ERROR.
"""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core import tolerances
from skin_audit.core.audit.options import AuditOptions
from tests.factories.characters import Bone, arm_weights, armature, mesh, tube

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


def audit_all(bpy, **options):
    from skin_audit.blender.run.audit_scene import audit_rigs, missing_modifiers, skinned_meshes

    bpy.context.view_layer.update()
    objects = list(bpy.context.scene.objects)
    return audit_rigs(bpy.context, skinned_meshes(objects), AuditOptions(**options),
                      missing=missing_modifiers(objects))


def _rig():
    """spine, arm.L under it, and hand.L at the arm's end, which no vertex of the arm weighs."""
    return armature("Rig", (Bone("spine", (0.0, 0.0, 0.6), (0.0, 0.0, 1.0)),
                            Bone("arm.L", (0.15, 0.0, 1.0), (0.75, 0.0, 1.0), "spine"),
                            Bone("hand.L", (0.75, 0.0, 1.0), (0.95, 0.0, 1.0), "arm.L")))


def _findings(rig_audit, code):
    return [f for f in rig_audit.findings if f.code == code]


# ------------------------------------------------------------------ rigid parts


def test_a_bone_carrying_a_mesh_is_not_idle(bpy, empty_scene):
    rig = _rig()
    v, f = tube(0.15, 0.75, rings=5)
    mesh("Arm", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    (alone,), _ = audit_all(bpy)
    (idle,) = _findings(alone, "deform-bone-without-weights")
    assert idle.bones == ("hand.L",)  # the control: nothing carried yet, Deform off is offered
    hv, hf = tube(0.75, 0.95, rings=3, radius=0.05)
    glove = mesh("Glove", hv, hf, rig=rig, modifier=False, parent_bone="hand.L")
    assert glove.parent_type == "BONE"
    (rig_audit,), meshes = audit_all(bpy)
    assert [m.object for m in meshes] == ["Arm"]
    assert _findings(rig_audit, "deform-bone-without-weights") == []
    (part,) = _findings(rig_audit, "rigid-part")
    assert (part.severity, part.bones, part.details["parts"]) == ("INFO", ("hand.L",), {"Glove": "hand.L"})
    assert _findings(rig_audit, "armature-modifier-missing") == []
    (unreal,), _ = audit_all(bpy, target="unreal")
    (part,) = _findings(unreal, "rigid-part")
    assert part.severity == "WARNING" and "Unreal's skeletal-mesh import" in part.message


def test_the_fix_never_turns_deform_off_on_a_carrying_bone(bpy, empty_scene):
    """What `fix` would act on: the bones the idle finding names (blender/fix/apply.py turns Deform
    off on exactly those)."""
    rig = _rig()
    v, f = tube(0.15, 0.75, rings=5)
    mesh("Arm", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    hv, hf = tube(0.75, 0.95, rings=3, radius=0.05)
    mesh("Glove", hv, hf, rig=rig, modifier=False, parent_bone="hand.L")
    extra = rig.data  # a fourth deform bone nothing weighs or carries: still offered
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    eb = extra.edit_bones.new("tail")
    eb.head, eb.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 0.3)
    bpy.ops.object.mode_set(mode="OBJECT")
    (rig_audit,), _ = audit_all(bpy)
    (idle,) = _findings(rig_audit, "deform-bone-without-weights")
    assert idle.bones == ("tail",)


# ------------------------------------------------------------------ parent type Armature


def _parented(bpy, shape_key: bool = False, after: bool = False):
    rig = _rig()
    v, f = tube(0.15, 0.75, rings=7)
    weights = arm_weights(v, "spine", "arm.L", 0.45)
    obj = mesh("Arm", v, f, weights, rig, modifier=False)
    obj.parent_type = "ARMATURE"
    if shape_key:
        obj.shape_key_add(name="Basis")
        key = obj.shape_key_add(name="Fat")
        for i, kv in enumerate(key.data):
            kv.co = (v[i][0], v[i][1] * 1.2, v[i][2])
        key.value = 0.5
    if after:
        smooth = obj.modifiers.new("Smooth", "SMOOTH")
        smooth.factor = 0.3
    pb = rig.pose.bones["arm.L"]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = (0.3, 0.0, 0.7)
    bpy.context.view_layer.update()
    return rig, obj


@pytest.mark.parametrize("variant", ["plain", "shape key", "modifier after"])
def test_parent_type_armature_is_audited_against_blender(bpy, empty_scene, variant):
    from skin_audit.blender.read.arrays import stored_positions
    from skin_audit.blender.run.audit_scene import armature_modifiers

    rig, obj = _parented(bpy, shape_key=variant == "shape key", after=variant == "modifier after")
    assert [m.object for m in armature_modifiers(obj)] == [rig]
    (rig_audit,), (audit,) = audit_all(bpy)
    assert audit.object == "Arm" and _findings(rig_audit, "armature-modifier-missing") == []
    # Blender's own evaluated mesh, read here: the posed arm moved, and the recomputation matches it.
    evaluated = stored_positions(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data)
    modelled = np.array([v.co for v in obj.data.vertices])
    assert np.abs(evaluated - modelled).max() > 0.1
    size = audit.metrics["size"]
    assert audit.metrics["max_numpy_vs_blender"] is not None
    assert audit.metrics["max_numpy_vs_blender"] <= tolerances.float32_tolerance(size) * 10
    assert audit.metrics["vertices_compared"] == len(modelled)
    codes = {f.code for f in audit.findings}
    assert not codes & {"skinning-mismatch", "sweep-mismatch", "mesh-not-parented-to-armature"}
    assert audit.metrics["sweep_spot_checks"] >= 1
    if variant == "shape key":  # the key moves the mesh at rest, by design: the drift names it
        (drift,) = [f for f in audit.findings if f.code == "bind-pose-drift"]
        assert "Fat" in drift.message
    else:
        assert "bind-pose-drift" not in codes
        assert audit.metrics["max_bind_drift"] <= tolerances.float32_tolerance(size) * 10


def test_the_recomputation_is_blenders_mesh_at_the_pose(bpy, empty_scene):
    """The extraction's Blender positions are the evaluated mesh, and the numpy recomputation
    from the weights alone reproduces them (envelopes aside: every vertex here is weighted)."""
    from skin_audit.blender.read.arrays import stored_positions
    from skin_audit.blender.read.extract import ParentModifier, extract
    from skin_audit.core.audit.armature_modifier import recompute_blender

    rig, obj = _parented(bpy)
    dg = bpy.context.evaluated_depsgraph_get()
    sm = extract(obj, ParentModifier(rig), dg)
    evaluated = stored_positions(obj.evaluated_get(dg).data).astype(np.float64)
    assert np.array_equal(sm.blender, evaluated)
    assert not sm.parent_deforms and sm.modifier.use_bone_envelopes
    rec = recompute_blender(sm, sm.read_pose)
    assert np.abs(rec.positions - evaluated).max() < 1e-5


def test_a_rig_the_view_layer_does_not_evaluate(bpy, empty_scene):
    """Excluded from the view layer: the extraction's visible copies deform through their parent
    copy, and give what Blender showed before the collection was excluded."""
    from skin_audit.blender.read.arrays import stored_positions
    from skin_audit.blender.read.extract import ParentModifier, extract
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from tests.factories.blender_rigs import exclude_from_view_layer

    rig, obj = _parented(bpy)
    shown = stored_positions(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data).astype(np.float64)
    exclude_from_view_layer([rig, obj])
    bpy.context.view_layer.update()
    sm = extract(obj, ParentModifier(rig), bpy.context.evaluated_depsgraph_get())
    assert sm.blender is not None and np.abs(sm.blender - shown).max() < 1e-6
    assert np.abs(recompute_blender(sm, sm.read_pose).positions - shown).max() < 1e-5


def test_a_vertex_without_deform_weight_moves_by_envelopes_and_is_not_compared(bpy, empty_scene):
    rig, obj = _parented(bpy)
    for g in obj.vertex_groups:
        g.remove([0])
    bpy.context.view_layer.update()
    (_,), (audit,) = audit_all(bpy)
    assert audit.metrics["vertices_compared"] == len(obj.data.vertices) - 1
    (info,) = [f for f in audit.findings if f.code == "not-reproduced"]
    assert "Bone Envelopes" in info.message


def test_a_file_with_only_parent_type_armature_is_a_rig(bpy, empty_scene, tmp_path):
    """Formerly 'not a rig' (exit 2)."""
    from skin_audit.blender.run.audit_files import audit_file

    _parented(bpy)
    path = tmp_path / "parent_armature.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    result = audit_file(path, AuditOptions(shape_checks=False))
    assert result.status == "ok", result.message
    assert [m.object for m in result.meshes] == ["Arm"]


# ------------------------------------------------------------------ instances


def test_an_unparented_object_sharing_skinned_data_is_a_static_instance(bpy, empty_scene):
    rig = _rig()
    v, f = tube(0.15, 0.75, rings=5)
    skinned = mesh("Skinned", v, f, arm_weights(v, "spine", "arm.L", 0.45), rig)
    instance = bpy.data.objects.new("Instance", skinned.data)
    bpy.context.scene.collection.objects.link(instance)
    copy = bpy.data.objects.new("Copy", skinned.data.copy())  # its own data: meant to bend, never does
    bpy.context.scene.collection.objects.link(copy)
    (rig_audit,), meshes = audit_all(bpy)
    assert [m.object for m in meshes] == ["Skinned"]
    found = {f.details["object"]: f for f in _findings(rig_audit, "armature-modifier-missing")}
    assert set(found) == {"Instance", "Copy"}
    assert found["Instance"].severity == "INFO" and found["Instance"].details["instance_of"] == "Skinned"
    assert "static instance" in found["Instance"].message
    assert found["Copy"].severity == "ERROR" and "instance_of" not in found["Copy"].details


def test_the_engine_preview_of_a_parent_type_armature_mesh(bpy, empty_scene):
    """The panel offers Preview in Engine for it (armature_modifiers finds the hidden modifier):
    the preview draws it where three.js would, which for normalised weights is Blender's mesh."""
    from skin_audit.blender.read.arrays import stored_positions
    from skin_audit.blender.show.engine_preview import show_engine_preview
    from skin_audit.core.engines.targets import THREEJS

    _, obj = _parented(bpy)
    copy, nowhere = show_engine_preview(bpy.context, obj, THREEJS)
    evaluated = stored_positions(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data)
    assert nowhere == 0
    assert np.abs(np.array([v.co for v in copy.data.vertices]) - evaluated).max() < 1e-5
