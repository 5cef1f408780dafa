# SPDX-License-Identifier: GPL-3.0-or-later
"""No panel operator raises: a rig that cannot be audited, or a bug of ours, is a message.

The add-on's operators are registered in this process on the real ``bpy``; a
script calling an operator that reports an ERROR gets Blender's RuntimeError
carrying the message (what the panel shows), never the original exception.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


@pytest.fixture
def registered(bpy, empty_scene):
    from skin_audit import ui

    ui.register()
    yield
    ui.unregister()


def _select(bpy, name):
    obj = bpy.data.objects[name]
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    return obj


def _scene_fingerprint(bpy):
    return sorted((o.name, o.type, tuple(round(v, 6) for v in o.matrix_world.col[3])) for o in bpy.data.objects), \
        len(bpy.data.meshes), len(bpy.data.armatures), len(bpy.data.scenes)


def test_run_audit_on_a_zero_bone_rig_is_a_message_and_the_scene_is_as_before(bpy, registered, hostile_dir):
    from skin_audit.ui import state

    bpy.ops.wm.open_mainfile(filepath=str(hostile_dir / "zero_bone.blend"), load_ui=False)
    _select(bpy, "Lonely")
    before = _scene_fingerprint(bpy)
    with pytest.raises(RuntimeError, match="has no bones"):
        bpy.ops.skin_audit.run_audit()
    assert _scene_fingerprint(bpy) == before
    result = state.audit_result(bpy.context.scene.name)
    assert result is not None and "has no bones" in result.error


def test_a_bug_in_an_action_is_reported_not_raised(bpy, registered, hostile_dir, monkeypatch):
    from skin_audit.ui import actions, state

    def broken(*args, **kwargs):
        raise ZeroDivisionError("planted bug")

    bpy.ops.wm.open_mainfile(filepath=str(hostile_dir / "good.blend"), load_ui=False)
    _select(bpy, "Good")
    monkeypatch.setattr(actions.audit_scene, "audit_rigs", lambda *a, **k: 1 / 0)
    with pytest.raises(RuntimeError, match="internal error") as err:
        bpy.ops.skin_audit.run_audit()
    assert "ZeroDivisionError" in str(err.value)
    assert "internal error" in state.audit_result(bpy.context.scene.name).error
    objects = len(bpy.data.objects)
    monkeypatch.setattr(actions, "build_demo", broken)
    with pytest.raises(RuntimeError, match="internal error.*planted bug"):
        bpy.ops.skin_audit.build_demo()
    assert len(bpy.data.objects) == objects


def test_run_audit_on_a_nan_vertex_rig_finishes_with_a_non_finite_finding(bpy, registered, hostile_dir):
    from skin_audit.ui import state

    bpy.ops.wm.open_mainfile(filepath=str(hostile_dir / "nan_vertex.blend"), load_ui=False)
    _select(bpy, "NanVertex")
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    result = state.audit_result(bpy.context.scene.name)
    codes = {f.code for m in result.meshes for f in m.findings}
    assert "non-finite-result" in codes


def test_export_report_never_replaces_the_open_blend_or_a_read_only_file(bpy, registered, hostile, tmp_path):
    import stat

    blend = hostile / "good.blend"
    bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
    _select(bpy, "Good")
    assert bpy.ops.skin_audit.run_audit() == {"FINISHED"}
    before = blend.read_bytes()
    for target in (blend, hostile / "other.glb"):
        with pytest.raises(RuntimeError, match="rig file type"):
            bpy.ops.skin_audit.export_report(filepath=str(target))
    assert blend.read_bytes() == before and not (hostile / "other.glb").exists()
    locked = tmp_path / "locked.json"
    locked.write_text("keep", encoding="utf-8")
    locked.chmod(stat.S_IRUSR)
    try:
        with pytest.raises(RuntimeError, match="read-only"):
            bpy.ops.skin_audit.export_report(filepath=str(locked))
        assert locked.read_text(encoding="utf-8") == "keep"
    finally:
        locked.chmod(stat.S_IRUSR | stat.S_IWUSR)
    written = tmp_path / "report.json"
    assert bpy.ops.skin_audit.export_report(filepath=str(written)) == {"FINISHED"}
    assert written.read_text(encoding="utf-8").startswith("{")
