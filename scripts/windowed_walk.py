# SPDX-License-Identifier: GPL-3.0-or-later
"""Press every Skin Audit panel button in a real Blender window (run by scripts/windowed.sh).

    blender --window-geometry 0 0 1600 900 --python scripts/windowed_walk.py -- OUT_DIR RIG

Runs inside the window's event loop: one step per ``bpy.app.timers`` tick, each operator
called with the 3D viewport's area and region (``temp_override``) as a click would, with
``undo=True`` so it pushes its undo step like a button.  After each step the window is
redrawn and the X screen saved with ``xwd -root`` (``bpy.ops.screen.screenshot`` is black
under Xvfb) as OUT_DIR/NN-step.xwd.  OUT_DIR/walk.json lists each step, ok or its traceback;
Blender exits 0 when every step passed, 1 otherwise.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import traceback
from pathlib import Path

import bpy

ARGS = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
OUT = Path(ARGS[0]) if ARGS else Path("out/windowed")
RIG = Path(ARGS[1]) if len(ARGS) > 1 else Path("tests/assets/RiggedFigure/glTF-Binary/RiggedFigure.glb")
PACKAGE = "bl_ext.user_default.skin_audit"

#: Seconds between a step and its screenshot: Blender redraws and its panels settle meanwhile.
PAUSE = 2.0
#: Window redraws before each screenshot (a panel that changed size moves over a few redraws).
REDRAWS = 2
STEPS: list = []
RESULTS: list[dict] = []
START = time.monotonic()


def step(func):
    STEPS.append(func)
    return func


def _view3d():
    window = bpy.context.window_manager.windows[0]
    area = max((a for a in window.screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width * a.height)
    region = next(r for r in area.regions if r.type == "WINDOW")
    return window, area, region


def op(name: str, **props):
    """Call ``skin_audit.<name>`` (or ``category.name``) as a button in the 3D viewport would."""
    category, _, opname = name.rpartition(".")
    window, area, region = _view3d()
    with bpy.context.temp_override(window=window, area=area, region=region):
        result = getattr(getattr(bpy.ops, category or "skin_audit"), opname)("EXEC_DEFAULT", True, **props)
    assert result == {"FINISHED"}, f"{name}{props} returned {result}"
    return result


def state():
    return sys.modules[f"{PACKAGE}.ui.state"].audit_result(bpy.context.scene.name)


def finding(code: str):
    result = state()
    for m, audit in enumerate(result.meshes):
        for i, f in enumerate(audit.findings):
            if f.code == code:
                return m, i, f
    raise AssertionError(f"no {code!r} among {[f.code for a in result.meshes for f in a.findings]}")


def activate(obj) -> None:
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def object_mode() -> None:
    if bpy.context.mode != "OBJECT":
        op("object.mode_set", mode="OBJECT")


def screenshot(name: str) -> None:
    window, _area, _region = _view3d()
    for area in window.screen.areas:
        area.tag_redraw()
    with bpy.context.temp_override(window=window):
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=REDRAWS)
    path = OUT / f"{len(RESULTS) - 1:02d}-{name}.xwd"
    subprocess.run(["xwd", "-root", "-silent", "-out", str(path)], check=True, timeout=60)


def weights_of(obj) -> list[tuple[int, tuple]]:
    return [(v.index, tuple(sorted((g.group, round(g.weight, 6)) for g in v.groups))) for v in obj.data.vertices]


# The walk ------------------------------------------------------------------------------


@step
def open_sidebar():
    _window, area, _region = _view3d()
    area.spaces.active.show_region_ui = True


@step
def skin_audit_tab():
    # The tab can be chosen once the sidebar has been drawn (it knows its tabs then).
    _window, area, _region = _view3d()
    ui = next(r for r in area.regions if r.type == "UI")
    ui.active_panel_category = "Skin Audit"
    # Sub-panels closed by default are opened here, as a rigger would click their headers.
    for name in ("SKIN_AUDIT_PT_twist",):
        cls = getattr(bpy.types, name)
        bpy.utils.unregister_class(cls)
        cls.bl_options = set()
        bpy.utils.register_class(cls)
    RESULTS[-1]["sidebar_width_px"] = ui.width


@step
def twist_demo_build():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    op("build_demo")
    bpy.context.scene.skin_audit.twist_angle = math.radians(120.0)


@step
def twist_demo_measure_lbs():
    op("measure_twist")


@step
def twist_demo_measure_dqs():
    bpy.context.scene.skin_audit.method = "DQS"
    op("measure_twist")


@step
def run_audit_on_real_rig():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.gltf(filepath=str(RIG))
    mesh = next(o for o in bpy.context.scene.objects if o.type == "MESH" and o.find_armature() is not None)
    activate(mesh)
    op("view3d.view_selected")
    op("run_audit")
    RESULTS[-1]["findings"] = [f"{f.severity} {f.code} ({f.count})" for f in state().findings]


@step
def show_notes():
    bpy.context.scene.skin_audit.show_notes = True


@step
def hide_notes():
    bpy.context.scene.skin_audit.show_notes = False


@step
def select_finding_vertices():
    m, i, f = finding("stray-weights")
    op("select_finding", mesh_index=m, finding_index=i, target="VERTICES")
    obj = bpy.context.edit_object
    assert obj is not None
    bpy.ops.object.mode_set(mode="OBJECT")
    chosen = [v.index for v in obj.data.vertices if v.select]
    assert tuple(chosen) == f.vertices, (chosen, f.vertices)
    bpy.ops.object.mode_set(mode="EDIT")


@step
def show_worst_pose():
    object_mode()
    m, i, f = finding("twist-collapse")
    activate(bpy.data.objects[state().meshes[m].object])
    op("show_test_pose", mesh_index=m, finding_index=i)
    RESULTS[-1]["pose"] = str(f.details.get("pose"))


@step
def undo_worst_pose():
    op("ed.undo")
    assert state().stale == "undo", state().stale


@step
def audit_again_after_undo():
    op("audit_again")
    assert not state().stale


@step
def heatmap():
    op("show_heatmap", measure="stray")
    window, area, _region = _view3d()
    assert area.spaces.active.shading.color_type == "VERTEX"


@step
def fix_stray_weights():
    op("clear_heatmap")
    m, i, _f = finding("stray-weights")
    obj = bpy.data.objects[state().meshes[m].object]
    RESULTS[-1]["before"] = sum(f.code == "stray-weights" for f in state().findings)
    WEIGHTS["before"] = weights_of(obj)
    op("fix_finding", mesh_index=m, finding_index=i)
    assert weights_of(obj) != WEIGHTS["before"], "the fix changed no weight"
    assert "stray-weights" not in [f.code for f in state().findings]


@step
def undo_fix():
    op("ed.undo")
    obj = bpy.data.objects[state().meshes[0].object]
    assert weights_of(obj) == WEIGHTS["before"], "undo did not restore the weights"
    assert state().stale == "undo"
    failed = False
    try:
        op("export_report", filepath=str(OUT / "stale-report.json"))
    except RuntimeError:
        failed = True
    assert failed and not (OUT / "stale-report.json").exists(), "exported outdated results"


@step
def audit_again_after_fix_undo():
    op("audit_again")
    assert "stray-weights" in [f.code for f in state().findings]


@step
def preview_in_engine():
    mesh = bpy.data.objects[state().meshes[0].object]
    activate(mesh)
    op("preview_engine")
    op("view3d.view_all")


@step
def remove_preview():
    op("remove_engine_preview")
    assert not [o for o in bpy.data.objects if "engine preview" in o.name]


@step
def export_report():
    path = OUT / "report.json"
    op("export_report", filepath=str(path))
    report = json.loads(path.read_text(encoding="utf-8"))
    codes = [f["code"] for file in report["files"] for mesh in file["meshes"] for f in mesh["findings"]]
    assert "stray-weights" in codes, codes


@step
def finding_text_popup():
    # Last: nothing closes a popup under Xvfb (no mouse moves away from it).
    m, i, _f = finding("stray-weights")
    window, area, region = _view3d()
    with bpy.context.temp_override(window=window, area=area, region=region):
        assert bpy.ops.skin_audit.finding_text("INVOKE_DEFAULT", mesh_index=m, finding_index=i) == {"RUNNING_MODAL"}


WEIGHTS: dict = {}


def _tick():
    # The previous step's screenshot first: Blender has redrawn (and finished moving its
    # panels) in the pause since that step.
    if RESULTS and not RESULTS[-1].get("screenshot"):
        entry = RESULTS[-1]
        entry["screenshot"] = True
        try:
            screenshot(entry["step"])
        except Exception:
            entry["ok"] = False
            entry["error"] = entry.get("error", "") + traceback.format_exc()
            traceback.print_exc()
        print(f"windowed walk: {entry['step']} {'ok' if entry['ok'] else 'FAILED'}", flush=True)
    if len(RESULTS) >= len(STEPS):
        return _finish()
    func = STEPS[len(RESULTS)]
    entry = {"step": func.__name__, "ok": True, "seconds_since_start": round(time.monotonic() - START, 1)}
    RESULTS.append(entry)
    try:
        func()
    except Exception:
        entry["ok"] = False
        entry["error"] = traceback.format_exc()
        print(f"windowed walk: step {func.__name__} failed", file=sys.stderr)
        traceback.print_exc()
    return PAUSE


def _finish():
    (OUT / "walk.json").write_text(json.dumps(RESULTS, indent=1), encoding="utf-8")
    ok = all(r["ok"] for r in RESULTS)
    print(f"windowed walk: {sum(r['ok'] for r in RESULTS)}/{len(RESULTS)} steps ok", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    import os

    os._exit(0 if ok else 1)


OUT.mkdir(parents=True, exist_ok=True)
# Before the window opens: no splash screen over the viewport (a temporary profile, not saved).
bpy.context.preferences.view.show_splash = False
bpy.app.timers.register(_tick, first_interval=1.0)
