# SPDX-License-Identifier: GPL-3.0-or-later
"""The Audit and Findings panels on a rig with known problems: audit, select, heatmap, export.

Runs inside Blender through blender_driver.py (see test_audit_panel.py).  The
rig is the demo cylinder with four planted problems:

- vertex 0 weighs 0.5 in total (weights-not-normalized),
- vertex 1 is in no group (unweighted-vertices),
- vertices 2 and 3 are in a group "Ghost" that names no bone, vertex 3 in no other group
  (group-without-bone; vertex 3 is unweighted too),
- a second root bone "Extra" deforms nothing (deform-bone-without-weights, multiple-root-bones).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import bpy
import numpy as np
from blender_helpers import draw, empty_scene, install, poll_message, settings, submodule

WORK = Path(os.environ["SKIN_AUDIT_TEST_WORK"])


def _rig():
    return submodule("blender.build.twist_rig").find_demo_rig(bpy.context.scene)


def _result():
    return submodule("ui.state").audit_result(bpy.context.scene.name)


def _finding(code: str) -> tuple[int, object]:
    findings = _result().meshes[0].findings
    for i, f in enumerate(findings):
        if f.code == code:
            return i, f
    raise AssertionError(f"no {code!r} finding among {[f.code for f in findings]}")


def _rig_finding(code: str) -> tuple[int, object]:
    """An armature finding: on the rig entry (once), not on the mesh."""
    findings = _result().rigs[0].findings
    for i, f in enumerate(findings):
        if f.code == code:
            return i, f
    raise AssertionError(f"no {code!r} rig finding among {[f.code for f in findings]}")


def _activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def _object_mode() -> None:
    if bpy.context.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")


def _plant_problems() -> None:
    rig = _rig()
    groups = rig.mesh.vertex_groups
    groups["Root"].add([0], 0.5, "REPLACE")
    groups["Root"].remove([1])
    groups.new(name="Ghost").add([2, 3], 0.25, "REPLACE")
    for group in groups:
        if group.name != "Ghost":
            group.remove([3])  # Ghost is its only weight: it stays behind (a renamed bone)
    _activate(rig.armature)
    bpy.ops.object.mode_set(mode="EDIT")
    extra = rig.armature.data.edit_bones.new("Extra")
    extra.head, extra.tail = (2.0, 0.0, 0.0), (2.0, 0.0, 1.0)
    bpy.ops.object.mode_set(mode="OBJECT")
    _activate(rig.mesh)


def _snapshot() -> dict:
    """Everything the audit must leave as it was."""
    rig = _rig()
    mesh = rig.mesh.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return {
        "co": co.tobytes(),
        "weights": [tuple((g.group, g.weight) for g in v.groups) for v in mesh.vertices],
        "groups": [g.name for g in rig.mesh.vertex_groups],
        "pose": [tuple(map(tuple, pb.matrix_basis)) for pb in rig.armature.pose.bones],
        "pose_position": rig.armature.data.pose_position,
        "modifiers": [(m.name, m.type, m.show_viewport, getattr(m, "use_deform_preserve_volume", None))
                      for m in rig.mesh.modifiers],
        "attributes": sorted(mesh.attributes.keys()),
        "mode": bpy.context.mode,
        "active": bpy.context.view_layer.objects.active.name,
        "selected": sorted(o.name for o in bpy.context.selected_objects),
        "frame": bpy.context.scene.frame_current,
        "datablocks": {name: sorted(getattr(bpy.data, name).keys()) for name in
                       ("objects", "meshes", "armatures", "scenes", "node_groups", "collections")},
    }


def setup() -> None:
    install()
    empty_scene()


def check_run_audit_poll_contexts() -> None:
    """Run Audit needs a skinned mesh or its armature, outside Edit Mode, and says so."""
    op = bpy.ops.skin_audit.run_audit
    assert "Select a mesh deformed by an armature" in poll_message(op)
    bpy.ops.skin_audit.build_demo()
    _plant_problems()
    plain = bpy.data.objects.new("Plain", bpy.data.meshes.new("Plain"))
    bpy.context.scene.collection.objects.link(plain)
    _activate(plain)
    assert "Select a mesh deformed by an armature" in poll_message(op)
    bpy.data.objects.remove(plain)
    _activate(_rig().armature)
    assert op.poll()
    _activate(_rig().mesh)
    assert op.poll()
    bpy.ops.object.mode_set(mode="EDIT")
    assert "Leave Edit Mode" in poll_message(op)
    bpy.ops.object.mode_set(mode="OBJECT")


def check_run_audit_changes_nothing() -> None:
    """The audit is read-only: data, pose, modes, selection, frame and datablocks are as before."""
    settings().twist_angle = math.radians(60.0)
    assert "UNDO" not in bpy.types.SKIN_AUDIT_OT_run_audit.bl_options
    before = _snapshot()
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    assert _snapshot() == before


def check_results_are_kept_for_the_panel() -> None:
    """The planted problems are found on the cylinder, with per-vertex measures."""
    result = _result()
    assert not result.error
    assert [m.object for m in result.meshes] == ["SkinAudit_Cylinder"]
    assert _finding("unweighted-vertices")[1].vertices == (1, 3)
    assert _finding("weights-not-normalized")[1].vertices == (0,)
    assert _finding("group-without-bone")[1].vertices == (2, 3)
    assert _rig_finding("deform-bone-without-weights")[1].bones == ("Extra",)
    assert "deform-bone-without-weights" not in [f.code for f in result.meshes[0].findings]
    assert "weight_sum" in result.measure_names(), result.measure_names()


def check_findings_panel_draws_the_results() -> None:
    """Findings: severity icons, counts, a select button per target, heatmap and export."""
    assert bpy.types.SKIN_AUDIT_PT_findings.poll(bpy.context)
    settings().show_notes = True
    try:
        panel = draw("SKIN_AUDIT_PT_findings")
    finally:
        settings().show_notes = False
    labels = {i["text"]: i["icon"] for i in panel.of("label")}
    assert labels["2 unweighted"] == "CANCEL", labels
    group = next(text for text in labels if text.startswith("2 group, no bone"))
    assert labels[group] == "ERROR", labels  # a WARNING's icon
    # INFO: the default engine target (threejs through Blender's glTF exporter) divides by the sum too.
    assert labels["1 not normalised"] == "INFO", labels
    assert labels["1 bone, no weight: Extra"] == "INFO", labels
    selects = [(i["props"]["finding_index"], i["props"]["target"]) for i in panel.of("operator")
               if i["idname"] == "skin_audit.select_finding"]
    assert (_finding("unweighted-vertices")[0], "VERTICES") in selects, selects
    rig_selects = [(i["props"]["rig_index"], i["props"]["finding_index"]) for i in panel.of("operator")
                   if i["idname"] == "skin_audit.select_rig_finding"]
    assert (0, _rig_finding("deform-bone-without-weights")[0]) in rig_selects, rig_selects
    assert "skin_audit.show_heatmap" in panel.operators()
    assert "skin_audit.export_report" in panel.operators()
    main = draw("SKIN_AUDIT_PT_main")
    counts = _result().counts()
    assert main.has_text(f"{counts['ERROR']} error"), main.texts()


def check_findings_are_one_short_line_each_worst_first_notes_folded() -> None:
    """Each finding is one line of at most 27 characters; errors, then warnings; INFO behind a toggle;
    every finding has a button showing its full text."""
    panel = draw("SKIN_AUDIT_PT_findings")
    findings = _result().findings
    rows = [i for i in panel.of("label") if i["icon"] in ("CANCEL", "ERROR", "INFO") and i["path"][-1] == "row"]
    assert len(rows) == sum(f.severity != "INFO" for f in findings), [r["text"] for r in rows]
    assert all(len(r["text"]) <= 27 for r in rows), [r["text"] for r in rows]
    assert not any(f.message in t for f in findings for t in panel.texts()), "full text is on demand only"
    toggle = [i for i in panel.of("prop") if i["property"] == "show_notes"]
    notes = sum(f.severity == "INFO" for f in findings)
    assert toggle and toggle[0]["text"] == f"Show {notes} notes (INFO)", toggle
    texts = [i["props"] for i in panel.of("operator") if i["idname"] == "skin_audit.finding_text"]
    assert len(texts) == len(rows), texts
    rank = {"ERROR": 0, "WARNING": 1, "INFO": 2}
    mesh_order = [rank[_result().meshes[0].findings[p["finding_index"]].severity] for p in texts
                  if p["mesh_index"] == 0]
    assert len(mesh_order) > 1 and mesh_order == sorted(mesh_order), mesh_order
    make = submodule("core.findings").Finding
    mixed = [make(code=f"c{i}", severity=s, message="m") for i, s in enumerate(("INFO", "WARNING", "ERROR", "WARNING"))]
    assert [i for i, _f in submodule("ui.panels").worst_first(mixed)] == [2, 1, 3, 0]


def check_finding_popup_has_the_whole_text_and_every_button_named() -> None:
    """The text button's popup: the whole message, then Select Vertices and Fix with their names."""
    from blender_helpers import draw_finding_popup

    index, finding = _finding("weights-not-normalized")
    layout = draw_finding_popup(0, -1, index)
    words = " ".join(t.strip() for t in layout.texts())
    assert " ".join(finding.message.split()) in " ".join(words.split()), words
    named = {(i["idname"], i["text"]) for i in layout.of("operator")}
    assert ("skin_audit.select_finding", "Select Vertices") in named, named
    assert ("skin_audit.fix_finding", "Fix weights-not-normalized") in named, named
    assert "Fix: scale the unlocked deform weights" in words, words


def check_finding_text_reports_the_whole_message() -> None:
    """The text button writes the finding's whole message to the Info log (popup in a window)."""
    index, finding = _finding("unweighted-vertices")
    assert bpy.ops.skin_audit.finding_text(mesh_index=0, finding_index=index) == {"FINISHED"}
    assert bpy.types.SKIN_AUDIT_OT_finding_text.description(bpy.context, type(
        "P", (), {"mesh_index": 0, "rig_index": -1, "finding_index": index})()) == finding.message


def check_findings_belong_to_their_scene() -> None:
    """Another scene has no results: Findings hides and the buttons explain why."""
    other = bpy.data.scenes.new("Other")
    try:
        with bpy.context.temp_override(scene=other):
            assert bpy.types.SKIN_AUDIT_PT_main.poll(bpy.context)
            assert not bpy.types.SKIN_AUDIT_PT_findings.poll(bpy.context)
            assert "Run the audit first" in poll_message(bpy.ops.skin_audit.export_report)
    finally:
        bpy.data.scenes.remove(other)
    assert bpy.types.SKIN_AUDIT_PT_findings.poll(bpy.context)


def check_select_finding_selects_its_vertices() -> None:
    """A vertex finding's button: Edit Mode, vertex select, exactly its vertices selected."""
    mesh = _rig().mesh
    for code in ("unweighted-vertices", "group-without-bone"):
        index, finding = _finding(code)
        result = bpy.ops.skin_audit.select_finding(mesh_index=0, finding_index=index, target="VERTICES")
        assert result == {"FINISHED"}
        assert bpy.context.mode == "EDIT_MESH" and bpy.context.active_object == mesh
        assert tuple(bpy.context.tool_settings.mesh_select_mode) == (True, False, False)
        mesh.update_from_editmode()
        selected = np.zeros(len(mesh.data.vertices), dtype=bool)
        mesh.data.vertices.foreach_get("select", selected)
        assert tuple(np.flatnonzero(selected)) == finding.vertices, (code, np.flatnonzero(selected))
    _object_mode()


def check_select_finding_selects_its_bones() -> None:
    """A bone finding's button: Pose Mode on the armature, exactly its bones selected."""
    index, finding = _rig_finding("deform-bone-without-weights")
    assert bpy.ops.skin_audit.select_rig_finding(rig_index=0, finding_index=index) == {"FINISHED"}
    arm = _rig().armature
    assert bpy.context.mode == "POSE" and bpy.context.active_object == arm
    assert sorted(pb.name for pb in bpy.context.selected_pose_bones) == list(finding.bones)
    _object_mode()
    _activate(_rig().mesh)


def check_select_finding_refuses_what_it_cannot_select() -> None:
    """A stale index or a target the finding lacks is an error, not a wrong selection."""
    index, _ = _finding("unweighted-vertices")
    for kwargs, message in (({"finding_index": 999}, "run the audit again"),
                            ({"finding_index": index, "target": "BONES"}, "names no bone")):
        try:
            bpy.ops.skin_audit.select_finding(mesh_index=0, **kwargs)
        except RuntimeError as exc:
            assert message in str(exc), str(exc)
        else:
            raise AssertionError(f"select_finding({kwargs}) did not fail")
    assert bpy.context.mode == "OBJECT"


def _heat(mesh) -> np.ndarray:
    attribute = mesh.color_attributes["skin_audit_heat"]
    colors = np.empty(len(mesh.vertices) * 4, dtype=np.float32)
    attribute.data.foreach_get("color", colors)
    return colors.reshape(-1, 4)


def _viewport_shading():
    screen = bpy.context.window_manager.windows[0].screen
    return next(a.spaces.active.shading for a in screen.areas if a.type == "VIEW_3D")


def check_heatmap_paints_red_high_blue_low() -> None:
    """Heatmap: a point colour attribute, red at the highest value, blue at the lowest, shown."""
    assert "UNDO" in bpy.types.SKIN_AUDIT_OT_show_heatmap.bl_options
    mesh = _rig().mesh.data
    values = _result().meshes[0].measures["weight_sum"]
    assert bpy.ops.skin_audit.show_heatmap(measure="weight_sum") == {"FINISHED"}
    attribute = mesh.color_attributes["skin_audit_heat"]
    assert (attribute.domain, attribute.data_type) == ("POINT", "FLOAT_COLOR")
    assert mesh.color_attributes.active_color.name == "skin_audit_heat"
    colors = _heat(mesh)
    assert np.allclose(colors[np.flatnonzero(values == values.max())], (1, 0, 0, 1))
    assert np.allclose(colors[np.flatnonzero(values == values.min())], (0, 0, 1, 1))
    assert values[1] == values.min()  # the unweighted vertex is the coldest
    shading = _viewport_shading()
    assert (shading.type, shading.color_type) == ("SOLID", "VERTEX")  # "Attribute" in the UI


def check_every_measure_can_be_painted() -> None:
    """Each per-vertex measure of the audit has a working heatmap."""
    for name in _result().measure_names():
        assert bpy.ops.skin_audit.show_heatmap(measure=name) == {"FINISHED"}, name
        assert _heat(_rig().mesh.data).shape == (216, 4)


def check_heatmap_needs_object_mode() -> None:
    """In Edit Mode the heatmap button is greyed out with the reason."""
    bpy.ops.object.mode_set(mode="EDIT")
    assert "Switch to Object Mode" in poll_message(bpy.ops.skin_audit.show_heatmap)
    bpy.ops.object.mode_set(mode="OBJECT")


def check_clear_heatmap_removes_it() -> None:
    """Clear: the attribute is gone and the viewport goes back to material colours."""
    assert bpy.ops.skin_audit.clear_heatmap() == {"FINISHED"}
    assert "skin_audit_heat" not in _rig().mesh.data.attributes
    assert _viewport_shading().color_type == "MATERIAL"


def check_export_report_writes_json() -> None:
    """Export: the report JSON (core.audit.report's format) and nothing else in the folder."""
    before = set(WORK.iterdir())
    path = WORK / "report.json"
    assert bpy.ops.skin_audit.export_report(filepath=str(path)) == {"FINISHED"}
    assert set(WORK.iterdir()) - before == {path}, "stray files next to the report"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "skin_audit.report", data["format"]
    (mesh,) = data["files"][0]["meshes"]
    assert mesh["object"] == "SkinAudit_Cylinder"
    assert [f["code"] for f in mesh["findings"]] == [f.code for f in _result().meshes[0].findings]
    assert data["summary"]["worst_severity"] == "ERROR"


def check_export_to_a_missing_folder_fails_cleanly() -> None:
    """A folder that does not exist: an error that says so, and no file."""
    path = WORK / "missing" / "report.json"
    try:
        bpy.ops.skin_audit.export_report(filepath=str(path))
    except RuntimeError as exc:
        assert "does not exist" in str(exc), str(exc)
    else:
        raise AssertionError("export to a missing folder did not fail")
    assert not path.parent.exists()


def check_failed_audit_is_shown_as_an_error() -> None:
    """A mesh left in Edit Mode behind its armature: the audit refuses, the panel shows why."""
    rig = _rig()
    _activate(rig.mesh)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.context.view_layer.objects.active = rig.armature  # the mesh stays in Edit Mode
    try:
        assert bpy.context.mode == "OBJECT" and rig.mesh.mode == "EDIT"
        try:
            bpy.ops.skin_audit.run_audit()
        except RuntimeError as exc:
            assert "Edit Mode" in str(exc), str(exc)
        else:
            raise AssertionError("the audit ran on a mesh in Edit Mode")
        assert "Edit Mode" in _result().error
        panel = draw("SKIN_AUDIT_PT_findings")
        assert any(i["icon"] == "CANCEL" and "Edit Mode" in i["text"] for i in panel.of("label")), panel.texts()
        assert any(i["name"] == "alert" and i["value"] for i in panel.of("flag"))
        assert draw("SKIN_AUDIT_PT_main").has_text("Last audit failed")
        assert "Run the audit first" in poll_message(bpy.ops.skin_audit.export_report)
    finally:
        bpy.context.view_layer.objects.active = rig.mesh
        bpy.ops.object.mode_set(mode="OBJECT")


def check_audit_again_after_a_fix() -> None:
    """Fixing the data and auditing again replaces the results."""
    rig = _rig()
    rig.mesh.vertex_groups["Root"].add([0, 1, 3], 1.0, "REPLACE")
    _activate(rig.armature)
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    codes = [f.code for f in _result().meshes[0].findings]
    assert "unweighted-vertices" not in codes and "weights-not-normalized" not in codes, codes


def check_select_button_tooltip_names_the_finding() -> None:
    """The select button's tooltip is the finding's own message."""
    from types import SimpleNamespace

    index, finding = _finding("group-without-bone")
    properties = SimpleNamespace(mesh_index=0, finding_index=index, target="VERTICES")
    text = bpy.types.SKIN_AUDIT_OT_select_finding.description(bpy.context, properties)
    assert text == f"Select the vertices of: {finding.message}", text
    index, finding = _rig_finding("deform-bone-without-weights")
    rig_properties = SimpleNamespace(rig_index=0, finding_index=index)
    text = bpy.types.SKIN_AUDIT_OT_select_rig_finding.description(bpy.context, rig_properties)
    assert text == f"Select the bones of: {finding.message}", text
    properties.finding_index = 999
    assert bpy.types.SKIN_AUDIT_OT_select_finding.description(bpy.context, properties).startswith("Select what")


def check_heat_colour_ramp() -> None:
    """Blue, cyan, green, yellow, red from low to high; grey for NaN; a constant is all blue."""
    heat_colors = submodule("blender.show.heatmap").heat_colors
    colors, low, high = heat_colors([0.0, 0.25, 0.5, 0.75, 1.0, float("nan")])
    expected = [(0, 0, 1), (0, 1, 1), (0, 1, 0), (1, 1, 0), (1, 0, 0), (0.5, 0.5, 0.5)]
    assert np.allclose(colors[:, :3], expected) and np.allclose(colors[:, 3], 1.0), colors
    assert (low, high) == (0.0, 1.0)
    colors, _, _ = heat_colors([3.0, 3.0])
    assert np.allclose(colors[:, :3], [(0, 0, 1)] * 2)


def check_show_test_pose_poses_the_armature_as_asked() -> None:
    """A sweep finding's pose button puts its worst test pose on the rig; Blender then shows the collapse."""
    bpy.ops.skin_audit.run_audit()
    index, finding = _finding("twist-collapse")
    bone, axis, degrees = finding.details["bone"], finding.details["axis"], finding.details["degrees"]
    assert bpy.ops.skin_audit.show_test_pose(mesh_index=0, finding_index=index) == {"FINISHED"}
    arm = _rig().armature
    pb = arm.pose.bones[bone]
    half = math.radians(degrees) / 2.0
    expected = [math.cos(half), 0.0, 0.0, 0.0]
    expected[1 + "xyz".index(axis)] = math.sin(half)
    rotation = pb.rotation_quaternion if pb.rotation_mode == "QUATERNION" else pb.rotation_euler.to_quaternion()
    assert np.allclose(rotation, expected, atol=1e-6), (tuple(rotation), expected)
    for other in arm.pose.bones:
        if other.name != bone:
            assert np.allclose(np.array(other.matrix_basis), np.eye(4), atol=1e-7), other.name
    # Blender's own deformation at that pose: the mid ring (z = 1) has collapsed onto the axis,
    # as |cos(theta / 2)| predicts for the 50/50 ring at 180 degrees.
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = _rig().mesh.evaluated_get(depsgraph).data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    mid = np.abs(co[:, 2] - 1.0) < 1e-4
    assert mid.sum() == 24
    assert np.hypot(co[mid, 0], co[mid, 1]).max() < 1e-5 + abs(math.cos(math.radians(degrees) / 2.0))
    for other in arm.pose.bones:
        other.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        other.rotation_euler = (0.0, 0.0, 0.0)


def check_show_test_pose_refuses_findings_without_a_pose() -> None:
    """A finding with no test pose cannot be 'shown'."""
    index, _ = _finding("group-without-bone")
    try:
        bpy.ops.skin_audit.show_test_pose(mesh_index=0, finding_index=index)
    except RuntimeError as exc:
        assert "no test pose" in str(exc), exc
    else:
        raise AssertionError("show_test_pose accepted a finding without a pose")
