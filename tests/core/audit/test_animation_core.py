# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation audit's numpy side on rigs built in numpy: the per-frame measures against the
closed form of a twisted tube, batches that do not change the result, the engine target's offset
while a clip plays, and the key checks on hand-made key lists."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.animation import ActionMeasures, action_findings
from skin_audit.core.audit.animation_data import ActionData, Channel, EulerSamples, animation_data_findings
from skin_audit.core.audit.engine_target import prepare_target
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.engines.targets import get_target
from tests.factories import numpy_rigs as nr


def twist_channels(rig: nr.Rig, degrees) -> np.ndarray:
    """(P, J, 4, 4) the child turned about the tube's axis (+Y) by each angle."""
    return np.stack([nr.channels(rig.rows, {"Child": nr.rotation("y", math.radians(d))}) for d in degrees])


def closed_form(w: float, degrees: float) -> float:
    """The seed's r'/r for child weight w at a twist of ``degrees`` (the blend's in-plane singular value)."""
    return math.sqrt(1 - 4 * w * (1 - w) * math.sin(math.radians(degrees) / 2) ** 2)


def play(mesh, degrees, batch=16, target=None):
    m = ActionMeasures(mesh, "Twist", get_target(target) if target else None)
    prepared = prepare_target(mesh, get_target(target)) if target else None
    channels = twist_channels_of(mesh, degrees)
    frames = [float(k + 1) for k in range(len(degrees))]
    for lo in range(0, len(degrees), batch):
        m.add(frames[lo:lo + batch], channels[lo:lo + batch], prepared)
    return m


def twist_channels_of(mesh, degrees):
    rig = nr.chain_tube(("Root", "Child"))
    assert mesh.bones.names == tuple(r.name for r in rig.rows)
    return twist_channels(rig, degrees)


DEGREES = [0, 30, 60, 90, 120, 150, 170, 150, 90, 0]


def test_each_frames_worst_is_the_closed_form_of_the_middle_ring():
    mesh = nr.skinned_mesh(nr.chain_tube(("Root", "Child")))
    m = play(mesh, DEGREES)
    # Ring weights 0, 0, 0, 1/4, 1/2, 3/4, 1, 1, 1: the half-and-half ring collapses most.
    np.testing.assert_allclose(m.sigma_min, [closed_form(0.5, d) for d in DEGREES], atol=1e-12)
    assert m.worst_frames(m.sigma_min, lowest=True)[0] == 7.0
    ring = nr.ring(4)
    assert np.all(m.sigma_frame[ring] == 7.0)
    np.testing.assert_allclose(m.vertex_sigma[ring], closed_form(0.5, 170), atol=1e-12)
    np.testing.assert_allclose(m.vertex_sigma[nr.ring(3)], closed_form(0.25, 170), atol=1e-12)


def test_the_influence_table_and_the_layouts_runs_give_one_jacobian():
    from tests.factories.animation_reference import frame_linear

    rig = nr.chain_tube(("Root", "Child", "Tip"))
    mesh = nr.skinned_mesh(rig, mesh_to_armature=nr.rotation("x", 0.3) @ np.diag([2.0, 2.0, 2.0, 1.0]))
    channels = np.stack([nr.channels(rig.rows, {"Child": nr.rotation("z", 1.1), "Tip": nr.rotation("y", 0.4)}),
                         nr.channels(rig.rows, {"Root": nr.rotation("x", -0.7)})])
    by_table, by_runs = frame_linear(mesh, channels), frame_linear(mesh, channels, by_runs=True)
    np.testing.assert_allclose(by_table, by_runs, atol=1e-12)
    # The Jacobian of the recomputed positions, by central differences along each axis.
    from skin_audit.core.audit.armature_modifier import recompute_blender

    v, h = 37, 1e-6
    numeric = np.zeros((3, 3))
    for k in range(3):
        shifted = []
        for sign in (1, -1):
            rest = mesh.rest.copy()
            rest[v, k] += sign * h
            moved = nr.skinned_mesh(nr.Rig(rig.rows, rest, rig.groups, rig.edges), blender=None,
                                    mesh_to_armature=nr.rotation("x", 0.3) @ np.diag([2.0, 2.0, 2.0, 1.0]))
            shifted.append(recompute_blender(moved, moved.read_pose.at(channels[0])).positions[v])
        numeric[:, k] = (shifted[0] - shifted[1]) / (2 * h)
    np.testing.assert_allclose(by_table[0, v], numeric, atol=1e-7)


def test_batches_do_not_change_the_result():
    mesh = nr.skinned_mesh(nr.chain_tube(("Root", "Child")))
    one, many = play(mesh, DEGREES, batch=1), play(mesh, DEGREES, batch=64)
    for field in ("sigma_min", "det_min"):
        assert getattr(one, field) == getattr(many, field)
    for field in ("vertex_sigma", "vertex_det", "sigma_frame", "det_frame"):
        np.testing.assert_array_equal(getattr(one, field), getattr(many, field))


def test_findings_name_the_frame_the_vertices_and_the_bones():
    mesh = nr.skinned_mesh(nr.chain_tube(("Root", "Child")))
    found, entry = action_findings(play(mesh, DEGREES), AuditOptions())
    by = {f.code: f for f in found}
    c = by["animation-collapse"]
    assert c.severity == "WARNING" and c.details["frame"] == 7.0 and set(c.bones) == {"Root", "Child"}
    assert c.details["worst_value"] == pytest.approx(closed_form(0.5, 170), abs=1e-12)
    # Below 0.5 at 170 degrees: the half-and-half ring only (1/4 and 3/4 keep 0.506).
    assert closed_form(0.25, 170) > 0.5 > closed_form(0.5, 170)
    assert set(c.vertices) == set(nr.ring(4))
    assert by["animation-volume-loss"].severity == "WARNING"
    assert entry["worst_frames"]["collapse"][:2] == [7.0, 6.0]
    assert entry["timeline"]["frame"] == [float(k + 1) for k in range(len(DEGREES))]
    quiet, _ = action_findings(play(mesh, [0, 20, 40, 20, 0]), AuditOptions())
    assert not quiet


def test_a_target_keeping_fewer_influences_diverges_while_it_plays():
    rig = nr.chain_tube(("Root", "Child", "Tip", "End", "Last"))
    groups = {g: np.full(len(rig.rest), 0.2) for g in rig.groups}  # five influences each
    crowded = nr.Rig(rig.rows, rig.rest, groups, rig.edges)
    mesh = nr.skinned_mesh(crowded)
    m = ActionMeasures(mesh, "Wave", get_target("threejs"))
    prepared = prepare_target(mesh, get_target("threejs"))
    frames = [1.0, 2.0, 3.0]
    channels = np.stack([nr.channels(crowded.rows, {"Last": nr.rotation("x", math.radians(d))}) for d in (0, 45, 90)])
    m.add(frames, channels, prepared)
    assert m.divergence_max[0] == pytest.approx(0.0, abs=1e-12)
    assert m.divergence_max[2] > m.divergence_max[1] > 0
    found, entry = action_findings(m, AuditOptions())
    d = next(f for f in found if f.code == "animation-engine-divergence")
    assert d.severity == "WARNING" and d.details["frame"] == 3.0 and d.details["target"] == "threejs"
    assert entry["worst_frames"]["engine_divergence"] == [3.0, 2.0]


def test_a_spot_check_that_disagrees_is_an_error():
    mesh = nr.skinned_mesh(nr.chain_tube(("Root", "Child")))
    m = play(mesh, [0, 10])
    m.spot_checks += [(1.0, 0.0), (2.0, 0.01)]
    found, entry = action_findings(m, AuditOptions())
    f = next(f for f in found if f.code == "animation-mismatch")
    assert f.severity == "ERROR" and f.details["frame"] == 2.0
    assert entry["spot_checks"][1]["max_numpy_vs_blender_relative"] == 0.01


def bones():
    rows = [nr.BoneRow("Root", (0, 0, 0), (0, 1, 0)), nr.BoneRow("Arm", (0, 1, 0), (0, 2, 0), "Root"),
            nr.BoneRow("ctrl", (1, 1, 0), (1, 2, 0), None, use_deform=False)]
    b = nr.bones_table(rows)
    from dataclasses import replace

    return replace(b, driven_by=((), ("ctrl",), ()))  # Arm follows the control through a constraint


def keys(path, index, *pairs):
    return Channel(path, index, tuple(pairs))


def codes(found):
    return {(f.code, f.severity): f for f in found}


def test_scale_keys_by_kind_on_deform_bones_only():
    b = bones()
    action = ActionData("Act", (1, 10), (
        *(keys('pose.bones["Root"].scale', i, (1, 1.0), (5, 0.0)) for i in range(3)),
        *(keys('pose.bones["Arm"].scale', i, (1, 1.0), (5, -1.0 if i == 0 else 1.0)) for i in range(3)),
        *(keys('pose.bones["ctrl"].scale', i, (1, 0.0)) for i in range(3)),
    ))
    f = codes(animation_data_findings("Rig", b, [action]))[("animation-scale-keys", "WARNING")]
    assert f.details["zero"] == ["Root"] and f.details["negative"] == ["Arm"]
    uneven = ActionData("Squash", (1, 10), tuple(keys('pose.bones["Arm"].scale', i, (1, 1.0), (5, (1.0, 2.0, 1.0)[i]))
                                                 for i in range(3)))
    f = codes(animation_data_findings("Rig", b, [uneven]))[("animation-scale-keys", "INFO")]
    assert f.details["non_uniform"] == ["Arm"]
    even = ActionData("Grow", (1, 5), tuple(keys('pose.bones["Arm"].scale', i, (1, 1.0), (5, 2.0)) for i in range(3)))
    assert not animation_data_findings("Rig", b, [even])


def test_object_keys_missing_bones_helpers_and_ranges():
    b = bones()
    action = ActionData("Act", (1, 40), (
        keys("location", 0, (1, 0.0), (10, 1.0)),
        keys('pose.bones["Gone"].location', 0, (1, 0.0)),
        keys('pose.bones["ctrl"].location', 1, (1, 0.0), (10, 1.0)),
    ))
    found = codes(animation_data_findings("Rig", b, [action]))
    assert found[("armature-object-keys", "INFO")].details["paths"] == ["location"]
    assert found[("animation-missing-bone", "WARNING")].bones == ("Gone",)
    helper = found[("animation-helper-keys", "INFO")]
    assert helper.bones == ("ctrl",) and helper.details["deform_bones_moved"] == ["Arm"]
    r = found[("action-range-beyond-keys", "INFO")]
    assert r.details["frame_range"] == [1, 40] and r.details["keys"] == [1, 10]
    fitting = ActionData("Fit", (1, 10), (keys('pose.bones["Arm"].location', 0, (1, 0.0), (10, 1.0)),))
    assert not animation_data_findings("Rig", b, [fitting])


def test_euler_flips_over_half_a_turn_between_frames():
    b = bones()
    frames = (1.0, 2.0, 3.0, 4.0)
    flip = EulerSamples("Arm", 2, frames, tuple(math.radians(d) for d in (170, 175, -175, -170)))
    smooth = EulerSamples("Root", 0, frames, tuple(math.radians(d) for d in (0, 90, 179, 260)))
    found = codes(animation_data_findings("Rig", b, [ActionData("Spin", (1, 4), (), (flip, smooth))]))
    f = found[("animation-euler-flip", "WARNING")]
    assert f.bones == ("Arm",) and f.details["frame"] == 2.0
    assert f.details["jump_degrees"] == pytest.approx(350.0)


@pytest.mark.parametrize("target", ["threejs", "gltf", "raw", "babylon"])
def test_a_targets_positions_at_many_poses_are_its_positions_at_each(target):
    from skin_audit.core.audit.engine_target import target_positions, target_positions_many

    rig = nr.chain_tube(("Root", "Child", "Tip", "End", "Last"))
    groups = {g: np.full(len(rig.rest), 0.2) for g in rig.groups}  # five influences: three.js splits the mesh
    crowded = nr.Rig(rig.rows, rig.rest, groups, rig.edges)
    mesh = nr.skinned_mesh(crowded, mesh_to_armature=nr.rotation("x", 0.3))
    t = get_target(target)
    prepared = prepare_target(mesh, t)
    channels = np.stack([nr.channels(crowded.rows, {"Last": nr.rotation("x", math.radians(d)),
                                                    "Child": nr.rotation("z", 0.3)}) for d in (0, 45, 90)])
    np.testing.assert_array_equal(target_positions_many(mesh, channels, prepared),
                                  np.stack([target_positions(mesh, t, c, prepared) for c in channels]))
