# SPDX-License-Identifier: GPL-3.0-or-later
"""The Fix buttons of the Findings panel, through the extension installed from its zip.

Runs inside Blender through blender_driver.py (see test_fix_panel.py).  The rig is the demo
cylinder with planted problems (as scenario_audit.py): vertex 0 weighs 0.5 in total, vertices
2 and 3 are in a group "Ghost" naming no bone, a second root bone "Extra" deforms nothing.
"""

from __future__ import annotations

import bpy
import numpy as np
from blender_helpers import draw, empty_scene, install, poll_message, popup_operators, submodule


def _rig():
    return submodule("blender.build.twist_rig").find_demo_rig(bpy.context.scene)


def _result():
    return submodule("ui.state").audit_result(bpy.context.scene.name)


def _index(findings, code: str) -> int:
    for i, f in enumerate(findings):
        if f.code == code:
            return i
    raise AssertionError(f"no {code!r} finding among {[f.code for f in findings]}")


def _activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def _weights() -> dict[str, np.ndarray]:
    mesh = _rig().mesh
    out = {g.name: np.zeros(len(mesh.data.vertices), dtype=np.float32) for g in mesh.vertex_groups}
    names = [g.name for g in mesh.vertex_groups]
    for v in mesh.data.vertices:
        for g in v.groups:
            out[names[g.group]][v.index] = g.weight
    return out


def setup() -> None:
    install()
    empty_scene()


def check_fix_needs_an_audit() -> None:
    """Before any audit the Fix button is greyed out and says why."""
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}
    assert "Run the audit first" in poll_message(bpy.ops.skin_audit.fix_finding)


def check_fix_buttons_beside_fixable_findings() -> None:
    """Audit the planted problems: a Fix button in each fixable finding's popup, none in the others'."""
    rig = _rig()
    groups = rig.mesh.vertex_groups
    groups["Root"].add([0], 0.5, "REPLACE")
    groups.new(name="Ghost").add([2, 3], 0.25, "REPLACE")
    _activate(rig.armature)
    bpy.ops.object.mode_set(mode="EDIT")
    extra = rig.armature.data.edit_bones.new("Extra")
    extra.head, extra.tail = (2.0, 0.0, 0.0), (2.0, 0.0, 1.0)
    bpy.ops.object.mode_set(mode="OBJECT")
    _activate(rig.mesh)
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    bpy.context.scene.skin_audit.show_notes = True  # the rig's findings here are notes
    try:
        panel = draw("SKIN_AUDIT_PT_findings")
    finally:
        bpy.context.scene.skin_audit.show_notes = False
    # Fix buttons are in each finding's popup, with what they do as their text.
    assert not [i for i in panel.of("operator") if i["idname"] == "skin_audit.fix_finding"]
    fixes = popup_operators(panel, "skin_audit.fix_finding")
    findings = _result().meshes[0].findings
    mesh_fixes = {p["finding_index"] for p in fixes if p.get("mesh_index", -1) == 0}
    assert _index(findings, "weights-not-normalized") in mesh_fixes, fixes
    assert _index(findings, "group-without-bone") in mesh_fixes, fixes
    fixable = submodule("blender.fix.apply").FIXABLE
    assert all(findings[i].code in fixable for i in mesh_fixes)
    rig_fixes = {p["finding_index"] for p in fixes if p.get("rig_index", -1) == 0}
    assert _index(_result().rigs[0].findings, "deform-bone-without-weights") in rig_fixes, fixes


def check_fix_normalizes_only_that_vertex_and_reaudits() -> None:
    """weights-not-normalized: vertex 0's deform weights sum to 1; every other cell as before."""
    before = _weights()
    index = _index(_result().meshes[0].findings, "weights-not-normalized")
    assert bpy.ops.skin_audit.fix_finding(mesh_index=0, finding_index=index) == {"FINISHED"}
    after = _weights()
    assert before.keys() == after.keys()
    for name in before:
        diff = np.flatnonzero(before[name] != after[name])
        assert set(diff.tolist()) <= {0}, (name, diff)
    deform = [b.name for b in _rig().armature.data.bones if b.use_deform]
    assert abs(sum(float(after[n][0]) for n in deform if n in after) - 1.0) < 1e-6
    codes = [f.code for f in _result().meshes[0].findings]
    assert "weights-not-normalized" not in codes and "group-without-bone" in codes, codes


def check_fix_merges_a_group_into_a_chosen_bone() -> None:
    """group-without-bone with Merge into 'Root': Ghost's 0.25 added to Root on vertices 2, 3 only."""
    before = _weights()
    index = _index(_result().meshes[0].findings, "group-without-bone")
    assert bpy.ops.skin_audit.fix_finding(mesh_index=0, finding_index=index, group_action="merge",
                                          merge_into="Root") == {"FINISHED"}
    after = _weights()
    assert "Ghost" not in after
    deform = {b.name for b in _rig().armature.data.bones if b.use_deform}
    for name in after:  # only vertices 2 and 3 change, and only in deform groups
        changed = set(np.flatnonzero(before[name] != after[name]).tolist())
        assert changed <= ({2, 3} if name in deform else set()), (name, changed)
    for v in (2, 3):
        expected = min(1.0, float(before["Root"][v]) + 0.25)  # clipped as Blender stores it, then normalised
        total = expected + sum(float(before[n][v]) for n in deform if n in before and n != "Root")
        assert abs(float(after["Root"][v]) - expected / total) < 1e-6, (v, after["Root"][v], expected / total)
    assert "group-without-bone" not in [f.code for f in _result().meshes[0].findings]


def check_fix_rig_finding_turns_deform_off() -> None:
    """deform-bone-without-weights from the rig entry: Extra's Deform goes off, no other bone changes."""
    bones = _rig().armature.data.bones
    before = {b.name: b.use_deform for b in bones}
    index = _index(_result().rigs[0].findings, "deform-bone-without-weights")
    assert bpy.ops.skin_audit.fix_finding(rig_index=0, finding_index=index) == {"FINISHED"}
    after = {b.name: b.use_deform for b in bones}
    assert {n for n in before if before[n] != after[n]} == {"Extra"} and not after["Extra"]
    assert "deform-bone-without-weights" not in [f.code for f in _result().rigs[0].findings]


def check_fix_is_one_undo_step_and_refuses_a_stale_index() -> None:
    """The operator registers one undo step; an index the results no longer hold is refused."""
    assert bpy.types.SKIN_AUDIT_OT_fix_finding.bl_options == {"REGISTER", "UNDO"}
    try:
        bpy.ops.skin_audit.fix_finding(mesh_index=0, finding_index=99)
    except RuntimeError as exc:
        assert "no finding number 99" in str(exc), exc
    else:
        raise AssertionError("a stale finding index was accepted")
