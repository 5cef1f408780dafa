# SPDX-License-Identifier: GPL-3.0-or-later
"""Results follow undo and redo (run inside Blender through blender_driver.py; see
test_undo_panel.py).  Undo works in background Blender once a step is pushed
(``bpy.ops.ed.undo_push``); the Fix operator, called with ``undo=True``, pushes its own step as a
button press does in a window.

The demo rig with vertex 0 weighing 0.5 in total (weights-not-normalized): fix it, undo
(the weight is 0.5 again), redo (1 again).  After each, the panel says the results are
outdated, the buttons that act on findings and Export Report refuse with that reason, and
Audit Again describes the data as it now is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import bpy
from blender_helpers import draw, empty_scene, install, poll_message, submodule

WORK = Path(os.environ["SKIN_AUDIT_TEST_WORK"])
CODE = "weights-not-normalized"


def _mesh():
    return bpy.data.objects["SkinAudit_Cylinder"]


def _result():
    return submodule("ui.state").audit_result(bpy.context.scene.name)


def _codes() -> list[str]:
    return [f.code for f in _result().meshes[0].findings]


def _weight_of_vertex_0() -> float:
    return sum(g.weight for g in _mesh().data.vertices[0].groups)


def _activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def _export() -> dict:
    path = WORK / "report.json"
    assert bpy.ops.skin_audit.export_report(filepath=str(path)) == {"FINISHED"}
    return json.loads(path.read_text(encoding="utf-8"))


def _report_codes(report: dict) -> list[str]:
    return [f["code"] for file in report["files"] for mesh in file["meshes"] for f in mesh["findings"]]


def _assert_outdated(by: str) -> None:
    assert _result().stale == by, _result().stale
    main = draw("SKIN_AUDIT_PT_main")
    assert main.has_text(f"Outdated by {by}"), main.texts()
    assert "skin_audit.audit_again" in main.operators()
    findings = draw("SKIN_AUDIT_PT_findings")
    assert findings.has_text(f"Outdated by {by}"), findings.texts()
    why = f"{by} changed the data since the last audit"
    for op in (bpy.ops.skin_audit.export_report, bpy.ops.skin_audit.select_finding,
               bpy.ops.skin_audit.fix_finding, bpy.ops.skin_audit.show_heatmap):
        assert why in poll_message(op), (op, poll_message(op))


def setup() -> None:
    install()
    empty_scene()
    bpy.ops.skin_audit.build_demo()
    _mesh().vertex_groups["Root"].add([0], 0.5, "REPLACE")
    _activate(_mesh())
    bpy.ops.ed.undo_push(message="planted")


def check_fix_then_undo_marks_the_results_outdated() -> None:
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    assert CODE in _codes() and _weight_of_vertex_0() == 0.5
    index = _codes().index(CODE)
    # As a button press does: the operator pushes its undo step (a script asks with undo=True).
    assert bpy.ops.skin_audit.fix_finding("EXEC_DEFAULT", True, mesh_index=0, finding_index=index) == {"FINISHED"}
    assert CODE not in _codes() and abs(_weight_of_vertex_0() - 1.0) < 1e-6
    assert not _result().stale
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert _weight_of_vertex_0() == 0.5, "undo did not bring the weight back"
    _assert_outdated("undo")


def check_audit_again_after_undo_describes_the_data_as_it_is() -> None:
    assert bpy.ops.skin_audit.audit_again() == {"FINISHED"}
    assert not _result().stale
    assert CODE in _codes()
    assert CODE in _report_codes(_export())


def check_redo_marks_the_results_outdated_and_audit_again_follows() -> None:
    assert bpy.ops.ed.redo() == {"FINISHED"}
    assert abs(_weight_of_vertex_0() - 1.0) < 1e-6, "redo did not re-apply the fix"
    _assert_outdated("redo")
    assert bpy.ops.skin_audit.audit_again() == {"FINISHED"}
    assert CODE not in _codes()
    assert CODE not in _report_codes(_export())


def check_audit_again_needs_an_audited_mesh_that_still_exists() -> None:
    bpy.data.objects.remove(_mesh())
    with_error = None
    try:
        bpy.ops.skin_audit.audit_again()
    except RuntimeError as exc:
        with_error = str(exc)
    assert with_error and "none of the audited meshes" in with_error, with_error
