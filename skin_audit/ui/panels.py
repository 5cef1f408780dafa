# SPDX-License-Identifier: GPL-3.0-or-later
"""The sidebar panel (3D viewport, tab "Skin Audit") and its subpanels.

``draw()`` only reads: the settings, the demo rig's presence and the results
the operators kept in ``state``.  Nothing is computed while drawing.
"""

from __future__ import annotations

import math
import textwrap

import bpy

from ..blender.build import twist_rig
from ..blender.fix.apply import FIXABLE
from ..core.audit.rig_audit import RigAudit
from ..core.findings import Finding, worst_severity
from . import state

#: Blender icons for the three severities.
SEVERITY_ICONS = {"INFO": "INFO", "WARNING": "ERROR", "ERROR": "CANCEL"}

#: Characters per line when a message is wrapped to the sidebar's width.
WRAP = 44


def _wrapped(layout, text: str, icon: str = "NONE") -> None:
    """A long message as several labels; the icon on the first line only."""
    col = layout.column(align=True)
    for i, line in enumerate(textwrap.wrap(text, WRAP) or [""]):
        col.label(text=line, icon=icon if i == 0 else "BLANK1")


def _value_row(layout, name: str, value: str) -> None:
    row = layout.row()
    row.label(text=name)
    row.label(text=value)


class SkinAuditPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Skin Audit"

    @classmethod
    def poll(cls, context):
        return context.scene is not None and getattr(context.scene, "skin_audit", None) is not None


class SKIN_AUDIT_PT_main(SkinAuditPanel, bpy.types.Panel):
    """Skin Audit: is it the data or the skinning algorithm?"""

    bl_label = "Skin Audit"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None:
            layout.label(text="Select a skinned mesh or its armature", icon="INFO")
        else:
            icon = {"MESH": "MESH_DATA", "ARMATURE": "ARMATURE_DATA"}.get(obj.type, "OBJECT_DATA")
            layout.label(text=obj.name, icon=icon)
        result = state.audit_result(context.scene.name)
        if result is not None:
            layout.label(text=_verdict(result), icon=_verdict_icon(result))


def _verdict(result: state.AuditResult) -> str:
    if result.error:
        return "Last audit failed"
    counts = result.counts()
    return f"Last audit: {counts['ERROR']} error(s), {counts['WARNING']} warning(s)"


def _verdict_icon(result: state.AuditResult) -> str:
    if result.error:
        return "CANCEL"
    worst = worst_severity(result.findings)
    return "CHECKMARK" if worst in (None, "INFO") else SEVERITY_ICONS[worst]


class SKIN_AUDIT_PT_twist(SkinAuditPanel, bpy.types.Panel):
    """The twisted-cylinder experiment: LBS collapses the mid ring while every input is right"""

    bl_label = "Twist Demo"
    bl_parent_id = "SKIN_AUDIT_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.skin_audit
        rig = twist_rig.find_demo_rig(context.scene)
        layout.operator("skin_audit.build_demo", icon="MESH_CYLINDER",
                        text="Rebuild Demo Rig" if rig is not None else "Build Demo Rig")
        if rig is None:
            _wrapped(layout, "Builds a cylinder skinned to two bones; twist the upper bone to watch "
                             "linear blend skinning pinch the middle.")
            return
        col = layout.column()
        col.prop(settings, "twist_angle", slider=True)
        col.row().prop(settings, "method", expand=True)
        layout.operator("skin_audit.measure_twist", icon="DRIVER_DISTANCE")
        readout = state.twist_readout(context.scene.name)
        if readout is None:
            layout.label(text="Press Measure for the numbers", icon="INFO")
            return
        _draw_readout(layout, readout, math.degrees(settings.twist_angle), settings.method.lower())


def _draw_readout(layout, readout: state.TwistReadout, angle_deg: float, method: str) -> None:
    box = layout.box()
    box.label(text=f"{readout.method.upper()} at {readout.angle_deg:.1f}\N{DEGREE SIGN}", icon="INFO")
    if not math.isclose(readout.angle_deg, angle_deg, abs_tol=1e-3) or readout.method != method:
        box.label(text="Settings changed: press Measure again", icon="ERROR")
    closed = "1 (DQS keeps it)" if readout.method == "dqs" else "|cos(\N{GREEK SMALL LETTER THETA}/2)|"
    _value_row(box, "Mid-ring radius", f"{readout.mid_ring_blender:.8f}")
    _value_row(box, f"Closed form {closed}", f"{readout.mid_ring_closed_form:.8f}")
    _value_row(box, "Bind-pose drift", f"{readout.bind_drift:.3g}")
    _value_row(box, "numpy vs Blender", f"{readout.numpy_vs_blender:.3g}")
    for finding in readout.findings:
        _wrapped(box, finding.message, SEVERITY_ICONS[finding.severity])


class SKIN_AUDIT_PT_audit(SkinAuditPanel, bpy.types.Panel):
    """Audit the active mesh's skinning, or every mesh the active armature deforms"""

    bl_label = "Audit"
    bl_parent_id = "SKIN_AUDIT_PT_main"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.skin_audit
        layout.use_property_split = True
        layout.use_property_decorate = False
        col = layout.column()
        col.prop(settings, "max_influences")
        col.prop(settings, "use_gltf_tolerance")
        sub = col.column()
        sub.active = not settings.use_gltf_tolerance
        sub.prop(settings, "weight_tolerance")
        col.prop(settings, "test_pose_angle")
        col.prop(settings, "target")
        layout.operator("skin_audit.run_audit", icon="VIEWZOOM")
        row = layout.row(align=True)
        row.operator("skin_audit.preview_engine", icon="DUPLICATE")
        row.operator("skin_audit.remove_engine_preview", text="", icon="X")


class SKIN_AUDIT_PT_findings(SkinAuditPanel, bpy.types.Panel):
    """What the last audit found, with buttons that select it"""

    bl_label = "Findings"
    bl_parent_id = "SKIN_AUDIT_PT_main"

    @classmethod
    def poll(cls, context):
        return super().poll(context) and state.audit_result(context.scene.name) is not None

    def draw(self, context):
        layout = self.layout
        result = state.audit_result(context.scene.name)
        if result.error:
            box = layout.box()
            box.alert = True
            _wrapped(box, result.error, "CANCEL")
            return
        for rig_index, rig in enumerate(result.rigs):
            _draw_rig(layout.box(), rig, rig_index)
        for mesh_index, audit in enumerate(result.meshes):
            box = layout.box()
            title = f"{audit.object} ({audit.vertices} vertices)"
            box.label(text=title, icon="MESH_DATA")
            if audit.armature:
                box.label(text=f"deformed by {audit.armature}", icon="ARMATURE_DATA")
            if not audit.findings:
                box.label(text="No findings", icon="CHECKMARK")
            for finding_index, finding in enumerate(audit.findings):
                _draw_finding(box, finding, mesh_index, finding_index, bool(audit.armature))
        row = layout.row(align=True)
        if result.measure_names():
            row.operator_menu_enum("skin_audit.show_heatmap", "measure", text="Heatmap", icon="COLOR")
            row.operator("skin_audit.clear_heatmap", text="", icon="X")
        layout.operator("skin_audit.export_report", icon="EXPORT")


def _finding_label(row, finding: Finding) -> None:
    count = f" ({finding.count})" if finding.count else ""
    row.label(text=f"{finding.code}{count}", icon=SEVERITY_ICONS[finding.severity])


def _draw_rig(box, rig: RigAudit, rig_index: int) -> None:
    """One armature's entry: its meshes and its findings (reported once, not per mesh)."""
    box.label(text=rig.armature, icon="ARMATURE_DATA")
    if rig.meshes:
        _wrapped(box, "meshes: " + ", ".join(rig.meshes), "MESH_DATA")
    if not rig.findings:
        box.label(text="No findings", icon="CHECKMARK")
    for finding_index, finding in enumerate(rig.findings):
        row = box.row(align=True)
        _finding_label(row, finding)
        if finding.bones:
            op = row.operator("skin_audit.select_rig_finding", text="", icon="BONE_DATA")
            op.rig_index, op.finding_index = rig_index, finding_index
        if finding.code in FIXABLE:
            op = row.operator("skin_audit.fix_finding", text="", icon="TOOL_SETTINGS")
            op.rig_index, op.finding_index = rig_index, finding_index
        _wrapped(box, finding.message)


def _draw_finding(layout, finding: Finding, mesh_index: int, finding_index: int, has_armature: bool) -> None:
    row = layout.row(align=True)
    _finding_label(row, finding)
    if finding.vertices:
        op = row.operator("skin_audit.select_finding", text="", icon="VERTEXSEL")
        op.mesh_index, op.finding_index, op.target = mesh_index, finding_index, "VERTICES"
    if finding.bones and has_armature:
        op = row.operator("skin_audit.select_finding", text="", icon="BONE_DATA")
        op.mesh_index, op.finding_index, op.target = mesh_index, finding_index, "BONES"
    if has_armature and finding.code in FIXABLE:
        op = row.operator("skin_audit.fix_finding", text="", icon="TOOL_SETTINGS")
        op.mesh_index, op.finding_index = mesh_index, finding_index
    if has_armature and all(k in finding.details for k in ("bone", "axis", "degrees")):
        op = row.operator("skin_audit.show_test_pose", text="", icon="POSE_HLT")
        op.mesh_index, op.finding_index = mesh_index, finding_index
    _wrapped(layout, finding.message)


CLASSES = (
    SKIN_AUDIT_PT_main,
    SKIN_AUDIT_PT_twist,
    SKIN_AUDIT_PT_audit,
    SKIN_AUDIT_PT_findings,
)
