# SPDX-License-Identifier: GPL-3.0-or-later
"""The Findings panel keeps rig entries: an armature's findings once, above its meshes.

Runs inside Blender through blender_driver.py (see test_audit_rigs_panel.py), with the
extension installed from its zip.  The character is tests/factories/characters.py's split
character (a body and two arm meshes on one armature) with a second root bone "Extra" that
deforms nothing: deform-bone-without-weights and multiple-root-bones belong to the armature.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import bpy
from blender_helpers import draw, empty_scene, install, submodule

WORK = Path(os.environ["SKIN_AUDIT_TEST_WORK"])
ARMATURE_CODES = {"deform-bone-without-weights", "multiple-root-bones"}


def _characters():
    # Loaded by path: putting the checkout on sys.path would shadow the installed extension.
    path = Path(__file__).resolve().parents[1] / "factories" / "characters.py"
    spec = importlib.util.spec_from_file_location("characters", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["characters"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _result():
    return submodule("ui.state").audit_result(bpy.context.scene.name)


def _activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def setup() -> None:
    install()
    empty_scene()
    parts = _characters().split_character("Split")
    rig = parts["rig"]
    _activate(rig)
    bpy.ops.object.mode_set(mode="EDIT")
    extra = rig.data.edit_bones.new("Extra")
    extra.head, extra.tail = (2.0, 0.0, 0.0), (2.0, 0.0, 0.5)
    bpy.ops.object.mode_set(mode="OBJECT")
    # Two meshes of the character: the arms (the body stays out of this audit).
    for obj in bpy.context.selected_objects:
        obj.select_set(False)
    parts["Arm.L"].select_set(True)
    parts["Arm.R"].select_set(True)
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}


def _rig_finding(code: str):
    (rig,) = _result().rigs
    for i, f in enumerate(rig.findings):
        if f.code == code:
            return i, f
    raise AssertionError(f"no {code!r} among {[f.code for f in rig.findings]}")


def check_one_rig_entry_holds_the_armature_findings_once() -> None:
    result = _result()
    assert not result.error, result.error
    (rig,) = result.rigs
    assert rig.armature == "Split"
    assert sorted(m.object for m in result.meshes) == sorted(rig.meshes) and len(rig.meshes) >= 2, rig.meshes
    codes = [f.code for f in rig.findings]
    assert ARMATURE_CODES <= set(codes) and len(codes) == len(set(codes)), codes
    assert _rig_finding("deform-bone-without-weights")[1].bones == ("Extra",)
    for mesh in result.meshes:  # not repeated on the meshes
        assert not ARMATURE_CODES & {f.code for f in mesh.findings}, (mesh.object, [f.code for f in mesh.findings])


def check_panel_draws_the_rig_box_above_the_meshes() -> None:
    bpy.context.scene.skin_audit.show_notes = True
    try:
        panel = draw("SKIN_AUDIT_PT_findings")
    finally:
        bpy.context.scene.skin_audit.show_notes = False
    labels = panel.of("label")
    texts = [i["text"] for i in labels]
    rig_at = next(k for k, i in enumerate(labels) if i["text"] == "Split" and i["icon"] == "ARMATURE_DATA")
    first_mesh = min(k for k, i in enumerate(labels) if i["icon"] == "MESH_DATA" and "verts)" in i["text"])
    assert rig_at < first_mesh, texts
    index, finding = _rig_finding("deform-bone-without-weights")
    label = f"{finding.count} bone, no weight: Extra"
    assert texts.count(label) == 1, texts  # once, on the rig, not per mesh
    assert {i["text"]: i["icon"] for i in labels}[label] == "INFO"
    assert panel.has_text("Arm.L") and panel.has_text("Arm.R"), texts
    selects = [(i["props"]["rig_index"], i["props"]["finding_index"]) for i in panel.of("operator")
               if i["idname"] == "skin_audit.select_rig_finding"]
    assert (0, index) in selects, selects


def check_rig_finding_selects_its_bones() -> None:
    index, finding = _rig_finding("deform-bone-without-weights")
    assert bpy.ops.skin_audit.select_rig_finding(rig_index=0, finding_index=index) == {"FINISHED"}
    rig = bpy.data.objects["Split"]
    assert bpy.context.mode == "POSE" and bpy.context.active_object == rig
    assert sorted(pb.name for pb in bpy.context.selected_pose_bones) == list(finding.bones)
    bpy.ops.object.mode_set(mode="OBJECT")


def check_export_writes_the_rig_entries() -> None:
    path = WORK / "rigs_report.json"
    assert bpy.ops.skin_audit.export_report(filepath=str(path)) == {"FINISHED"}
    data = json.loads(path.read_text(encoding="utf-8"))
    import jsonschema  # the test venv's; the report format is the command line's

    schema = Path(__file__).resolve().parents[2] / "docs" / "report.schema.json"
    jsonschema.validate(data, json.loads(schema.read_text(encoding="utf-8")))
    (rig,) = data["files"][0]["rigs"]
    assert rig["armature"] == "Split"
    assert [f["code"] for f in rig["findings"]] == [f.code for f in _result().rigs[0].findings]
    assert sorted(m["object"] for m in data["files"][0]["meshes"]) == sorted(rig["meshes"])
    assert data["files"][0]["path"] == "(unsaved .blend)"  # the scene was never saved
