# SPDX-License-Identifier: GPL-3.0-or-later
"""The panel's buttons.  Each one's ``run()`` reads settings, calls one function in
``actions`` and forwards its messages with ``self.report``; ``_Button.execute`` turns the
project's errors into a report and a cancel."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from ..blender.build import twist_rig
from ..core.errors import InputError, SkinAuditError
from ..core.findings import worst_severity
from . import actions, state
from .panels import MEASURES, draw_finding_text, measure_label

#: Width of the finding-text popup, in pixels at UI scale 1.
POPUP_WIDTH = 480


def _settings(context: bpy.types.Context):
    scene = context.scene
    return getattr(scene, "skin_audit", None) if scene is not None else None


def _poll_scene(cls, context: bpy.types.Context) -> bool:
    if _settings(context) is None:
        cls.poll_message_set("Needs a scene")
        return False
    return True


def _poll_not_edit(cls, context: bpy.types.Context, what: str) -> bool:
    if context.mode.startswith("EDIT"):
        cls.poll_message_set(f"Leave Edit Mode first: {what} reads the saved mesh")
        return False
    return True


def _poll_object_mode(cls, context: bpy.types.Context, what: str) -> bool:
    if context.mode != "OBJECT":
        cls.poll_message_set(f"Switch to Object Mode to {what}")
        return False
    return True


def _poll_audited(cls, context: bpy.types.Context) -> bool:
    if not _poll_scene(cls, context):
        return False
    result = state.audit_result(context.scene.name)
    if result is None or not result.meshes:
        cls.poll_message_set("Run the audit first")
        return False
    return True


def _poll_fresh(cls, context: bpy.types.Context) -> bool:
    """Audited, and no undo or redo since: the results still describe the data."""
    if not _poll_audited(cls, context):
        return False
    stale = state.audit_result(context.scene.name).stale
    if stale:
        cls.poll_message_set(f"{actions.STALE_TEXT[stale].capitalize()}: press Audit Again")
        return False
    return True


class _Button:
    """Base of the panel's buttons: ``execute`` calls ``run``, which calls one function and
    reports what it did.  The project's own error is reported and cancels; anything else is a
    skin_audit bug: its traceback goes to the console, the user gets one line and the operator
    cancels (the sandbox copies are context managers, so the scene is as before)."""

    def run(self, context: bpy.types.Context) -> None:
        raise NotImplementedError

    def execute(self, context):
        try:
            self.run(context)
        except SkinAuditError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:  # never let a panel button raise
            import traceback

            from ..core.input_guard import one_line

            traceback.print_exc()
            self.report({"ERROR"}, f"skin_audit internal error (a bug; please report it): "
                                   f"{type(exc).__name__}: {one_line(str(exc))}")
            return {"CANCELLED"}
        return {"FINISHED"}


def _report_finding(op: bpy.types.Operator, severity: str, message: str) -> None:
    # An ERROR report means "the operator failed" to Blender (a script calling it
    # gets a RuntimeError); a finding is a result, so it is at most a warning.
    if severity == "ERROR":
        op.report({"WARNING"}, f"Error: {message}")
    else:
        op.report({severity}, message)


class SKIN_AUDIT_OT_build_demo(_Button, bpy.types.Operator):
    """Build the twist demo: a 216-vertex cylinder skinned to two bones (replaces a previous one)"""

    bl_idname = "skin_audit.build_demo"
    bl_label = "Build Demo Rig"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not _poll_scene(cls, context):
            return False
        if not _poll_object_mode(cls, context, "build the demo rig"):
            return False
        return True

    def run(self, context):
        rig = actions.build_demo(context, context.scene.skin_audit)
        self.report({"INFO"}, f"Built {rig.mesh.name!r} skinned to {rig.armature.name!r}")


class SKIN_AUDIT_OT_measure_twist(_Button, bpy.types.Operator):
    """Measure the demo rig at the slider's twist: Blender's mid-ring radius against the closed form"""

    bl_idname = "skin_audit.measure_twist"
    bl_label = "Measure"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        if not _poll_scene(cls, context):
            return False
        if twist_rig.find_demo_rig(context.scene) is None:
            cls.poll_message_set("Build the demo rig first")
            return False
        return _poll_not_edit(cls, context, "measuring")

    def run(self, context):
        readout = actions.measure_twist(context, context.scene.skin_audit)
        for finding in readout.findings:
            _report_finding(self, finding.severity, finding.message)
        self.report({"INFO"}, f"Mid-ring radius {readout.mid_ring_blender:.6g} "
                              f"(closed form {readout.mid_ring_closed_form:.6g})")


class SKIN_AUDIT_OT_run_audit(_Button, bpy.types.Operator):
    """Audit the active mesh, or every mesh the active armature deforms (changes nothing)"""

    bl_idname = "skin_audit.run_audit"
    bl_label = "Run Audit"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        if not _poll_scene(cls, context):
            return False
        if not _poll_not_edit(cls, context, "the audit"):
            return False
        if not actions.meshes_to_audit(context):
            cls.poll_message_set("Select a mesh deformed by an armature, or the armature")
            return False
        return True

    def run(self, context):
        result = actions.run_audit(context, context.scene.skin_audit)
        # Findings are results, not a failure: at most a warning (an ERROR report would raise in scripts).
        level = "INFO" if worst_severity(result.findings) in (None, "INFO") else "WARNING"
        self.report({level}, f"Audited {result.summary()}")


class SKIN_AUDIT_OT_audit_again(_Button, bpy.types.Operator):
    """Audit the last audit's meshes again, with its settings (after an undo or redo)"""

    bl_idname = "skin_audit.audit_again"
    bl_label = "Audit Again"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return _poll_audited(cls, context) and _poll_not_edit(cls, context, "the audit")

    def run(self, context):
        result = actions.audit_again(context)
        level = "INFO" if worst_severity(result.findings) in (None, "INFO") else "WARNING"
        self.report({level}, f"Audited {result.summary()}")


class SKIN_AUDIT_OT_finding_text(_Button, bpy.types.Operator):
    """Show this finding's full text (also written to the Info editor)"""

    bl_idname = "skin_audit.finding_text"
    bl_label = "Finding Text"
    bl_options = {"REGISTER", "INTERNAL"}

    mesh_index: IntProperty(name="Mesh", description="Audited mesh number (-1: a rig finding)", min=-1,
                            default=-1, options={"SKIP_SAVE"})
    rig_index: IntProperty(name="Rig", description="Audited rig number, for a rig finding", min=-1,
                           default=-1, options={"SKIP_SAVE"})
    finding_index: IntProperty(name="Finding", description="Finding number", min=0, options={"SKIP_SAVE"})

    @classmethod
    def poll(cls, context):
        return _poll_audited(cls, context)

    @classmethod
    def description(cls, context, properties):
        finding = actions.finding_for_button(context, properties.mesh_index, properties.rig_index,
                                             properties.finding_index)
        return finding.message if finding is not None else cls.__doc__

    def _finding(self, context):
        finding = actions.finding_for_button(context, self.mesh_index, self.rig_index, self.finding_index)
        if finding is None:
            raise InputError("that finding is gone: run the audit again")
        return finding

    def invoke(self, context, _event):
        if self.execute(context) == {"CANCELLED"}:
            return {"CANCELLED"}
        return context.window_manager.invoke_popup(self, width=POPUP_WIDTH)

    def draw(self, context):
        finding = actions.finding_for_button(context, self.mesh_index, self.rig_index, self.finding_index)
        if finding is None:
            return
        result = state.audit_result(context.scene.name)
        armature = bool(result.meshes[self.mesh_index].armature) if self.mesh_index >= 0 else True
        draw_finding_text(self.layout, finding, self.finding_index, mesh_index=self.mesh_index,
                          rig_index=self.rig_index, armature=armature, buttons=not result.stale)

    def run(self, context):
        finding = self._finding(context)
        _report_finding(self, finding.severity, f"{finding.code}: {finding.message}")


class SKIN_AUDIT_OT_select_finding(_Button, bpy.types.Operator):
    """Select what this finding points at: its vertices (Edit Mode) or its bones (Pose Mode)"""

    bl_idname = "skin_audit.select_finding"
    bl_label = "Select Finding"
    bl_options = {"REGISTER", "UNDO"}

    mesh_index: IntProperty(name="Mesh", description="Audited mesh number", min=0, options={"SKIP_SAVE"})
    finding_index: IntProperty(name="Finding", description="Finding number of that mesh", min=0,
                               options={"SKIP_SAVE"})
    target: EnumProperty(
        name="Select",
        items=(("VERTICES", "Vertices", "Select the finding's vertices in Edit Mode"),
               ("BONES", "Bones", "Select the finding's bones in Pose Mode")),
        default="VERTICES",
        options={"SKIP_SAVE"},
    )

    @classmethod
    def poll(cls, context):
        return _poll_fresh(cls, context)

    @classmethod
    def description(cls, context, properties):
        result = state.audit_result(context.scene.name) if context.scene is not None else None
        meshes = result.meshes if result is not None else ()
        if properties.mesh_index < len(meshes):
            findings = meshes[properties.mesh_index].findings
            if properties.finding_index < len(findings):
                what = properties.target.lower()
                return f"Select the {what} of: {findings[properties.finding_index].message}"
        return cls.__doc__

    def run(self, context):
        selected = actions.select_finding(context, self.mesh_index, self.finding_index, self.target)
        self.report({"INFO"}, f"Selected {selected.count} {selected.kind} of {selected.object!r}")


class SKIN_AUDIT_OT_select_rig_finding(_Button, bpy.types.Operator):
    """Select the bones this armature finding names (Pose Mode)"""

    bl_idname = "skin_audit.select_rig_finding"
    bl_label = "Select Rig Finding"
    bl_options = {"REGISTER", "UNDO"}

    rig_index: IntProperty(name="Rig", description="Audited armature number", min=0, options={"SKIP_SAVE"})
    finding_index: IntProperty(name="Finding", description="Finding number of that armature", min=0,
                               options={"SKIP_SAVE"})

    @classmethod
    def poll(cls, context):
        return _poll_fresh(cls, context)

    @classmethod
    def description(cls, context, properties):
        result = state.audit_result(context.scene.name) if context.scene is not None else None
        rigs = result.rigs if result is not None else ()
        if properties.rig_index < len(rigs) and properties.finding_index < len(rigs[properties.rig_index].findings):
            return f"Select the bones of: {rigs[properties.rig_index].findings[properties.finding_index].message}"
        return cls.__doc__

    def run(self, context):
        selected = actions.select_rig_finding(context, self.rig_index, self.finding_index)
        self.report({"INFO"}, f"Selected {selected.count} {selected.kind} of {selected.object!r}")


class SKIN_AUDIT_OT_show_test_pose(_Button, bpy.types.Operator):
    """Pose the armature at this finding's worst test pose (all other channels at rest; undo restores)"""

    bl_idname = "skin_audit.show_test_pose"
    bl_label = "Show Test Pose"
    bl_options = {"REGISTER", "UNDO"}

    mesh_index: IntProperty(name="Mesh", description="Audited mesh number", min=0, options={"SKIP_SAVE"})
    finding_index: IntProperty(name="Finding", description="Finding number of that mesh", min=0,
                               options={"SKIP_SAVE"})

    @classmethod
    def poll(cls, context):
        if not _poll_fresh(cls, context):
            return False
        return _poll_not_edit(cls, context, "posing")

    def run(self, context):
        label = actions.show_test_pose(context, self.mesh_index, self.finding_index)
        self.report({"INFO"}, f"Showing test pose {label}")


#: Blender keeps pointers into a dynamic enum's strings: hold them while they may be shown.
_MEASURE_ITEMS: list[tuple[str, str, str]] = []


def _measure_items(_self, context):
    result = state.audit_result(context.scene.name) if context and context.scene else None
    names = result.measure_names() if result is not None else ()
    _MEASURE_ITEMS[:] = [(n, measure_label(n), f"Paint {MEASURES[n][1] if n in MEASURES else n}: "
                          "blue lowest, red highest") for n in names]
    return _MEASURE_ITEMS


class SKIN_AUDIT_OT_jump_to_frame(_Button, bpy.types.Operator):
    """Play the finding's action, go to its worst frame and select its vertices (one undo step)"""

    bl_idname = "skin_audit.jump_to_frame"
    bl_label = "Go to Worst Frame"
    bl_options = {"REGISTER", "UNDO"}

    mesh_index: IntProperty(name="Mesh", description="Audited mesh number", min=0, options={"SKIP_SAVE"})
    finding_index: IntProperty(name="Finding", description="Finding number of that mesh", min=0,
                               options={"SKIP_SAVE"})

    @classmethod
    def poll(cls, context):
        if not _poll_fresh(cls, context):
            return False
        return _poll_not_edit(cls, context, "changing the frame")

    def run(self, context):
        shown = actions.jump_to_frame(context, self.mesh_index, self.finding_index)
        self.report({"INFO"}, f"Showing {shown}")


class SKIN_AUDIT_OT_show_heatmap(_Button, bpy.types.Operator):
    """Paint a per-vertex measure of the audit on the mesh (red high, blue low) and show it in the viewport"""

    bl_idname = "skin_audit.show_heatmap"
    bl_label = "Show Heatmap"
    bl_options = {"REGISTER", "UNDO"}

    measure: EnumProperty(name="Measure", description="Per-vertex measure to paint", items=_measure_items)

    @classmethod
    def poll(cls, context):
        if not _poll_fresh(cls, context):
            return False
        if not _poll_object_mode(cls, context, "paint the heatmap"):
            return False
        if not state.audit_result(context.scene.name).measure_names():
            cls.poll_message_set("The audit measured nothing per vertex")
            return False
        return True

    def run(self, context):
        painted = actions.show_heatmap(context, self.measure)
        self.report({"INFO"}, f"Heatmap of {painted.measure} on {', '.join(painted.objects)}: "
                              f"blue {painted.low:.4g}, red {painted.high:.4g}")


class SKIN_AUDIT_OT_clear_heatmap(_Button, bpy.types.Operator):
    """Remove the heatmap colour attribute from the audited meshes"""

    bl_idname = "skin_audit.clear_heatmap"
    bl_label = "Clear Heatmap"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not _poll_audited(cls, context):
            return False
        if not _poll_object_mode(cls, context, "remove the heatmap"):
            return False
        return True

    def run(self, context):
        removed = actions.clear_heatmap(context)
        self.report({"INFO"}, f"Removed the heatmap from {removed} mesh(es)")


class SKIN_AUDIT_OT_export_report(_Button, bpy.types.Operator, ExportHelper):
    """Save the last audit as a JSON report"""

    bl_idname = "skin_audit.export_report"
    bl_label = "Export Report"
    bl_options = {"REGISTER"}

    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return _poll_fresh(cls, context)

    def run(self, context):
        path = actions.export_report(context, self.filepath)
        self.report({"INFO"}, f"Wrote {path}")


class SKIN_AUDIT_OT_preview_engine(_Button, bpy.types.Operator):
    """Show a copy of the active mesh beside it, deformed as the chosen engine draws it at this pose"""

    bl_idname = "skin_audit.preview_engine"
    bl_label = "Preview in Engine"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not _poll_scene(cls, context):
            return False
        if not _poll_object_mode(cls, context, "preview in an engine"):
            return False
        if actions.preview_source(context) is None:
            cls.poll_message_set("Select a mesh deformed by an armature (not a preview)")
            return False
        return True

    def run(self, context):
        copy, nowhere = actions.show_engine_preview(context, context.scene.skin_audit)
        if nowhere:
            self.report({"WARNING"}, f"{nowhere} vertices have no position in this engine; left at rest")
        self.report({"INFO"}, f"Showing {copy.name!r} (remove it with Remove Preview)")


class SKIN_AUDIT_OT_remove_engine_preview(_Button, bpy.types.Operator):
    """Delete the engine preview copies of this scene"""

    bl_idname = "skin_audit.remove_engine_preview"
    bl_label = "Remove Preview"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not _poll_scene(cls, context):
            return False
        if not _poll_object_mode(cls, context, "remove the preview"):
            return False
        if not actions.has_engine_previews(context.scene):
            cls.poll_message_set("No engine preview to remove")
            return False
        return True

    def run(self, context):
        removed = actions.remove_engine_previews(context)
        self.report({"INFO"}, f"Removed {removed} engine preview(s)")


class SKIN_AUDIT_OT_fix_finding(_Button, bpy.types.Operator):
    """Fix this finding: change only what it names (one undo step), then audit again"""

    bl_idname = "skin_audit.fix_finding"
    bl_label = "Fix Finding"
    bl_options = {"REGISTER", "UNDO"}

    mesh_index: IntProperty(name="Mesh", description="Audited mesh number (-1: a rig finding)", min=-1,
                            default=-1, options={"SKIP_SAVE"})
    rig_index: IntProperty(name="Rig", description="Audited rig number, for a rig finding", min=-1,
                           default=-1, options={"SKIP_SAVE"})
    finding_index: IntProperty(name="Finding", description="Finding number", min=0, options={"SKIP_SAVE"})
    max_influences: IntProperty(name="Max Influences", description="Too many influences: deform weights "
                                "kept per vertex (0: the audit's setting)", min=0, max=64, default=0)
    stray_action: EnumProperty(
        name="Stray",
        items=(("islands", "Islands", "Remove the islands and far weights the audit found"),
               ("below", "Below Threshold", "Remove every deform weight below the threshold")),
        default="islands",
    )
    threshold: FloatProperty(name="Threshold", description="Stray weights: remove deform weights below this",
                             min=1e-6, max=0.999, default=0.01, precision=4)
    group_action: EnumProperty(
        name="Group",
        items=(("remove", "Remove", "Delete the vertex group"),
               ("merge", "Merge", "Add its weights to a deform bone's group, then delete it")),
        default="remove",
    )
    merge_into: StringProperty(name="Merge Into", description="Deform bone receiving the weights "
                               "(empty: the nearest unlocked deform bone)", default="")
    direction: EnumProperty(
        name="Mirror",
        items=(("left-to-right", "Left to Right", "Copy the left side's weights to the right side"),
               ("right-to-left", "Right to Left", "Copy the right side's weights to the left side")),
        default="left-to-right",
    )

    @classmethod
    def poll(cls, context):
        return _poll_fresh(cls, context) and _poll_not_edit(cls, context, "a fix")

    @classmethod
    def description(cls, context, properties):
        from ..blender.fix.apply import FIXABLE

        finding = actions.finding_for_button(context, properties.mesh_index, properties.rig_index,
                                             properties.finding_index)
        if finding is None or finding.code not in FIXABLE:
            return cls.__doc__
        return f"Fix {finding.code}: {FIXABLE[finding.code]}"

    def run(self, context):
        from ..blender.fix.apply import FixSettings

        limit = self.max_influences or context.scene.skin_audit.max_influences
        fix = FixSettings(max_influences=limit, threshold=self.threshold, group_action=self.group_action,
                          merge_into=self.merge_into, mirror_direction=self.direction,
                          stray_action=self.stray_action)
        outcome = actions.fix_finding(context, self.mesh_index, self.rig_index, self.finding_index, fix)
        self.report({"INFO"}, f"{outcome.object}: {outcome.code} {outcome.before.get(outcome.code, 0)} -> "
                              f"{outcome.after.get(outcome.code, 0)}; {outcome.message}")


CLASSES = (
    SKIN_AUDIT_OT_build_demo,
    SKIN_AUDIT_OT_measure_twist,
    SKIN_AUDIT_OT_run_audit,
    SKIN_AUDIT_OT_audit_again,
    SKIN_AUDIT_OT_finding_text,
    SKIN_AUDIT_OT_select_finding,
    SKIN_AUDIT_OT_select_rig_finding,
    SKIN_AUDIT_OT_show_test_pose,
    SKIN_AUDIT_OT_jump_to_frame,
    SKIN_AUDIT_OT_show_heatmap,
    SKIN_AUDIT_OT_clear_heatmap,
    SKIN_AUDIT_OT_export_report,
    SKIN_AUDIT_OT_preview_engine,
    SKIN_AUDIT_OT_remove_engine_preview,
    SKIN_AUDIT_OT_fix_finding,
)
