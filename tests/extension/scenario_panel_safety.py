# SPDX-License-Identifier: GPL-3.0-or-later
"""Buttons that must never crash Blender or leave debris (run inside Blender through
blender_driver.py; see test_panel_safety.py).

- Select Finding on a mesh built by ``from_pydata`` that was never in Edit Mode: Blender 5.0.1
  crashes on ``mesh.edges.foreach_set("select", ...)`` there, so a crash fails the check
  ("did not report") instead of killing pytest.
- Preview in Engine on a library-override rig: its collection takes no new object; the preview
  goes to the scene's collection, and Remove Preview finds it.
"""

from __future__ import annotations

import os
from pathlib import Path

import bpy
import numpy as np
from blender_helpers import empty_scene, install, submodule

WORK = Path(os.environ["SKIN_AUDIT_TEST_WORK"])
PREVIEW_OF = "skin_audit_engine_preview_of"


def _activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def _strip_rig(name: str = "Strip"):
    """A strip of three quads along Z built by from_pydata, two bones, vertex 7 in no group."""
    co = [(x, 0.0, z) for z in (0.0, 1.0, 2.0, 3.0) for x in (0.0, 1.0)]
    faces = [(2 * i, 2 * i + 1, 2 * i + 3, 2 * i + 2) for i in range(3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(co, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    arm_data = bpy.data.armatures.new(name + "Arm")
    arm = bpy.data.objects.new(name + "Arm", arm_data)
    for o in (obj, arm):
        bpy.context.scene.collection.objects.link(o)
    _activate(arm)
    bpy.ops.object.mode_set(mode="EDIT")
    lower = arm_data.edit_bones.new("Lower")
    lower.head, lower.tail = (0.5, 0.0, 0.0), (0.5, 0.0, 1.5)
    upper = arm_data.edit_bones.new("Upper")
    upper.head, upper.tail, upper.parent, upper.use_connect = (0.5, 0.0, 1.5), (0.5, 0.0, 3.0), lower, True
    bpy.ops.object.mode_set(mode="OBJECT")
    lo, up = obj.vertex_groups.new(name="Lower"), obj.vertex_groups.new(name="Upper")
    lo.add([0, 1, 2, 3], 1.0, "REPLACE")
    up.add([4, 5, 6], 1.0, "REPLACE")
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    _activate(obj)
    return obj, arm


def setup() -> None:
    install()
    empty_scene()


def check_select_on_a_mesh_never_in_edit_mode() -> None:
    """Select Finding on a from_pydata mesh: Edit Mode, exactly the finding's vertices selected."""
    obj, _arm = _strip_rig()
    assert {".select_edge", ".select_poly"} & set(obj.data.attributes.keys()), "the crash case is not built"
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    findings = submodule("ui.state").audit_result(bpy.context.scene.name).meshes[0].findings
    index = next(i for i, f in enumerate(findings) if f.code == "unweighted-vertices")
    assert findings[index].vertices == (7,), findings[index]
    assert bpy.ops.skin_audit.select_finding(mesh_index=0, finding_index=index, target="VERTICES") == {"FINISHED"}
    assert bpy.context.mode == "EDIT_MESH"
    bpy.ops.object.mode_set(mode="OBJECT")
    for kind, expected in (("vertices", [7]), ("edges", []), ("polygons", [])):
        items = getattr(obj.data, kind)
        selected = np.zeros(len(items), dtype=bool)
        items.foreach_get("select", selected)
        assert np.flatnonzero(selected).tolist() == expected, (kind, np.flatnonzero(selected))


def check_select_selects_the_edges_between_selected_vertices() -> None:
    """Two neighbouring vertices selected: their edge is, as a click in vertex select mode does."""
    obj, _arm = _strip_rig("Strip2")
    obj.vertex_groups["Upper"].remove([6])
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    findings = submodule("ui.state").audit_result(bpy.context.scene.name).meshes[0].findings
    index = next(i for i, f in enumerate(findings) if f.code == "unweighted-vertices")
    assert findings[index].vertices == (6, 7), findings[index]
    assert bpy.ops.skin_audit.select_finding(mesh_index=0, finding_index=index) == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    edges = [tuple(sorted(e.vertices)) for e in obj.data.edges if e.select]
    assert edges == [(6, 7)], edges
    assert not any(p.select for p in obj.data.polygons)


def _override_rig():
    """The demo rig saved in a library, linked back and made a library override."""
    empty_scene()
    rig = submodule("blender.build.twist_rig").build_demo_rig(bpy.context)
    collection = bpy.data.collections.new("Character")
    bpy.context.scene.collection.children.link(collection)
    for obj in (rig.mesh, rig.armature):
        for other in list(obj.users_collection):
            other.objects.unlink(obj)
        collection.objects.link(obj)
    library = WORK / "character.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library))
    empty_scene()
    with bpy.data.libraries.load(str(library), link=True) as (_src, dst):
        dst.collections = ["Character"]
    dst.collections[0].override_hierarchy_create(bpy.context.scene, bpy.context.view_layer)
    mesh = next(o for o in bpy.context.scene.objects if o.type == "MESH")
    assert mesh.override_library is not None
    return mesh


def check_preview_in_engine_on_a_library_override_rig() -> None:
    """The preview is made (in the scene's collection), and Remove Preview deletes it: no orphan."""
    mesh = _override_rig()
    _activate(mesh)
    before = {o.name_full for o in bpy.data.objects}
    assert bpy.ops.skin_audit.preview_engine() == {"FINISHED"}
    made = [o for o in bpy.data.objects if o.name_full not in before]
    assert len(made) == 1 and made[0][PREVIEW_OF] == mesh.name, made
    assert made[0].name in bpy.context.scene.objects
    assert made[0].library is None and made[0].data.library is None
    assert len(mesh.override_library.reference.users_collection[0].objects) == 2, "the library's collection changed"
    _activate(mesh)
    assert bpy.ops.skin_audit.remove_engine_preview() == {"FINISHED"}
    assert {o.name_full for o in bpy.data.objects} == before
    assert not any("engine preview" in m.name for m in bpy.data.meshes)


def check_a_button_cancels_on_our_error_and_on_a_bug_with_one_line() -> None:
    """The project's error: its message, cancelled; any other exception (a bug): one line naming
    it, cancelled, never a traceback in the panel.  (A script calling an operator that reported
    an ERROR gets a RuntimeError carrying the report.)"""
    _strip_rig("Strip3")
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    actions = submodule("ui.actions")
    errors = submodule("core.errors")
    real = actions.clear_heatmap

    def ours(_context):
        raise errors.InputError("nothing to clear here")

    def bug(_context):
        raise ValueError("boom")

    try:
        for raiser, told in ((ours, "nothing to clear here"),
                             (bug, "skin_audit internal error (a bug; please report it): ValueError: boom")):
            actions.clear_heatmap = raiser
            try:
                bpy.ops.skin_audit.clear_heatmap()
            except RuntimeError as exc:
                assert told in str(exc) and ("internal error" in str(exc)) == (raiser is bug), str(exc)
            else:
                raise AssertionError("the operator did not report an error")
    finally:
        actions.clear_heatmap = real
    assert bpy.ops.skin_audit.clear_heatmap() == {"FINISHED"}
