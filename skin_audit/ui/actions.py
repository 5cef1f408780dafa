# SPDX-License-Identifier: GPL-3.0-or-later
"""What each panel button does, as plain functions the operators call.

Each function reads the scene, calls ``blender/`` and ``core/``, keeps the
results in ``state`` for the panel, and raises ``SkinAuditError`` with a
message a person can act on.  Tests call the operators; nothing here draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import bpy

from ..blender.build import twist_rig
from ..blender.run import audit_scene
from ..blender.run.audit_files import make_report
from ..blender.run.twist_run import run_twist_experiment
from ..blender.show import engine_preview, heatmap, pose_preview, selection
from ..core.audit.finite import finite_audit
from ..core.audit.options import AuditOptions
from ..core.audit.report import FileAudit
from ..core.engines.targets import get_target
from ..core.errors import InputError, SkinAuditError
from ..core.input_guard import INPUT_SUFFIXES, check_report_target
from ..core.output_files import json_text, write_all
from . import state
from .properties import SkinAuditSettings, audit_options


@contextmanager
def progress(context: bpy.types.Context) -> Iterator[Callable[[int, int], None]]:
    """A ``step(done, total)`` callback driving the window manager's progress indicator.

    A no-op when there is no window to show it in.
    """
    wm = context.window_manager
    if wm is None or context.window is None:
        yield lambda _done, _total: None
        return
    wm.progress_begin(0.0, 1.0)
    try:
        yield lambda done, total: wm.progress_update(done / max(total, 1))
    finally:
        wm.progress_end()


# Twist demo ------------------------------------------------------------------


def build_demo(context: bpy.types.Context, settings: SkinAuditSettings) -> twist_rig.DemoRig:
    """Build (or rebuild) the demo rig, posed and switched as the panel's settings say."""
    rig = twist_rig.build_demo_rig(context)
    twist_rig.set_twist(rig, math.degrees(settings.twist_angle))
    twist_rig.set_method(rig, settings.method.lower())
    state.set_twist_readout(context.scene.name, None)
    return rig


def require_demo_rig(scene: bpy.types.Scene) -> twist_rig.DemoRig:
    rig = twist_rig.find_demo_rig(scene)
    if rig is None:
        raise InputError(f"scene {scene.name!r} has no demo rig: press Build Demo Rig first")
    return rig


def measure_twist(context: bpy.types.Context, settings: SkinAuditSettings) -> state.TwistReadout:
    """Measure the demo rig at the slider's angle and method; keep the numbers for the panel."""
    rig = require_demo_rig(context.scene)
    method = settings.method.lower()
    run = run_twist_experiment([math.degrees(settings.twist_angle)], [method], context=context, rig=rig)
    pose, bind = run.checks[0], run.binds[0]
    readout = state.TwistReadout(
        angle_deg=pose.angle_deg,
        method=method,
        mid_ring_blender=pose.mid_ring_blender,
        mid_ring_closed_form=pose.mid_ring_analytic,
        bind_drift=bind.blender_drift,
        numpy_vs_blender=pose.numpy_vs_blender,
        findings=run.findings,
    )
    state.set_twist_readout(context.scene.name, readout)
    return readout


# Audit -----------------------------------------------------------------------


def meshes_to_audit(context: bpy.types.Context) -> list[bpy.types.Object]:
    """The active mesh, or the meshes the active armature deforms."""
    return audit_scene.meshes_for_context(context)


def run_audit(context: bpy.types.Context, settings: SkinAuditSettings) -> state.AuditResult:
    """Audit the meshes of the context; the result (or the error) is kept for the panel.

    Changes nothing in the user's data.
    """
    scene_name = context.scene.name
    options = audit_options(settings)
    try:
        meshes = audit_scene.meshes_for_context(context)
        if not meshes:
            raise InputError("nothing to audit: select a mesh with an Armature modifier, or its armature")
        with progress(context) as step:
            # Rig entries keep each armature's findings once (not repeated on every mesh).
            rig_audits, mesh_audits = audit_scene.audit_rigs(context, meshes, options, progress=step)
        rigs = tuple(finite_audit(r) for r in rig_audits)
        audits = tuple(finite_audit(a) for a in mesh_audits)
    except Exception as exc:  # the panel shows every failure, a bug of ours too; the operator reports it
        message = str(exc) if isinstance(exc, SkinAuditError) else \
            f"internal error (a skin_audit bug; please report it): {type(exc).__name__}: {exc}"
        state.set_audit_result(scene_name, state.AuditResult(options=options, error=message))
        raise
    result = state.AuditResult(meshes=audits, options=options, rigs=rigs)
    state.set_audit_result(scene_name, result)
    return result


def require_audit(scene: bpy.types.Scene, *, fresh: bool = True) -> state.AuditResult:
    """The scene's last audit; with ``fresh``, refused once an undo or redo may have changed the data."""
    result = state.audit_result(scene.name)
    if result is None or not result.meshes:
        raise InputError(f"scene {scene.name!r} has no audit results: press Run Audit first")
    if fresh and result.stale:
        raise InputError(f"{STALE_TEXT[result.stale]}: press Audit Again first")
    return result


#: What the panel and the errors say about results an undo or redo may have outdated.
STALE_TEXT = {
    "undo": "an undo changed the data since the last audit",
    "redo": "a redo changed the data since the last audit",
}


def _audit_again(context: bpy.types.Context, result: state.AuditResult) -> state.AuditResult:
    """The meshes of ``result`` that still exist, audited again with its options; kept for the panel."""
    names = dict.fromkeys(a.object for a in result.meshes)
    meshes = [bpy.data.objects[n] for n in names if n in bpy.data.objects]
    if not meshes:
        raise InputError(f"none of the audited meshes ({', '.join(names)}) exists any more: select one and "
                         "press Run Audit")
    options = result.options if result.options is not None else AuditOptions()
    with progress(context) as step:
        rigs, audits = audit_scene.audit_rigs(context, meshes, options, progress=step)
    fresh = state.AuditResult(meshes=tuple(finite_audit(a) for a in audits), options=options,
                              rigs=tuple(finite_audit(r) for r in rigs))
    state.set_audit_result(context.scene.name, fresh)
    return fresh


def audit_again(context: bpy.types.Context) -> state.AuditResult:
    """Audit the last audit's meshes again (after an undo or redo), whatever is selected now."""
    return _audit_again(context, require_audit(context.scene, fresh=False))


def _audited_object(name: str) -> bpy.types.Object:
    obj = bpy.data.objects.get(name)
    if obj is None:
        raise InputError(f"object {name!r} no longer exists (renamed or deleted?): run the audit again")
    return obj


def _finding_at(context: bpy.types.Context, mesh_index: int, finding_index: int):
    """(MeshAudit, Finding) the panel's button points at, or a clear error when the results moved on."""
    result = require_audit(context.scene)
    if not 0 <= mesh_index < len(result.meshes):
        raise InputError(f"there is no audited mesh number {mesh_index}: run the audit again")
    audit = result.meshes[mesh_index]
    if not 0 <= finding_index < len(audit.findings):
        raise InputError(f"{audit.object!r} has no finding number {finding_index}: run the audit again")
    return audit, audit.findings[finding_index]


@dataclass(frozen=True)
class Selected:
    object: str
    kind: str  # 'vertices' or 'bones'
    count: int


def select_finding(context: bpy.types.Context, mesh_index: int, finding_index: int, target: str) -> Selected:
    """Select the vertices (Edit Mode) or bones (Pose Mode) that a finding names."""
    audit, finding = _finding_at(context, mesh_index, finding_index)
    if target == "BONES":
        if not finding.bones or not audit.armature:
            raise InputError(f"finding {finding.code!r} names no bone")
        armature = _audited_object(audit.armature)
        return Selected(armature.name, "bones", selection.select_bones(context, armature, finding.bones))
    if not finding.vertices:
        raise InputError(f"finding {finding.code!r} names no vertex")
    obj = _audited_object(audit.object)
    return Selected(obj.name, "vertices", selection.select_vertices(context, obj, finding.vertices))


def select_rig_finding(context: bpy.types.Context, rig_index: int, finding_index: int) -> Selected:
    """Select the bones a rig entry's finding names, in Pose Mode on its armature."""
    result = require_audit(context.scene)
    if not 0 <= rig_index < len(result.rigs):
        raise InputError(f"there is no audited rig number {rig_index}: run the audit again")
    rig = result.rigs[rig_index]
    if not 0 <= finding_index < len(rig.findings):
        raise InputError(f"{rig.armature!r} has no finding number {finding_index}: run the audit again")
    finding = rig.findings[finding_index]
    if not finding.bones:
        raise InputError(f"finding {finding.code!r} names no bone")
    armature = _audited_object(rig.armature)
    return Selected(armature.name, "bones", selection.select_bones(context, armature, finding.bones))


def pose_details(finding) -> tuple[str, str, float] | None:
    """(bone, axis, degrees) of a sweep finding's worst test pose, if it has one."""
    d = finding.details
    if all(k in d for k in ("bone", "axis", "degrees")):
        return str(d["bone"]), str(d["axis"]), float(d["degrees"])
    return None


def show_test_pose(context: bpy.types.Context, mesh_index: int, finding_index: int) -> str:
    """Pose the audited armature at a finding's worst test pose; returns its label."""
    audit, finding = _finding_at(context, mesh_index, finding_index)
    pose = pose_details(finding)
    if pose is None or not audit.armature:
        raise InputError(f"finding {finding.code!r} has no test pose to show")
    pose_preview.apply_test_pose(_audited_object(audit.armature), *pose)
    return str(finding.details.get("pose", f"{pose[0]} {pose[1]} {pose[2]:+g}"))


def jump_to_frame(context: bpy.types.Context, mesh_index: int, finding_index: int) -> str:
    """Play the action an animation finding names on the audited armature, go to its worst frame and
    select the finding's vertices; returns what it shows ("Run, frame 37")."""
    audit, finding = _finding_at(context, mesh_index, finding_index)
    name, frame = finding.details.get("action"), finding.details.get("frame")
    if name is None or frame is None or not audit.armature:
        raise InputError(f"finding {finding.code!r} names no frame of an action")
    action = bpy.data.actions.get(str(name))
    if action is None:
        raise InputError(f"the action {name!r} is gone: run the audit again")
    armature = _audited_object(audit.armature)
    ad = armature.animation_data or armature.animation_data_create()
    ad.action = action
    context.scene.frame_set(int(math.floor(frame)), subframe=float(frame) - math.floor(frame))
    if finding.vertices:
        selection.select_vertices(context, _audited_object(audit.object), finding.vertices)
    return f"{name}, frame {frame:g}"


@dataclass(frozen=True)
class Painted:
    measure: str
    objects: tuple[str, ...]
    low: float
    high: float
    viewports: int


def show_heatmap(context: bpy.types.Context, measure: str) -> Painted:
    """Paint ``measure`` on every audited mesh that has it and show attribute colours."""
    result = require_audit(context.scene)
    painted, lows, highs = [], [], []
    for audit in result.meshes:
        if measure not in audit.measures:
            continue
        obj = _audited_object(audit.object)
        low, high = heatmap.write_heat(obj, audit.measures[measure])
        painted.append(obj.name)
        lows.append(low)
        highs.append(high)
    if not painted:
        raise InputError(f"no audited mesh has the measure {measure!r}")
    viewports = heatmap.show_attribute_colors(context.window_manager)
    shown = Painted(measure, tuple(painted), min(lows), max(highs), viewports)
    state.set_heatmap(context.scene.name, state.Heatmap(measure, shown.objects, shown.low, shown.high))
    return shown


def clear_heatmap(context: bpy.types.Context) -> int:
    """Remove the heatmap attribute from the audited meshes; returns how many had one."""
    result = require_audit(context.scene, fresh=False)
    removed = 0
    for audit in result.meshes:
        obj = bpy.data.objects.get(audit.object)
        if obj is not None and heatmap.remove_heat(obj):
            removed += 1
    heatmap.hide_attribute_colors(context.window_manager)
    state.set_heatmap(context.scene.name, None)
    return removed


#: ``files[].path`` of a panel report on a .blend that was never saved.
UNSAVED_PATH = "(unsaved .blend)"


def report_json(result: state.AuditResult) -> str:
    """The last audit as the JSON report (docs/report-format.md)."""
    options = result.options if result.options is not None else AuditOptions()
    # A scene never saved has no path; the report format wants a non-empty one.
    path = bpy.data.filepath or UNSAVED_PATH
    files = (FileAudit(path=path, status="ok", meshes=result.meshes, rigs=result.rigs),)
    return json_text(make_report(files, options).to_dict())


def export_report(context: bpy.types.Context, filepath: str) -> Path:
    """Write the last audit to ``filepath`` as JSON, all or nothing."""
    result = require_audit(context.scene)
    if not filepath:
        raise InputError("no file name given for the report")
    path = Path(bpy.path.abspath(filepath))
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a folder: give a file name ending in .json")
    if path.suffix.lower() in INPUT_SUFFIXES:
        raise InputError(f"{str(path)!r} ends in {path.suffix!r}, a rig file type: the report is JSON; give a "
                         "file name ending in .json")
    # Never over the open .blend, never over a read-only file.
    check_report_target(path, [bpy.data.filepath] if bpy.data.filepath else [], INPUT_SUFFIXES, "the report")
    text = report_json(result)
    (written,) = write_all(path.parent, {path.name: text})
    return written


# Preview in engine -------------------------------------------------------------


def preview_source(context: bpy.types.Context) -> bpy.types.Object | None:
    """The skinned mesh Preview in Engine copies: the active object, if it is one (not a preview)."""
    obj = context.active_object
    if obj is None or engine_preview.PREVIEW_OF in obj or not audit_scene.armature_modifiers(obj):
        return None
    return obj


def show_engine_preview(context: bpy.types.Context, settings: SkinAuditSettings) -> tuple[bpy.types.Object, int]:
    """A copy of the active skinned mesh beside it, deformed as the chosen engine draws it."""
    obj = preview_source(context)
    if obj is None:
        raise InputError("select a mesh deformed by an Armature modifier to preview it in an engine")
    return engine_preview.show_engine_preview(context, obj, get_target(settings.target))


def remove_engine_previews(context: bpy.types.Context) -> int:
    """Delete every engine preview of the scene."""
    return engine_preview.remove_previews(context.scene)


def has_engine_previews(scene: bpy.types.Scene) -> bool:
    return bool(engine_preview.previews(scene))


# Fixes -------------------------------------------------------------------------


def finding_for_button(context: bpy.types.Context, mesh_index: int, rig_index: int, finding_index: int):
    """The finding a Fix button points at, or None when the results moved on (for tooltips)."""
    result = state.audit_result(context.scene.name) if context.scene is not None else None
    if result is None:
        return None
    entries = result.meshes if mesh_index >= 0 else result.rigs
    index = mesh_index if mesh_index >= 0 else rig_index
    if not 0 <= index < len(entries) or not 0 <= finding_index < len(entries[index].findings):
        return None
    return entries[index].findings[finding_index]


def fix_finding(context: bpy.types.Context, mesh_index: int, rig_index: int, finding_index: int,
                fix_settings):
    """Apply the fix of one finding (a mesh's, or with ``mesh_index`` < 0 a rig's, on its first mesh),
    then audit the same meshes again so the panel shows what is left.  Returns the FixOutcome."""
    from ..blender.fix.apply import FIXABLE, fix_mesh

    result = require_audit(context.scene)
    if mesh_index >= 0:
        audit, finding = _finding_at(context, mesh_index, finding_index)
        obj = _audited_object(audit.object)
    else:
        if not 0 <= rig_index < len(result.rigs) or not 0 <= finding_index < len(result.rigs[rig_index].findings):
            raise InputError("that rig finding is gone: run the audit again")
        rig = result.rigs[rig_index]
        finding = rig.findings[finding_index]
        if not rig.meshes:
            raise InputError(f"'{rig.armature}' deforms no mesh here; nothing to fix through")
        obj = _audited_object(rig.meshes[0])
    if finding.code not in FIXABLE:
        raise InputError(f"no fix for '{finding.code}'; fixable: {', '.join(FIXABLE)}")
    outcome = fix_mesh(context, obj, [finding.code], fix_settings, result.options)[0]
    _audit_again(context, result)
    return outcome
