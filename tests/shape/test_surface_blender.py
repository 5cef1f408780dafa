# SPDX-License-Identifier: GPL-3.0-or-later
"""Surface measures and weight smoothness on rigs built in Blender, each with one planted
problem or none, measured against Blender's own evaluated mesh at the pose.

The rig: a tube of radius 0.2 along +Z (41 rings, 32 segments, rings 0.05 apart), a forearm bone
from z = 0 to 1 and a hand bone from 1 to 2 (the wrist at z = 1).  Clean: the hand's weight
rises linearly from 0 at z = 0.5 to 1 at z = 1.5.  Planted: a hard 0 -> 1 step at the wrist; or
a patch of the hand (z 1.25 to 1.5, a quarter of the way round) left on the forearm, which the
hand's bend stretches.  The bent tube's closed form (tests/core/audit/test_surface.py) gives the
clean rig's inner-side area ratio at the wrist for a 90-degree bend: 0.6 / sqrt(2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]

RINGS, SEGMENTS, RADIUS = 41, 32, 0.2
NEW = {"surface-stretch", "surface-fold", "surface-area-collapse", "weight-step", "twist-region-crowded"}


def build(bpy, kind: str):
    from tests.factories.blender_rigs import build_rig, chain_bones, cylinder

    verts, faces = cylinder(RINGS, SEGMENTS, RADIUS, 2.0)
    z = verts[:, 2]
    if kind == "clean":
        hand = np.clip(z - 0.5, 0.0, 1.0)
    elif kind == "step":
        hand = (z >= 1.0 - 1e-9).astype(float)
    elif kind == "patch":
        hand = np.clip(z - 0.5, 0.0, 1.0)
        angle = np.arctan2(verts[:, 1], verts[:, 0])
        hand[(z > 1.25 - 1e-9) & (z < 1.5 + 1e-9) & (angle > -1e-9) & (angle < math.pi / 2 + 1e-9)] = 0.0
    else:
        raise ValueError(kind)
    weights = {}
    for name, w in (("Forearm", 1.0 - hand), ("Hand", hand)):
        idx = np.flatnonzero(w > 0.0)
        weights[name] = (idx, w[idx])
    obj, arm = build_rig("Arm", chain_bones(("Forearm", "Hand"), 2.0), verts, faces, weights)
    return obj, arm


def audit(bpy, obj):
    from skin_audit.blender.run.audit_scene import audit_meshes

    (result,) = audit_meshes(bpy.context, [obj], AuditOptions())
    return result


def severe(result):
    return {f.code: f for f in result.findings if f.code in NEW and f.severity != "INFO"}


def evaluated(bpy, obj):
    bpy.context.view_layer.update()
    data = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    flat = np.empty(len(data.vertices) * 3, dtype=np.float32)
    data.vertices.foreach_get("co", flat)
    return flat.reshape(-1, 3).astype(np.float64)


@pytest.mark.parametrize("kind", ["clean", "step"])
@pytest.mark.parametrize("axis, degrees", [("x", 90.0), ("z", -90.0), ("y", 90.0)])
def test_measures_agree_with_blenders_evaluated_mesh(bpy, kind, axis, degrees):
    """The audit's per-triangle measures at a sweep pose, from its own blend, against the same
    arithmetic on the positions Blender's Armature modifier gives with the hand posed so."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.pose_sweep import SweepPose, pose_channel
    from tests.factories.surface_reference import surface_at

    obj, arm = build(bpy, kind)
    mesh = extract(obj, obj.modifiers["Armature"], bpy.context.evaluated_depsgraph_get())
    assert len(mesh.triangles) == 2 * (RINGS - 1) * SEGMENTS
    hand = mesh.bones.names.index("Hand")
    ours = surface_at(mesh, pose_channel(mesh, SweepPose(hand, axis, degrees, "default")))
    pb = arm.pose.bones["Hand"]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler["xyz".index(axis)] = math.radians(degrees)
    theirs = surface_at(mesh, pose_channel(mesh, SweepPose(hand, axis, degrees, "default")), evaluated(bpy, obj))
    for name, a, b in zip(("area", "stretch", "fold"), ours, theirs, strict=True):
        assert np.allclose(a, b, atol=1e-4, rtol=1e-4), (name, float(np.abs(a - b).max()))
    if kind == "clean" and axis == "x":
        # The bent tube's closed form on Blender's own mesh: the inner side at the wrist.
        area = theirs[0]
        tri = mesh.triangles
        centre = mesh.rest[tri].mean(axis=1)
        inner = np.argsort(np.abs(centre[:, 2] - 1.0) + np.abs(centre[:, 1] + RADIUS) + np.abs(centre[:, 0]))[:2]
        outer = np.argsort(np.abs(centre[:, 2] - 1.0) + np.abs(centre[:, 1] - RADIUS) + np.abs(centre[:, 0]))[:2]
        expected = {+1: 0.5 * math.hypot(1.0 - RADIUS / 0.5, 1.0 - RADIUS / 0.5),
                    -1: 0.5 * math.hypot(1.0 + RADIUS / 0.5, 1.0 + RADIUS / 0.5)}
        # (bone Y is world +Z here; the bend about its X takes the hand towards -Y: that side is inside)
        got = sorted([float(area[inner].mean()), float(area[outer].mean())])
        assert got == pytest.approx(sorted(expected.values()), rel=0.04)


def test_the_clean_rig_gets_none(bpy):
    obj, _ = build(bpy, "clean")
    result = audit(bpy, obj)
    assert not severe(result), [(f.code, f.message) for f in severe(result).values()]
    assert result.metrics["surface_triangles_measured"] > 0


def test_a_hard_step_at_the_wrist_is_found_and_the_fix_removes_it(bpy):
    from skin_audit.blender.fix.apply import FixSettings, fix_mesh

    obj, _ = build(bpy, "step")
    found = severe(audit(bpy, obj))
    assert {"weight-step", "surface-stretch", "surface-fold"} <= set(found), sorted(found)
    assert found["weight-step"].severity == "WARNING"
    assert set(found["weight-step"].bones) == {"Forearm"} or set(found["weight-step"].bones) <= {"Forearm", "Hand"}
    assert found["surface-stretch"].bones[0] == "Hand"  # the bend of the hand stretches the wrist
    wrist = set(range(20 * SEGMENTS, 21 * SEGMENTS))  # the ring at z = 1
    assert wrist <= set(found["weight-step"].vertices)
    (outcome,) = fix_mesh(bpy.context, obj, ["weight-step"], FixSettings())
    assert outcome.before.get("weight-step", 0) > 0 and outcome.after.get("weight-step", 0) == 0
    after = severe(audit(bpy, obj))
    assert not after, sorted(after)


def test_a_region_left_on_the_forearm_is_found_stretched(bpy):
    obj, _ = build(bpy, "patch")
    found = severe(audit(bpy, obj))
    assert "surface-stretch" in found and found["surface-stretch"].severity == "WARNING", sorted(found)
    assert found["surface-stretch"].bones[0] == "Hand"
    assert found["surface-stretch"].details["worst"] > 2.0
    assert "weight-step" in found
