# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit against Blender's own evaluation: the twisted cylinder's timeline equals
the mid ring's radius Blender's evaluated mesh has at every frame (the seed's closed form at the
keyed 170 degrees), the keys' defects are named, nothing of the user's scene changes, and the
command line plays named actions and frame ranges."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.factories.animated_rigs import TWIST_PEAK_DEGREES, TWIST_PEAK_FRAME, save_animated_twist

pytestmark = [pytest.mark.blender, pytest.mark.blender42]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def twist_file(bpy, tmp_path_factory):
    return save_animated_twist(tmp_path_factory.mktemp("anim") / "twist_anim.blend", broken=True)


def _mid_ring_radii_by_blender(bpy, path: Path, frames) -> list[float]:
    """Blender's own evaluated mesh at each frame: the mean radius of the ring at z = 1."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    obj = bpy.data.objects["SkinAudit_Cylinder"]
    rest = np.array([v.co[:] for v in obj.data.vertices])
    ring = np.flatnonzero(np.abs(rest[:, 2] - 1.0) < 1e-6)
    out = []
    for f in frames:
        scene.frame_set(int(f))
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        co = np.array([ev.data.vertices[i].co[:] for i in ring])
        out.append(float(np.hypot(co[:, 0], co[:, 1]).mean()))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return out


def _audit(bpy, path: Path, **options):
    from skin_audit.blender.run.audit_files import audit_file
    from skin_audit.core.audit.options import AuditOptions

    result = audit_file(path, AuditOptions(shape_checks=False, **options))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return result


def test_the_timeline_is_the_mid_rings_radius_blender_draws_at_every_frame(bpy, twist_file):
    result = _audit(bpy, twist_file, animation=("Twist",))
    (rig,) = result.rigs
    (entry,) = [e for e in rig.animation["actions"] if e["action"] == "Twist"]
    frames = entry["timeline"]["frame"]
    assert frames == [float(f) for f in range(1, 61)]
    radii = _mid_ring_radii_by_blender(bpy, twist_file, frames)
    np.testing.assert_allclose(entry["timeline"]["sigma_min"], radii, atol=2e-6)
    peak = entry["timeline"]["sigma_min"][frames.index(TWIST_PEAK_FRAME)]
    assert peak == pytest.approx(abs(math.cos(math.radians(TWIST_PEAK_DEGREES) / 2)), abs=1e-6)
    assert entry["worst_frames"]["collapse"][0] == TWIST_PEAK_FRAME
    # Blender's evaluated mesh matches numpy at the spot-checked frames, the worst among them.
    checked = {s["frame"]: s["max_numpy_vs_blender_relative"] for s in entry["spot_checks"]}
    assert TWIST_PEAK_FRAME in checked and max(checked.values()) < 1e-6
    (mesh,) = result.meshes
    collapse = [f for f in mesh.findings if f.code == "animation-collapse"]
    assert collapse and collapse[0].severity == "WARNING"
    assert collapse[0].details["frame"] == TWIST_PEAK_FRAME and collapse[0].details["action"] == "Twist"
    assert set(collapse[0].bones) == {"Root", "Child"}
    assert not [f for f in mesh.findings if f.code == "animation-mismatch"]


def test_the_keys_defects_are_named(bpy, twist_file):
    result = _audit(bpy, twist_file, animation=())
    (rig,) = result.rigs
    found = {(f.code, f.severity): f for f in rig.findings}
    scale = found[("animation-scale-keys", "WARNING")]
    assert scale.bones == ("Root",) and scale.details["action"] == "Broken"
    flip = found[("animation-euler-flip", "WARNING")]
    assert flip.details["bone"] == "Root" and flip.details["frame"] == 1.0
    assert flip.details["jump_degrees"] == pytest.approx(340.0, abs=1e-3)
    assert found[("animation-missing-bone", "WARNING")].bones == ("Gone",)
    assert found[("armature-object-keys", "INFO")].details["paths"] == ["location"]
    # The twist action is clean: no key finding names it, and it plays from the user's pose, not from
    # where the broken action (played first) left the root (squashed to half its height).
    assert all(f.details.get("action") != "Twist" for f in rig.findings)
    (twist,) = [e for e in rig.animation["actions"] if e["action"] == "Twist"]
    assert twist["timeline"]["sigma_min"][0] == pytest.approx(1.0, abs=1e-6)
    # The zero scale collapses every vertex the root moves at frame 10, where Blender draws it so too.
    (mesh,) = result.meshes
    broken = [f for f in mesh.findings if f.code == "animation-collapse" and f.details["action"] == "Broken"]
    assert broken and broken[0].details["frame"] == 10.0 and broken[0].details["worst_value"] == 0.0


def _fingerprint(bpy):
    arm = bpy.data.objects["SkinAudit_Armature"]
    return (bpy.context.scene.frame_current, arm.animation_data.action.name,
            tuple(tuple(pb.rotation_quaternion) + tuple(pb.scale) + tuple(pb.location) for pb in arm.pose.bones),
            tuple(arm.location), len(bpy.data.objects), len(bpy.data.actions), len(bpy.data.scenes))


def test_the_users_scene_is_as_it_was(bpy, twist_file):
    from skin_audit.blender.run.audit_scene import audit_rigs
    from skin_audit.core.audit.options import AuditOptions

    bpy.ops.wm.open_mainfile(filepath=str(twist_file))
    bpy.context.scene.frame_set(20)
    arm = bpy.data.objects["SkinAudit_Armature"]
    arm.pose.bones["Root"].location = (0.0, 0.25, 0.0)  # a tweak without a key
    before = _fingerprint(bpy)
    audit_rigs(bpy.context, [bpy.data.objects["SkinAudit_Cylinder"]], AuditOptions(animation=()))
    assert _fingerprint(bpy) == before
    bpy.ops.wm.read_factory_settings(use_empty=True)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "skin_audit", "audit", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_the_command_line_plays_named_actions_over_a_range(bpy, twist_file, tmp_path):
    report = tmp_path / "r.json"
    out = _cli(twist_file, "--animation", "Twist,Nothing", "--frames", "30:40:2", "--no-shape-checks",
               "--json", report, "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    rig = json.loads(report.read_text())["files"][0]["rigs"][0]
    animation = rig["animation"]
    assert animation["missing"] == ["Nothing"]
    (entry,) = animation["actions"]
    assert entry["action"] == "Twist" and entry["timeline"]["frame"] == [30.0, 32.0, 34.0, 36.0, 38.0, 40.0]
    assert "animation-collapse" in out.stdout


@pytest.mark.parametrize("args", [("--frames", "10:5"), ("--frames", "a:b"), ("--frames", "1:2:0")])
def test_bad_frames_are_bad_usage(bpy, twist_file, args):
    out = _cli(twist_file, "--animation", *args)
    assert out.returncode == 2 and "frames" in out.stderr


def test_frames_without_animation_is_bad_usage(bpy, twist_file):
    out = _cli(twist_file, "--frames", "1:10")
    assert out.returncode == 2 and "--animation" in out.stderr
