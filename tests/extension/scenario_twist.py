# SPDX-License-Identifier: GPL-3.0-or-later
"""The Twist Demo panel on real data: build, slider, LBS/DQS switch, Measure, and its drawing.

Runs inside Blender through blender_driver.py (see test_twist_panel.py).
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from blender_helpers import draw, empty_scene, install, poll_message, settings, submodule

#: Blender deforms in float32: its mid-ring radius agrees with the closed form to ~1e-7.
FLOAT32_TOL = 1e-6


def _rig():
    return submodule("blender.build.twist_rig").find_demo_rig(bpy.context.scene)


def _readout():
    return submodule("ui.state").twist_readout(bpy.context.scene.name)


def _mid_ring_radius() -> float:
    """Largest distance to the axis of the z = 1 ring, on Blender's evaluated mesh."""
    mesh = _rig().mesh
    evaluated = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    co = np.empty(len(evaluated.vertices) * 3, dtype=np.float32)
    evaluated.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3).astype(np.float64)
    ring = np.abs(co[:, 2] - 1.0) < 1e-5
    assert ring.sum() == 24, ring.sum()
    return float(np.hypot(co[ring, 0], co[ring, 1]).max())


def _set(angle_deg: float, method: str) -> None:
    settings().twist_angle = math.radians(angle_deg)
    settings().method = method


def setup() -> None:
    install()
    empty_scene()


def check_polls_with_nothing_built() -> None:
    """The main panel and its Twist/Audit subpanels show; Findings waits for an audit."""
    for name in ("SKIN_AUDIT_PT_main", "SKIN_AUDIT_PT_twist", "SKIN_AUDIT_PT_audit"):
        assert getattr(bpy.types, name).poll(bpy.context), name
    assert not bpy.types.SKIN_AUDIT_PT_findings.poll(bpy.context)


def check_draw_with_nothing_selected() -> None:
    """No selection, no rig: a hint, the build button, the audit options; no slider yet."""
    main = draw("SKIN_AUDIT_PT_main")
    assert main.has_text("Select a skinned mesh"), main.texts()
    twist = draw("SKIN_AUDIT_PT_twist")
    assert twist.operators() == ["skin_audit.build_demo"], twist.operators()
    assert "twist_angle" not in twist.props()
    audit = draw("SKIN_AUDIT_PT_audit")
    assert audit.props() == ["max_influences", "test_pose_angle", "play_actions", "use_gltf_tolerance",
                             "weight_tolerance", "target"]
    # Remove Preview shows once there is a preview to remove.
    assert audit.operators() == ["skin_audit.run_audit", "skin_audit.preview_engine"], audit.operators()


def check_greyed_out_buttons_say_why() -> None:
    """Every unavailable button explains itself through poll_message_set."""
    ops = bpy.ops.skin_audit
    assert "Build the demo rig first" in poll_message(ops.measure_twist)
    assert "Select a mesh deformed by an armature" in poll_message(ops.run_audit)
    for op in (ops.select_finding, ops.show_heatmap, ops.clear_heatmap, ops.export_report):
        assert "Run the audit first" in poll_message(op)


def check_build_refused_in_edit_mode() -> None:
    """Building needs Object Mode; the button says so in Edit Mode."""
    mesh = bpy.data.meshes.new("Tri")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    obj = bpy.data.objects.new("Tri", mesh)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        assert "Switch to Object Mode" in poll_message(bpy.ops.skin_audit.build_demo)
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.data.objects.remove(obj)
        bpy.data.meshes.remove(mesh)


def check_build_demo_creates_the_rig() -> None:
    """Build Demo Rig: the cylinder (216 vertices), the two-bone armature and the modifier."""
    assert "UNDO" in bpy.types.SKIN_AUDIT_OT_build_demo.bl_options
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}
    rig = _rig()
    assert rig is not None
    assert len(rig.mesh.data.vertices) == 216
    assert [b.name for b in rig.armature.data.bones] == ["Root", "Child"]
    assert rig.modifier.object == rig.armature
    assert not rig.modifier.use_deform_preserve_volume
    assert abs(_mid_ring_radius() - 1.0) < FLOAT32_TOL


def check_twist_slider_poses_the_child_live() -> None:
    """Moving the slider rotates the Child bone and the evaluated mid ring shrinks to cos(45)."""
    settings().twist_angle = math.radians(90.0)
    child = _rig().armature.pose.bones["Child"]
    expected = submodule("blender.build.twist_rig").twist_quaternion(90.0)
    assert np.allclose(tuple(child.rotation_quaternion), expected, atol=1e-7), tuple(child.rotation_quaternion)
    assert abs(_mid_ring_radius() - math.cos(math.radians(45.0))) < FLOAT32_TOL, _mid_ring_radius()


def check_method_switch_sets_preserve_volume() -> None:
    """DQS turns the modifier's Preserve Volume on (the ring keeps its radius); LBS turns it off."""
    settings().method = "DQS"
    assert _rig().modifier.use_deform_preserve_volume
    assert abs(_mid_ring_radius() - 1.0) < FLOAT32_TOL, _mid_ring_radius()
    settings().method = "LBS"
    assert not _rig().modifier.use_deform_preserve_volume


def check_measure_matches_the_closed_form() -> None:
    """Measure: Blender's mid ring against |cos(theta/2)| (LBS) and 1 (DQS); drift and numpy agree."""
    for angle, method, closed in ((90.0, "LBS", math.cos(math.radians(45.0))), (180.0, "LBS", 0.0),
                                  (180.0, "DQS", 1.0)):
        _set(angle, method)
        assert bpy.ops.skin_audit.measure_twist() == {"FINISHED"}
        r = _readout()
        # The slider stores float32 radians: the measured angle is within ~1e-5 degrees.
        assert abs(r.angle_deg - angle) < 1e-4 and r.method == method.lower(), (r.angle_deg, r.method)
        exact = abs(math.cos(math.radians(r.angle_deg) / 2.0)) if method == "LBS" else 1.0
        # sqrt(1 - sin^2) cancels near 180 degrees: agreement to ~1e-8 there.
        assert abs(r.mid_ring_closed_form - exact) < 1e-7, (angle, method, r.mid_ring_closed_form)
        assert abs(r.mid_ring_closed_form - closed) < FLOAT32_TOL
        assert abs(r.mid_ring_blender - closed) < FLOAT32_TOL, (angle, method, r.mid_ring_blender)
        assert r.bind_drift < FLOAT32_TOL, r.bind_drift
        assert r.numpy_vs_blender < 1e-5, r.numpy_vs_blender


def check_measure_changes_nothing() -> None:
    """Measuring restores the pose, the rest/pose switch and Preserve Volume."""
    _set(90.0, "DQS")
    rig = _rig()
    child = rig.armature.pose.bones["Child"]
    before = (tuple(child.rotation_quaternion), child.rotation_mode, rig.armature.data.pose_position,
              rig.modifier.use_deform_preserve_volume, _mid_ring_radius())
    assert bpy.ops.skin_audit.measure_twist() == {"FINISHED"}
    after = (tuple(child.rotation_quaternion), child.rotation_mode, rig.armature.data.pose_position,
             rig.modifier.use_deform_preserve_volume, _mid_ring_radius())
    assert before == after, (before, after)


def check_panel_draws_the_readout() -> None:
    """With a measurement: slider, switch, Measure and the four numbers."""
    _set(90.0, "LBS")
    bpy.ops.skin_audit.measure_twist()
    twist = draw("SKIN_AUDIT_PT_twist")
    assert twist.props() == ["twist_angle", "method"], twist.props()
    assert twist.operators() == ["skin_audit.build_demo", "skin_audit.measure_twist"]
    r = _readout()
    for text in ("Mid-ring radius", f"{r.mid_ring_blender:.8f}", "cos", f"{r.mid_ring_closed_form:.8f}",
                 "Bind-pose drift", "numpy vs Blender"):
        assert twist.has_text(text), (text, twist.texts())
    assert not twist.has_text("press Measure again")


def check_readout_marked_stale_when_settings_change() -> None:
    """After the slider moves, the old numbers are flagged until Measure runs again."""
    settings().twist_angle = math.radians(120.0)
    assert draw("SKIN_AUDIT_PT_twist").has_text("press Measure again")
    bpy.ops.skin_audit.measure_twist()
    assert not draw("SKIN_AUDIT_PT_twist").has_text("press Measure again")
    assert abs(_readout().mid_ring_blender - 0.5) < FLOAT32_TOL


def check_collapse_is_reported_as_a_warning() -> None:
    """At 180 degrees LBS the twist-collapse finding is shown with the warning icon."""
    _set(180.0, "LBS")
    bpy.ops.skin_audit.measure_twist()
    codes = [f.code for f in _readout().findings]
    assert "twist-collapse" in codes, codes
    icons = [i["icon"] for i in draw("SKIN_AUDIT_PT_twist").of("label")]
    assert "ERROR" in icons, icons


def check_rebuild_replaces_the_rig() -> None:
    """Building again leaves one rig, posed by the current slider, and forgets old numbers."""
    _set(90.0, "DQS")
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}
    marked = [o.name for o in bpy.data.objects if o.get("skin_audit_demo")]
    assert sorted(marked) == ["SkinAudit_Armature", "SkinAudit_Cylinder"], marked
    assert _readout() is None
    assert _rig().modifier.use_deform_preserve_volume
    assert abs(_mid_ring_radius() - 1.0) < FLOAT32_TOL
