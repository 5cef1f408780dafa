# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine target choice and Preview in Engine, on the demo cylinder (run inside Blender
through blender_driver.py; see test_engine_preview_panel.py).

Planted: vertex 0 weighs 0.5 in total, vertex 1 is in no group.  Hand-computed truth at the
armature's rest pose (the demo rig's mesh and armature sit at the world origin, unrotated):
``raw`` (4 largest weights, never renormalised, an empty vertex collapses) draws vertex 0 at
0.5 x its rest position and vertex 1 at the origin; ``threejs`` (Blender's glTF exporter
renormalises and binds an empty vertex to a joint that never moves) draws every vertex where
it rests.  Posed, ``threejs`` draws the normalised vertices where Blender does.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from blender_helpers import draw, empty_scene, install, poll_message, settings, submodule

PREVIEW_OF = "skin_audit_engine_preview_of"


def _rig():
    return submodule("blender.build.twist_rig").find_demo_rig(bpy.context.scene)


def _activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def _co(mesh) -> np.ndarray:
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def _previews() -> list:
    return [o for o in bpy.context.scene.objects if PREVIEW_OF in o]


def _preview_local(copy, source) -> np.ndarray:
    """The copy's vertices in the source's object space (the copy is only shifted along X)."""
    shift = np.array(copy.matrix_world) @ np.linalg.inv(np.array(source.matrix_world))
    assert np.allclose(shift[:3, :3], np.eye(3)) and shift[0, 3] > 0 and np.allclose(shift[1:3, 3], 0), shift
    return _co(copy.data)


def setup() -> None:
    install()
    empty_scene()


def check_target_choice_lists_every_target() -> None:
    """The Engine choice holds every target, threejs by default, and the audit reads it."""
    targets = submodule("core.engines.targets").TARGETS
    prop = settings().bl_rna.properties["target"]
    assert [i.identifier for i in prop.enum_items] == list(targets), list(prop.enum_items.keys())
    assert settings().target == "threejs"
    verified = {i.identifier: "verified against the running engine" in i.description for i in prop.enum_items}
    assert verified == {n: t.verified for n, t in targets.items()}, verified
    settings().target = "unreal"
    assert submodule("ui.properties").audit_options(settings()).target == "unreal"
    settings().target = "threejs"


def check_preview_needs_a_skinned_mesh_in_object_mode() -> None:
    """Greyed out with the reason: nothing selected, a plain mesh, Edit Mode; Remove with nothing to remove."""
    op = bpy.ops.skin_audit.preview_engine
    assert "Select a mesh deformed by an armature" in poll_message(op)
    assert "No engine preview to remove" in poll_message(bpy.ops.skin_audit.remove_engine_preview)
    bpy.ops.skin_audit.build_demo()
    rig = _rig()
    rig.mesh.vertex_groups["Root"].add([0], 0.5, "REPLACE")
    rig.mesh.vertex_groups["Child"].remove([0])
    rig.mesh.vertex_groups["Root"].remove([1])
    rig.mesh.vertex_groups["Child"].remove([1])
    _activate(rig.mesh)
    assert op.poll()
    bpy.ops.object.mode_set(mode="EDIT")
    assert "Switch to Object Mode" in poll_message(op)
    bpy.ops.object.mode_set(mode="OBJECT")


def check_audit_panel_draws_the_choice_and_buttons() -> None:
    panel = draw("SKIN_AUDIT_PT_audit")
    assert "skin_audit.preview_engine" in panel.operators(), panel.operators()
    assert "skin_audit.remove_engine_preview" not in panel.operators(), "nothing to remove yet"
    assert any(i.get("property") == "target" for i in panel.of("prop")), panel.of("prop")


def check_raw_preview_matches_hand_computed_positions() -> None:
    """raw at rest: vertex 0 (sum 0.5) at half its rest position, vertex 1 (no weight) at the origin."""
    rig = _rig()
    settings().twist_angle = 0.0
    settings().target = "raw"
    assert "UNDO" in bpy.types.SKIN_AUDIT_OT_preview_engine.bl_options
    before = {o.name for o in bpy.data.objects}
    assert bpy.ops.skin_audit.preview_engine() == {"FINISHED"}
    (copy,) = _previews()
    assert {o.name for o in bpy.data.objects} - before == {copy.name}
    assert copy.name == f"{rig.mesh.name} [engine preview: raw]", copy.name
    assert copy.data is not rig.mesh.data and not copy.modifiers
    rest = _co(rig.mesh.data)
    got = _preview_local(copy, rig.mesh)
    expected = rest.copy()
    expected[0] = 0.5 * rest[0]
    expected[1] = 0.0
    assert np.abs(got - expected).max() < 1e-6, np.abs(got - expected).max(axis=1)[:4]
    assert np.abs(_co(rig.mesh.data) - rest).max() == 0.0  # the user's mesh is untouched


def check_threejs_preview_draws_where_blender_does_when_weights_are_normalised() -> None:
    """threejs, posed at 60 degrees: the copy replaces the raw one; normalised vertices sit where
    Blender's Armature modifier puts them (vertex 0 too: the exporter renormalises it), and
    vertex 1 stays at rest (the exporter's neutral joint) where Blender leaves it too."""
    rig = _rig()
    settings().twist_angle = math.radians(60.0)
    settings().target = "threejs"
    assert bpy.ops.skin_audit.preview_engine() == {"FINISHED"}
    (copy,) = _previews()
    assert copy.name.endswith("[engine preview: threejs]")
    depsgraph = bpy.context.evaluated_depsgraph_get()
    blender = _co(rig.mesh.evaluated_get(depsgraph).data)
    got = _preview_local(copy, rig.mesh)
    assert np.abs(got - blender).max() < 1e-5, np.abs(got - blender).max()
    assert np.abs(got[1] - _co(rig.mesh.data)[1]).max() < 1e-6
    settings().twist_angle = 0.0


def check_a_preview_is_not_a_preview_source() -> None:
    (copy,) = _previews()
    _activate(copy)
    assert "not a preview" in poll_message(bpy.ops.skin_audit.preview_engine)
    _activate(_rig().mesh)


def check_preview_replaces_the_earlier_one() -> None:
    """One preview per mesh: a new target replaces the copy (undo cannot run in a background
    Blender, whose undo stack is off, so the UNDO flag is checked in the raw check instead)."""
    settings().target = "unreal"
    assert bpy.ops.skin_audit.preview_engine() == {"FINISHED"}
    assert [o.name for o in _previews()] == [f"{_rig().mesh.name} [engine preview: unreal]"]
    assert not [m for m in bpy.data.meshes if m.name.endswith("[engine preview: threejs]")]
    settings().target = "threejs"


def check_remove_preview_deletes_object_and_mesh() -> None:
    (copy,) = _previews()
    name = copy.name
    assert "skin_audit.remove_engine_preview" in draw("SKIN_AUDIT_PT_audit").operators()
    assert bpy.ops.skin_audit.remove_engine_preview() == {"FINISHED"}
    assert not _previews()
    assert name not in bpy.data.objects and name not in bpy.data.meshes
    assert _rig().mesh.name in bpy.data.objects
