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
from .actions import has_engine_previews

#: Blender icons for the three severities.
SEVERITY_ICONS = {"INFO": "INFO", "WARNING": "ERROR", "ERROR": "CANCEL"}

#: Characters per line when a message is wrapped to the sidebar's default width (about 290 px).
WRAP = 38
#: Characters per line in the finding-text popup.
POPUP_WRAP = 72


def _wrapped(layout, text: str, icon: str = "NONE", wrap: int = WRAP) -> None:
    """A long message as several labels; the icon on the first line only."""
    col = layout.column(align=True)
    for i, line in enumerate(textwrap.wrap(text, wrap) or [""]):
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
            if result.stale:
                draw_stale(layout, result.stale)


def draw_stale(layout, stale: str) -> None:
    """The results may describe data an undo or redo replaced: say so, with the way out."""
    box = layout.box()
    box.alert = True
    box.label(text=f"Outdated by {stale}", icon="ERROR")
    box.operator("skin_audit.audit_again", icon="FILE_REFRESH")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _verdict(result: state.AuditResult) -> str:
    if result.error:
        return "Last audit failed"
    counts = result.counts()
    if not any(counts.values()):
        return "Last audit: no findings"
    parts = [_plural(counts["ERROR"], "error"), _plural(counts["WARNING"], "warning"),
             _plural(counts["INFO"], "note")]
    return ", ".join(p for p in parts if not p.startswith("0 "))


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
        # Names inside the fields: a split layout cuts them at the sidebar's default width.
        col = layout.column(align=True)
        col.prop(settings, "max_influences")
        col.prop(settings, "test_pose_angle")
        col.prop(settings, "play_actions")
        col = layout.column(align=True)
        col.prop(settings, "use_gltf_tolerance")
        sub = col.column(align=True)
        sub.active = not settings.use_gltf_tolerance
        sub.prop(settings, "weight_tolerance", text="Sum Tolerance")
        row = layout.row(align=True)
        row.label(text="Engine")
        row.prop(settings, "target", text="")
        layout.operator("skin_audit.run_audit", icon="VIEWZOOM")
        layout.operator("skin_audit.preview_engine", text="Preview in Engine", icon="DUPLICATE")
        if has_engine_previews(context.scene):
            layout.operator("skin_audit.remove_engine_preview", text="Remove Preview", icon="X")


#: Width of the icon buttons beside a finding (1 = Blender's): narrower leaves its line room.
BUTTON_SCALE = 0.85

#: Worst first.
SEVERITY_RANK = {"ERROR": 0, "WARNING": 1, "INFO": 2}

#: The per-vertex measures the heatmap paints: a short name and what blue and red mean.
MEASURES = {
    "weight_sum": ("Weight sum", "sum of deform weights (1 = normalised)"),
    "influences": ("Influences", "deform weights per vertex"),
    "numpy_vs_blender": ("Recompute error", "distance, numpy vs Blender, scene units"),
    "bind_drift": ("Bind-pose drift", "move at the rest pose, scene units"),
    "engine_divergence": ("Engine divergence", "distance from Blender in the engine, scene units"),
    "asymmetry": ("Asymmetry", "weight difference from the mirror vertex"),
    "stray": ("Stray weights", "1 where a weight bleeds from its bone"),
    "collapse": ("Collapse", "1 - smallest singular value at the worst test pose"),
    "volume_loss": ("Volume loss", "1 - volume kept (determinant) at the worst test pose"),
}

#: Characters of a finding's line: what fits beside two icons at the sidebar's default width
#: (measured on the windowed screenshots: about 180 px for the text, Blender 4.3, UI scale 1).
LINE_CHARS = 27
#: Shorter words for the codes whose name is long; the others read as their code.
SHORT_WHAT = {
    "weight-asymmetry": "asymmetric",
    "weights-not-normalized": "not normalised",
    "unweighted-vertices": "unweighted",
    "too-many-influences": "too many bones",
    "stray-weights": "stray",
    "twist-collapse": "collapse",
    "volume-loss": "volume loss",
    "engine-divergence": "engine differs",
    "group-without-bone": "group, no bone",
    "deform-bone-without-weights": "bone, no weight",
    "weights-on-non-deform-bone": "non-deform bone",
    "mirror-axis-convention": "mirror axis",
    "skinning-mismatch": "recompute differs",
    "sweep-mismatch": "sweep differs",
    "bind-pose-drift": "bind drift",
    "multiple-root-bones": "root bones",
}


def measure_label(name: str) -> str:
    return MEASURES.get(name, (name.replace("_", " ").capitalize(), ""))[0]


def short_line(finding: Finding) -> str:
    """One line for the sidebar, at most LINE_CHARS: how many, what, where (the bone or group cut to
    fit; the full text is a click away)."""
    count = f"{finding.count} " if finding.count else ""
    what = SHORT_WHAT.get(finding.code, finding.code.replace("-", " "))
    line = f"{count}{what}"[:LINE_CHARS]
    names = (str(finding.details["bone"]),) if "bone" in finding.details else (finding.groups or finding.bones)
    if not names:
        return line
    more = f" +{len(names) - 1}" if len(names) > 1 else ""
    room = LINE_CHARS - len(line) - 2 - len(more)
    if room < 4:
        return line
    name = names[0] if len(names[0]) <= room else names[0][:room - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return f"{line}: {name}{more}"


def worst_first(findings) -> list[tuple[int, Finding]]:
    """(index, finding) pairs, errors first, then warnings, then notes; stable within each."""
    return sorted(enumerate(findings), key=lambda pair: SEVERITY_RANK[pair[1].severity])


def draw_finding_text(layout, finding: Finding, index: int, *, mesh_index: int, rig_index: int,
                      armature: bool, buttons: bool) -> None:
    """The whole finding, wrapped, and every button acting on it with its name (the popup of the
    finding's text button)."""
    layout.label(text=f"{finding.code} ({finding.severity.lower()})", icon=SEVERITY_ICONS[finding.severity])
    _wrapped(layout, finding.message, wrap=POPUP_WRAP)
    names = ", ".join(finding.bones[:6] or finding.groups[:6])
    if names:
        _wrapped(layout, f"{'bones' if finding.bones else 'groups'}: {names}", wrap=POPUP_WRAP)
    counts = [_plural(len(finding.vertices), "vertex").replace("vertexs", "vertices"),
              _plural(len(finding.bones), "bone"), _plural(len(finding.groups), "group")]
    listed = ", ".join(c for c in counts if not c.startswith("0 "))
    if listed:
        layout.label(text=listed)
    col = layout.column(align=True)
    col.enabled = buttons
    _action_buttons(col, finding, index, mesh_index=mesh_index, rig_index=rig_index, armature=armature,
                    labelled=True)


class SKIN_AUDIT_PT_findings(SkinAuditPanel, bpy.types.Panel):
    """What the last audit found, worst first, one line each; the full text a click away"""

    bl_label = "Findings"
    bl_parent_id = "SKIN_AUDIT_PT_main"

    @classmethod
    def poll(cls, context):
        return super().poll(context) and state.audit_result(context.scene.name) is not None

    def draw(self, context):
        layout = self.layout
        settings = context.scene.skin_audit
        result = state.audit_result(context.scene.name)
        if result.error:
            box = layout.box()
            box.alert = True
            _wrapped(box, result.error, "CANCEL")
            return
        if result.stale:
            draw_stale(layout, result.stale)
        notes = sum(f.severity == "INFO" for f in result.findings)
        if notes:
            icon = "DISCLOSURE_TRI_DOWN" if settings.show_notes else "DISCLOSURE_TRI_RIGHT"
            layout.prop(settings, "show_notes", text=f"Show {_plural(notes, 'note')} (INFO)", icon=icon,
                        emboss=False)
        buttons = not result.stale
        for rig_index, rig in enumerate(result.rigs):
            _draw_rig(layout.box(), rig, rig_index, settings.show_notes, buttons)
        for mesh_index, audit in enumerate(result.meshes):
            box = layout.box()
            box.label(text=f"{audit.object} ({audit.vertices} verts)", icon="MESH_DATA")
            _draw_findings(box, audit.findings, settings.show_notes, buttons, mesh_index=mesh_index,
                           armature=bool(audit.armature))
        row = layout.row(align=True)
        row.enabled = buttons
        if result.measure_names():
            row.operator_menu_enum("skin_audit.show_heatmap", "measure", text="Heatmap", icon="COLOR")
            row.operator("skin_audit.clear_heatmap", text="Clear", icon="X")
        row = layout.row()
        row.enabled = buttons
        row.operator("skin_audit.export_report", text="Export Report (JSON)", icon="EXPORT")
        shown = state.heatmap(context.scene.name)
        if shown is not None:
            _draw_legend(layout.box(), shown)


def _draw_legend(box, shown: state.Heatmap) -> None:
    """Which measure the colours show and the values blue and red stand for."""
    label, meaning = MEASURES.get(shown.measure, (measure_label(shown.measure), ""))
    box.label(text=f"Heatmap: {label}", icon="COLOR")
    row = box.row(align=True)
    if math.isnan(shown.low):
        row.label(text="no finite value: all grey")
    else:
        row.label(text=f"blue {shown.low:.3g}", icon="KEYTYPE_BREAKDOWN_VEC")
        row.label(text=f"red {shown.high:.3g}", icon="KEYTYPE_EXTREME_VEC")
    if meaning:
        _wrapped(box, meaning)


def _action_buttons(layout, finding: Finding, index: int, *, mesh_index: int, rig_index: int, armature: bool,
                    labelled: bool) -> None:
    """The buttons acting on one finding: with their names in its popup, or beside its line the one
    select icon its line has room for (the Fix button says what it changes, so it is in the popup)."""
    def button(idname: str, text: str, icon: str, **props) -> None:
        op = layout.operator(idname, text=text if labelled else "", icon=icon)
        for name, value in props.items():
            setattr(op, name, value)

    if rig_index >= 0:
        if finding.bones:
            button("skin_audit.select_rig_finding", "Select Bones", "BONE_DATA", rig_index=rig_index,
                   finding_index=index)
    else:
        if finding.vertices:
            button("skin_audit.select_finding", "Select Vertices", "VERTEXSEL", mesh_index=mesh_index,
                   finding_index=index, target="VERTICES")
        if finding.bones and armature and (labelled or not finding.vertices):
            button("skin_audit.select_finding", "Select Bones", "BONE_DATA", mesh_index=mesh_index,
                   finding_index=index, target="BONES")
        if labelled and armature and "frame" in finding.details and "action" in finding.details:
            button("skin_audit.jump_to_frame", f"Go to Frame {finding.details['frame']:g} "
                   f"({finding.details['action']})", "TIME", mesh_index=mesh_index, finding_index=index)
        if labelled and armature and all(k in finding.details for k in ("bone", "axis", "degrees")):
            button("skin_audit.show_test_pose", f"Show Worst Pose ({finding.details['bone']})", "POSE_HLT",
                   mesh_index=mesh_index, finding_index=index)
    if labelled and armature and finding.code in FIXABLE:
        where = {"rig_index": rig_index} if rig_index >= 0 else {"mesh_index": mesh_index}
        layout.separator()
        _wrapped(layout, f"Fix: {FIXABLE[finding.code]} (one undo step).", wrap=POPUP_WRAP)
        button("skin_audit.fix_finding", f"Fix {finding.code}", "TOOL_SETTINGS", finding_index=index, **where)


def _draw_findings(box, findings, show_notes: bool, buttons: bool, *, mesh_index: int = -1,
                   rig_index: int = -1, armature: bool = True) -> None:
    if not findings:
        box.label(text="No findings", icon="CHECKMARK")
        return
    hidden = 0
    for index, finding in worst_first(findings):
        if finding.severity == "INFO" and not show_notes:
            hidden += 1
            continue
        row = box.row(align=True)
        row.label(text=short_line(finding), icon=SEVERITY_ICONS[finding.severity])
        sub = row.row(align=True)
        sub.scale_x = BUTTON_SCALE
        op = sub.operator("skin_audit.finding_text", text="", icon="TEXT")
        op.mesh_index, op.rig_index, op.finding_index = mesh_index, rig_index, index
        sub = sub.row(align=True)
        sub.enabled = buttons
        _action_buttons(sub, finding, index, mesh_index=mesh_index, rig_index=rig_index, armature=armature,
                        labelled=False)
    if hidden == len(findings):
        box.label(text=f"{_plural(hidden, 'note')} only", icon="INFO")


def _draw_rig(box, rig: RigAudit, rig_index: int, show_notes: bool, buttons: bool) -> None:
    """One armature's entry: its meshes and its findings (reported once, not per mesh)."""
    box.label(text=rig.armature, icon="ARMATURE_DATA")
    if rig.meshes:
        _wrapped(box, ", ".join(rig.meshes), "MESH_DATA")
    for line in humanoid_lines(rig.skeleton):
        box.label(text=line, icon="OUTLINER_OB_ARMATURE")
    _draw_findings(box, rig.findings, show_notes, buttons, rig_index=rig_index)


def humanoid_lines(skeleton) -> list[str]:
    """A humanoid rig's map in short lines for the sidebar: how many humanoid bones, what is missing,
    the rest pose (nothing for a rig that is no humanoid; the whole map is in the report)."""
    humanoid = skeleton.get("humanoid", {}) if skeleton else {}
    if not humanoid.get("humanoid"):
        return []
    missing = humanoid.get("missing", ())
    lines = [f"Humanoid: {len(humanoid.get('bones', {}))} bones"[:LINE_CHARS]]
    if missing:
        lines.append(f"missing {', '.join(missing)}"[:LINE_CHARS])
    pose = skeleton.get("rest_pose")
    if pose:
        kind = {"t": "T-pose", "a": "A-pose"}.get(pose.get("convention") or "", "no T/A-pose")
        arms = [v["below_horizontal"] for v in pose.get("limbs", {}).values() if "below_horizontal" in v]
        lines.append(f"Rest: {kind}" + (f", arms {max(arms):.0f} deg" if arms else ""))
    return lines


CLASSES = (
    SKIN_AUDIT_PT_main,
    SKIN_AUDIT_PT_twist,
    SKIN_AUDIT_PT_audit,
    SKIN_AUDIT_PT_findings,
)
