# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit from the panel (run inside Blender through blender_driver.py; see
test_animation_panel.py): Play Actions on the demo rig whose child twists to 170 degrees at
frame 37, the finding's popup offers Go to Frame, which plays the action, goes to the worst
frame and selects the finding's vertices."""

from __future__ import annotations

import bpy
import numpy as np
from blender_helpers import draw_finding_popup, empty_scene, install, settings, submodule

PEAK_FRAME = 37


def _result():
    return submodule("ui.state").audit_result(bpy.context.scene.name)


def _mesh():
    return bpy.data.objects["SkinAudit_Cylinder"]


def _collapse():
    for i, f in enumerate(_result().meshes[0].findings):
        if f.code == "animation-collapse":
            return i, f
    raise AssertionError([f.code for f in _result().meshes[0].findings])


def setup() -> None:
    install()
    empty_scene()
    bpy.ops.skin_audit.build_demo()
    twist = submodule("blender.build.twist_rig")
    arm = bpy.data.objects["SkinAudit_Armature"]
    pb = arm.pose.bones["Child"]
    pb.rotation_mode = "QUATERNION"
    action = bpy.data.actions.new("Twist")
    arm.animation_data_create().action = action
    for frame, degrees in ((1, 0.0), (PEAK_FRAME, 170.0), (60, 0.0)):
        pb.rotation_quaternion = twist.twist_quaternion(degrees)
        pb.keyframe_insert("rotation_quaternion", frame=frame)
    arm.animation_data.action = None  # the user is not playing it: Go to Frame puts it back
    pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    bpy.context.scene.frame_set(1)
    for other in bpy.context.selected_objects:
        other.select_set(False)
    _mesh().select_set(True)
    bpy.context.view_layer.objects.active = _mesh()


def check_play_actions_audits_every_frame_and_changes_nothing() -> None:
    settings().play_actions = True
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    assert bpy.context.scene.frame_current == 1
    assert bpy.data.objects["SkinAudit_Armature"].animation_data.action is None
    _, finding = _collapse()
    assert finding.details["frame"] == PEAK_FRAME and finding.details["action"] == "Twist"
    (entry,) = _result().rigs[0].animation["actions"]
    assert entry["frames"] == 60


def check_the_popup_offers_go_to_frame() -> None:
    index, _ = _collapse()
    named = {(i["idname"], i["text"]) for i in draw_finding_popup(0, -1, index).of("operator")}
    assert ("skin_audit.jump_to_frame", f"Go to Frame {PEAK_FRAME} (Twist)") in named, named


def check_go_to_frame_plays_the_action_there_and_selects_the_vertices() -> None:
    index, finding = _collapse()
    assert bpy.ops.skin_audit.jump_to_frame(mesh_index=0, finding_index=index) == {"FINISHED"}
    assert bpy.context.scene.frame_current == PEAK_FRAME
    assert bpy.data.objects["SkinAudit_Armature"].animation_data.action.name == "Twist"
    assert bpy.context.mode == "EDIT_MESH"
    _mesh().update_from_editmode()
    selected = np.zeros(len(_mesh().data.vertices), dtype=bool)
    _mesh().data.vertices.foreach_get("select", selected)
    assert tuple(np.flatnonzero(selected)) == finding.vertices
    bpy.ops.object.mode_set(mode="OBJECT")
