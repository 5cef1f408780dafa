# SPDX-License-Identifier: GPL-3.0-or-later
"""The Fix button of an armature scale finding, through the extension installed from its zip.

Runs inside Blender through blender_driver.py (see test_fix_panel.py).  The rig is the demo
cylinder, its armature moved, turned and mirrored (-1.5, 1.5, 1.5), the child bone posed.
"""

from __future__ import annotations

import bpy
import numpy as np
from blender_helpers import empty_scene, install, submodule

CODE = "negative-armature-scale"


def _rig():
    return submodule("blender.build.twist_rig").find_demo_rig(bpy.context.scene)


def _result():
    return submodule("ui.state").audit_result(bpy.context.scene.name)


def _rig_finding() -> int:
    findings = _result().rigs[0].findings
    return next(i for i, f in enumerate(findings) if f.code == CODE)


def _world() -> np.ndarray:
    """Blender's evaluated demo mesh in world space."""
    mesh = _rig().mesh
    ev = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get())
    data = ev.to_mesh()
    co = np.array([tuple(v.co) for v in data.vertices], dtype=np.float64)
    ev.to_mesh_clear()
    mw = np.array(ev.matrix_world, dtype=np.float64)
    return co @ mw[:3, :3].T + mw[:3, 3]


def setup() -> None:
    install()
    empty_scene()


def check_fix_button_beside_the_scale_finding() -> None:
    """A mirrored, posed demo rig: its rig entry lists the finding, whose popup has a Fix button."""
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}
    rig = _rig()
    rig.armature.location, rig.armature.rotation_euler = (0.3, -0.2, 0.1), (0.2, 0.0, 0.4)
    rig.armature.scale = (-1.5, 1.5, 1.5)
    child = rig.armature.pose.bones[-1]
    child.rotation_mode = "XYZ"
    child.rotation_euler = (0.5, 0.3, 0.7)
    child.location = (0.1, 0.0, 0.05)
    bpy.context.view_layer.objects.active = rig.mesh
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    # The Fix button is in the finding's popup (its text button), named after the code.
    from blender_helpers import draw_finding_popup

    popup = draw_finding_popup(-1, 0, _rig_finding())
    fixes = [i["props"] for i in popup.of("operator") if i["idname"] == "skin_audit.fix_finding"]
    assert {"rig_index": 0, "finding_index": _rig_finding()}.items() <= next(
        p for p in fixes if p.get("finding_index") == _rig_finding() and p.get("rig_index", -1) == 0).items()


def check_fix_applies_the_mirror_and_the_mesh_stays() -> None:
    """Pressed: scale 1, proper bone frames, the posed mesh where it was, the finding gone."""
    before = _world()
    assert bpy.ops.skin_audit.fix_finding(rig_index=0, finding_index=_rig_finding()) == {"FINISHED"}
    rig = _rig()
    assert tuple(rig.armature.scale) == (1.0, 1.0, 1.0)
    for bone in rig.armature.data.bones:
        assert np.linalg.det(np.array(bone.matrix_local)[:3, :3]) > 0, bone.name
    after = _world()
    size = float(np.ptp(before, axis=0).max())
    assert np.abs(after - before).max() < 2e-6 * size, np.abs(after - before).max()
    codes = {f.code for f in _result().rigs[0].findings}
    assert CODE not in codes and "non-uniform-armature-scale" not in codes, codes


def check_a_refusal_is_reported_and_changes_nothing() -> None:
    """A bone constraint the fix cannot carry (Limit Rotation in local space): the button reports
    the error naming it, and the armature, its bones and the posed mesh are as they were."""
    empty_scene()
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}
    rig = _rig()
    rig.armature.scale = (-1.5, 1.5, 1.5)
    child = rig.armature.pose.bones[-1]
    child.rotation_mode = "XYZ"
    child.rotation_euler = (0.5, 0.3, 0.7)
    limit = child.constraints.new("LIMIT_ROTATION")
    limit.use_limit_x, limit.max_x, limit.owner_space = True, 0.3, "LOCAL"
    bpy.context.view_layer.objects.active = rig.mesh
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    before = _world()
    rest = [np.array(b.matrix_local).tobytes() for b in rig.armature.data.bones]
    try:
        result = bpy.ops.skin_audit.fix_finding(rig_index=0, finding_index=_rig_finding())
        message = ""
    except RuntimeError as exc:  # an operator that cancels with an error report raises here
        result, message = {"CANCELLED"}, str(exc)
    assert result == {"CANCELLED"}, result
    assert f"constraint '{limit.name}' on bone '{child.name}'" in message, message
    rig = _rig()
    assert tuple(rig.armature.scale) == (-1.5, 1.5, 1.5)
    assert [np.array(b.matrix_local).tobytes() for b in rig.armature.data.bones] == rest
    assert np.array_equal(_world(), before)
