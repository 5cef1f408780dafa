# SPDX-License-Identifier: GPL-3.0-or-later
"""The recomputation against Blender, bind-pose drift and engine divergence on
numpy rigs (core tier).

"Blender" here is tests/factories/numpy_rigs.blender_positions: a per-vertex
Python loop of the Armature modifier's formula, rounded to float32; the
engine is numpy_rigs.engine_positions; poses come from numpy_rigs.channels.
None of them calls skin_audit.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings
from tests.core.audit.rule_helpers import audit, codes, only
from tests.factories import numpy_rigs as nr

V = 72
POSED = {"Child": nr.rotation("x", 0.8)}
#: float32 positions of a size-2 mesh against the float64 recomputation (measured ~1.2e-7).
FLOAT32_MATCH = 1e-6


def clean(basis=None) -> nr.Rig:
    return nr.chain_tube(basis=POSED if basis is None else basis)


def with_groups(rig: nr.Rig, **groups) -> nr.Rig:
    new = {k: v.copy() for k, v in rig.groups.items()}
    new.update({k: np.asarray(v, dtype=np.float64) for k, v in groups.items()})
    return nr.Rig(rig.rows, rig.rest, new, rig.edges, rig.basis)


def object_matrix() -> np.ndarray:
    """A mesh-to-armature matrix with rotation, translation and uniform scale."""
    m = nr.rotation("z", 0.4) @ nr.rotation("x", -0.3)
    m[:3, :3] *= 1.5
    m[:3, 3] = (0.3, -1.0, 2.0)
    return m


# ------------------------------------------------------------ skinning-mismatch


def _variant(name: str):
    """(rig, skinned_mesh keywords) for a piece of the modifier's semantics."""
    rig = clean()
    if name == "posed chain":
        return rig, {}
    if name == "object transforms":
        return rig, {"mesh_to_armature": object_matrix()}
    if name == "translated, scaled and rotated pose":
        basis = {"Root": nr.rotation("z", 0.5), "Child": nr.rotation("y", 1.1) @ np.diag([1.3, 0.7, 1.0, 1.0])}
        basis["Root"][:3, 3] = (0.2, 0.0, -0.4)
        return clean(basis), {}
    if name == "unnormalised and tiny sums":
        root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
        root[nr.ring(4)] = child[nr.ring(4)] = 0.2
        child[nr.ring(7)] = 3e-4  # just above the 1e-4 rule, renormalised to a full weight
        root[nr.ring(0)] = 5e-5  # below it: stays put
        return with_groups(rig, Root=root, Child=child), {}
    if name.startswith("mask"):
        mask = np.linspace(0.0, 1.0, V)
        return with_groups(rig, Mask=mask), {"modifier": ArmatureModifierSettings(
            "A", mask_group="Mask", invert_mask=name.endswith("inverted"))}
    if name == "non-deform bone's group":
        root, child = rig.rows  # Child's weights are ignored; Root's renormalised to full weight
        return nr.Rig((root, nr.BoneRow(**{**child.__dict__, "use_deform": False})), rig.rest, rig.groups,
                      rig.edges, {**rig.basis, "Root": nr.rotation("z", 0.3)}), {}
    raise ValueError(name)


@pytest.mark.parametrize("variant", ["posed chain", "object transforms", "translated, scaled and rotated pose",
                                     "unnormalised and tiny sums", "mask", "mask inverted",
                                     "non-deform bone's group"])
def test_recomputation_matches_the_modifiers_formula(variant):
    rig, kw = _variant(variant)
    result = audit(nr.skinned_mesh(rig, **kw))
    assert "skinning-mismatch" not in codes(result)
    assert result.metrics["vertices_compared"] == V
    assert result.metrics["max_numpy_vs_blender"] <= FLOAT32_MATCH
    # The pose really moves something: a comparison with a still mesh proves nothing.
    moved = nr.skinned_mesh(rig, **kw).blender - rig.rest
    assert np.abs(moved).max() > 0.1


@pytest.mark.parametrize("variant", ["posed chain", "object transforms", "translated, scaled and rotated pose",
                                     "unnormalised and tiny sums", "mask", "mask inverted",
                                     "non-deform bone's group"])
@pytest.mark.parametrize("build_layout", [False, True], ids=["one dense product", "layout of runs"])
def test_recomputed_positions_equal_the_formula_to_float64(variant, build_layout):
    """The recomputation itself, not the audit's float32 tolerance: equal to rounding, by either
    path (a first pose without the layout takes the dense product)."""
    from skin_audit.core.audit.armature_modifier import recompute_blender

    rig, kw = _variant(variant)
    if variant == "unnormalised and tiny sums":  # move Root too, so the sub-1e-4 vertices would move
        rig = nr.Rig(rig.rows, rig.rest, rig.groups, rig.edges, {**rig.basis, "Root": nr.rotation("z", 0.5)})
    mesh = nr.skinned_mesh(rig, blender=None, **kw)
    modifier = mesh.modifier
    own = nr.blender_positions(rig.rest, rig.group_names, rig.weight_array(), rig.rows, rig.channel(),
                               kw.get("mesh_to_armature"), modifier.mask_group, modifier.invert_mask, float32=False)
    got = recompute_blender(mesh, mesh.read_pose, build_layout=build_layout).positions
    np.testing.assert_allclose(got, own, rtol=0, atol=1e-12)
    assert mesh.has_blend_layout() == build_layout


def test_skinning_mismatch_names_the_vertices_that_moved_otherwise():
    rig = clean()
    blender = nr.skinned_mesh(rig).blender.copy()
    blender[[20, 50]] += (0.0, 0.01, 0.0)
    result = audit(nr.skinned_mesh(rig, blender=blender))
    found = only(result, "skinning-mismatch", "ERROR")
    assert (found.vertices, found.count) == ((20, 50), 2)
    assert found.details["max_difference"] == pytest.approx(0.01, rel=1e-3)
    assert result.metrics["max_numpy_vs_blender"] == pytest.approx(0.01, rel=1e-3)


def test_without_blenders_positions_nothing_is_compared():
    result = audit(nr.skinned_mesh(clean(), blender=None))
    assert result.metrics["max_numpy_vs_blender"] is None and "vertices_compared" not in result.metrics


# ------------------------------------------------------------ dqs-order-sensitive


def _three_bone_rig(child_twist_degrees: float) -> nr.Rig:
    """Bones A, B, C on +Y; ring 4 weighs A .4, B .3, C .3 (group order A, B, C).

    B twists 150 degrees and C a further ``child_twist_degrees``.  With 60, C's
    rotation is 210 degrees: as a unit quaternion with w >= 0 it is
    (cos 75, 0, -sin 75, 0), opposed to A + B's running sum (dot < 0), so
    Blender's result depends on the order it stores the weights in.  With 0 no
    sign flips.
    """
    rig = nr.chain_tube(("A", "B", "C"), basis={"B": nr.rotation("y", math.radians(150)),
                                                "C": nr.rotation("y", math.radians(child_twist_degrees))})
    groups = {k: v.copy() for k, v in rig.groups.items()}
    for name, w in (("A", 0.4), ("B", 0.3), ("C", 0.3)):
        groups[name][nr.ring(4)] = w
    return nr.Rig(rig.rows, rig.rest, groups, rig.edges, rig.basis)


def test_dqs_order_sensitive():
    dqs = ArmatureModifierSettings("A", preserve_volume=True)
    found = only(audit(nr.skinned_mesh(_three_bone_rig(60.0), blender=None, modifier=dqs)),
                 "dqs-order-sensitive", "INFO")
    assert (found.vertices, found.count) == (tuple(nr.ring(4)), 8)
    assert "dqs-order-sensitive" not in codes(audit(nr.skinned_mesh(_three_bone_rig(0.0), blender=None,
                                                                    modifier=dqs)))
    # Only Preserve Volume blends quaternions.
    assert "dqs-order-sensitive" not in codes(audit(nr.skinned_mesh(_three_bone_rig(60.0))))


# ------------------------------------------------------------ bind-pose-drift


def test_bind_pose_drift_at_rest_position_names_its_causes():
    rig = clean()
    at_rest = rig.rest.copy()
    at_rest[[3, 4]] += (0.0, 0.0, 0.01)
    mesh = nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=at_rest, shape_keys_active=("Key 1",),
                           modifiers_before=("Displace",))
    found = only(audit(mesh), "bind-pose-drift", "ERROR")
    assert (found.vertices, found.count) == ((3, 4), 2)
    assert found.details["causes"] == ["shape key 'Key 1'", "modifier 'Displace'"]
    assert found.details["max_drift"] == pytest.approx(0.01)
    still = nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=rig.rest.astype(np.float32).astype(float))
    assert "bind-pose-drift" not in codes(audit(still))
    # A key Shape Key Lock pins is named as pinned: a display switch, not a key left on.
    pinned = nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=at_rest, shape_keys_active=("Key 1", "Smile"),
                             shape_key_pinned="Smile")
    assert only(audit(pinned), "bind-pose-drift", "ERROR").details["causes"] == [
        "shape key 'Key 1'", "shape key 'Smile' (pinned by Shape Key Lock: shown alone at full strength whatever "
        "its value)"]


@pytest.mark.parametrize("fraction, severity", [(2e-3, "ERROR"), (5e-4, "INFO")])
def test_bind_pose_drift_one_cannot_see_is_info(fraction, severity):
    """Drift from one pixel of a 1000-pixel view (1e-3 of the mesh size) is an ERROR; lighter, INFO."""
    rig = clean()
    mesh = nr.skinned_mesh(rig)
    at_rest = rig.rest.copy()
    at_rest[3] += (0.0, 0.0, fraction * mesh.size())
    found = only(audit(nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=at_rest)), "bind-pose-drift")
    assert (found.severity, found.vertices) == (severity, (3,))
    assert ("under the 0.001 one can see" in found.message) == (severity == "INFO")


def test_vertices_only_a_driven_shape_key_moves_are_not_drift():
    rig = clean()
    at_rest = rig.rest.copy()
    at_rest[[3, 4]] += (0.0, 0.0, 0.1)
    driven = np.zeros(len(rig.rest), dtype=bool)
    driven[[3, 4, 5]] = True
    mesh = nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=at_rest, shape_keys_driven=("Fix",),
                           driven_key_vertices=driven)
    found = only(audit(mesh), "bind-pose-drift", "INFO")
    assert found.vertices == (3, 4) and "'Fix'" in found.message
    # A vertex the key does not move is still drift.
    driven[4] = False
    assert only(audit(nr.skinned_mesh(rig, modelled=rig.rest, blender_at_rest=at_rest, shape_keys_driven=("Fix",),
                                      driven_key_vertices=driven)), "bind-pose-drift", "ERROR").vertices == (3, 4)


def test_bind_pose_drift_from_a_bone_held_away_from_rest():
    rig = clean()
    held = nr.channels(rig.rows, {"Child": nr.rotation("x", 0.3)})
    result = audit(nr.skinned_mesh(rig, cleared_channel=held))
    found = only(result, "bind-pose-drift", "ERROR")
    # Every vertex Child weighs moves, except the two on Child's X axis (the line y = 1, z = 0).
    on_axis = {32, 36}
    expected = tuple(v for r in range(3, 9) for v in nr.ring(r) if v not in on_axis)
    assert (found.vertices, found.count, found.bones) == (expected, len(expected), ("Child",))
    # The drift is the pose's own displacement, from the independent loop.
    own = nr.blender_positions(rig.rest, rig.group_names, rig.weight_array(), rig.rows, held, float32=False)
    assert found.details["max_drift"] == pytest.approx(np.linalg.norm(own - rig.rest, axis=1).max(), rel=1e-9)
    identity = np.broadcast_to(np.eye(4), (2, 4, 4)).copy()
    assert "bind-pose-drift" not in codes(audit(nr.skinned_mesh(rig, cleared_channel=identity)))


# ------------------------------------------------------------ engine-divergence


def stress_channels(rig: nr.Rig, degrees: float = 90.0) -> list[np.ndarray]:
    """Every deform bone turned about its own X, Y, Z by ``degrees`` at once (the README's stress poses)."""
    return [nr.channels(rig.rows, {r.name: nr.rotation(axis, math.radians(degrees)) for r in rig.rows
                                   if r.use_deform}) for axis in "xyz"]


def own_divergence(rig: nr.Rig, weights=None, mesh_to_armature=None, mask_group: str = "") -> np.ndarray:
    """(V,) the largest engine-vs-Blender distance at the current pose and the three stress poses."""
    w = rig.weight_array() if weights is None else weights
    worst = np.zeros(len(rig.rest))
    for channel in [rig.channel()] + stress_channels(rig):
        b = nr.blender_positions(rig.rest, rig.group_names, w, rig.rows, channel, mesh_to_armature, mask_group,
                                 float32=False)
        e = nr.engine_positions(rig.rest, rig.group_names, w, rig.rows, channel, 4, mesh_to_armature)
        worst = np.maximum(worst, np.linalg.norm(b - e, axis=1))
    return worst


def test_engine_divergence_of_unnormalised_weights():
    rig = clean()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[nr.ring(4)] = child[nr.ring(4)] = 0.45
    off = with_groups(rig, Root=root, Child=child)
    result = audit(nr.skinned_mesh(off), target="raw")  # the historical model, named
    found = only(result, "engine-divergence", "WARNING")
    own = own_divergence(off)
    expected = tuple(np.flatnonzero(own > 1e-3 * 2.0).tolist())
    assert expected == tuple(nr.ring(4))
    assert (found.vertices, found.count) == (expected, 8)
    np.testing.assert_allclose(result.measures["engine_divergence"], own, atol=1e-9)


def test_engine_divergence_found_at_a_stress_pose_only():
    """At rest a masked vertex sits where an engine puts it; a stress pose moves it only in the engine."""
    rig = clean(basis={})
    mask = np.ones(V)
    mask[nr.ring(5)] = 0.5
    masked = with_groups(rig, Mask=mask)
    mesh = nr.skinned_mesh(masked, modifier=ArmatureModifierSettings("A", mask_group="Mask"))
    own = own_divergence(masked, mask_group="Mask")
    current = np.linalg.norm(nr.engine_positions(rig.rest, masked.group_names, masked.weight_array(), rig.rows,
                                                 rig.channel()) - mesh.blender, axis=1)
    assert current.max() < 1e-6  # nothing to see at the current pose
    result = audit(mesh, target="raw")
    found = only(result, "engine-divergence", "WARNING")
    assert found.vertices == tuple(nr.ring(5)) == tuple(np.flatnonzero(own > 2e-3).tolist())
    assert found.details["pose"] != "current"
    np.testing.assert_allclose(result.measures["engine_divergence"], own, atol=1e-9)


def test_engines_collapse_unweighted_vertices_to_the_armature_origin():
    rig = clean()
    root = rig.groups["Root"].copy()
    root[nr.ring(0)] = 0.0
    pre = object_matrix()
    unweighted = with_groups(rig, Root=root)
    result = audit(nr.skinned_mesh(unweighted, mesh_to_armature=pre), target="raw")
    origin = np.linalg.inv(pre)[:3, 3]  # the armature's origin in mesh space
    expected = np.linalg.norm(rig.rest[nr.ring(0)] - origin, axis=1)
    np.testing.assert_allclose(result.measures["engine_divergence"][nr.ring(0)], expected, rtol=1e-9)
    assert set(nr.ring(0)) <= set(only(result, "engine-divergence").vertices)
    np.testing.assert_allclose(result.measures["engine_divergence"], own_divergence(unweighted, mesh_to_armature=pre),
                               atol=1e-9)


@pytest.mark.parametrize("target", ["raw", "threejs"])
def test_engine_divergence_from_weight_differences_is_the_distance_of_both_blends(target):
    """Where the target blends Blender's own (bone, vertex) pairs, the audit blends only the weight
    differences; the distances equal those of the two deformations computed apart (and the
    independent per-vertex loops), with the mesh away from the armature's origin."""
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from skin_audit.core.audit.engine_target import (
        _offsets,
        audit_target,
        engine_offsets,
        prepare_target,
        target_positions,
    )
    from skin_audit.core.audit.options import AuditOptions

    rig = clean()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[nr.ring(4)] = child[nr.ring(4)] = 0.45
    root[nr.ring(6)] = 0.3  # three-quarters of a ring more off
    off = with_groups(rig, Root=root, Child=child)
    pre = object_matrix()
    mesh = nr.skinned_mesh(off, mesh_to_armature=pre)
    chosen = audit_target(AuditOptions(target=target))
    prepared = prepare_target(mesh, chosen)
    assert prepared.offsets is not None  # the shared path is the one under test
    for channel in [mesh.read_pose.channel] + stress_channels(off):
        both = np.linalg.norm(target_positions(mesh, chosen, channel, prepared)
                              - recompute_blender(mesh, mesh.read_pose.at(channel)).positions, axis=1)
        np.testing.assert_allclose(engine_offsets(mesh, channel, prepared), both, rtol=0, atol=1e-12)
    # Weights the exporter keeps bit for bit (quarters summing to 1): nothing is laid out, the
    # distances are zero, and so are those of the two blends.
    quarter = np.round(rig.groups["Root"] * 4.0) / 4.0
    exact = nr.skinned_mesh(with_groups(rig, Root=quarter, Child=1.0 - quarter), mesh_to_armature=pre)
    exact_prepared = prepare_target(exact, chosen)
    assert exact_prepared.offsets is not None and len(exact_prepared.offsets.runs.vertex) == 0
    for channel in [exact.read_pose.channel] + stress_channels(off):
        both = np.linalg.norm(target_positions(exact, chosen, channel, exact_prepared)
                              - recompute_blender(exact, exact.read_pose.at(channel)).positions, axis=1)
        np.testing.assert_allclose(engine_offsets(exact, channel, exact_prepared), both, rtol=0, atol=1e-12)
    # A masked vertex or a different slot makes the engine's pairs not Blender's: both blends then.
    mask = np.ones(V)
    mask[nr.ring(5)] = 0.5
    masked = nr.skinned_mesh(with_groups(off, Mask=mask), mesh_to_armature=pre,
                             modifier=ArmatureModifierSettings("A", mask_group="Mask"))
    assert prepare_target(masked, chosen).offsets is None
    engine = prepared.parts[0][1]
    swapped = replace(engine, joints=engine.joints[:, ::-1], weights=engine.weights[:, ::-1])
    assert _offsets(mesh, ((None, swapped),)) is None  # same pairs, other slots: not compared slot by slot
    assert _offsets(mesh, ((None, engine),)) is not None
    if target == "raw":
        result = audit(mesh, target="raw")
        np.testing.assert_allclose(result.measures["engine_divergence"],
                                   own_divergence(off, mesh_to_armature=pre), atol=1e-9)


@pytest.mark.parametrize("target", ["raw", "threejs"])
def test_a_vertex_without_a_finite_rest_position_is_infinitely_far(target):
    """Clean weights (the target blends Blender's pairs with Blender's weights), one NaN rest
    position: that vertex diverges infinitely at every pose, the others not at all."""
    rig = clean()
    rest = rig.rest.copy()
    rest[5] = np.nan
    broken = nr.Rig(rig.rows, rest, rig.groups, rig.edges, rig.basis)
    result = audit(nr.skinned_mesh(broken, blender=None), target=target)
    divergence = result.measures["engine_divergence"]
    assert np.isinf(divergence[5]) and np.all(divergence[np.arange(V) != 5] < 1e-9)
    assert only(result, "engine-divergence").vertices == (5,)


def test_no_engine_divergence_on_clean_weights():
    result = audit(nr.skinned_mesh(clean()), target="raw")
    assert "engine-divergence" not in codes(result)
    assert result.metrics["max_engine_divergence"] < 1e-9


# ------------------------------------------------------------ Preserve Volume against closed forms


def twist_closed_form(rig: nr.Rig, degrees: float) -> np.ndarray:
    """(V, 3) Preserve Volume of a tube whose Child twists about the shared Y axis.

    Blending the unit quaternions 1 and (cos a/2, 0, sin a/2, 0) with weights 1 - t and t
    gives a rotation about Y by ``2 atan2(t sin(a/2), 1 - t + t cos(a/2))``: radii kept.
    """
    t = rig.weight_array()[1].astype(np.float64)
    half = math.radians(degrees) / 2.0
    phi = 2.0 * np.arctan2(t * math.sin(half), 1.0 - t + t * math.cos(half))
    x, y, z = rig.rest.T
    # A rotation about +Y: x' = x cos + z sin, z' = -x sin + z cos.
    out = np.column_stack([x * np.cos(phi) + z * np.sin(phi), y, -x * np.sin(phi) + z * np.cos(phi)])
    return out.astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("degrees", [100.0, 170.0])
def test_preserve_volume_twist_matches_the_quaternion_blend(degrees):
    rig = clean({"Child": nr.rotation("y", math.radians(degrees))})
    dqs = ArmatureModifierSettings("A", preserve_volume=True)
    expected = twist_closed_form(rig, degrees)
    result = audit(nr.skinned_mesh(rig, blender=expected, modifier=dqs))
    assert "skinning-mismatch" not in codes(result)
    assert result.metrics["vertices_compared"] == V
    assert result.metrics["max_numpy_vs_blender"] <= FLOAT32_MATCH
    # LBS would shrink the 50/50 ring: the closed form is not what LBS gives.
    lbs = nr.blender_positions(rig.rest, rig.group_names, rig.weight_array(), rig.rows, rig.channel())
    assert np.abs(lbs - expected).max() > 0.1
    # And a vertex off the closed form is a mismatch.
    off = expected.copy()
    off[36] += (0.0, 0.0, 0.01)
    assert only(audit(nr.skinned_mesh(rig, blender=off, modifier=dqs)), "skinning-mismatch").vertices == (36,)


def test_preserve_volume_of_single_bone_vertices_is_the_bone_matrix_with_scale_and_object_transform():
    """A vertex on one bone moves by that bone's whole matrix (scale folded in) under DQS as under LBS."""
    rig = clean({"Root": nr.rotation("z", 0.3), "Child": nr.rotation("x", 0.9) @ np.diag([1.4, 0.8, 1.1, 1.0])})
    rigid = {"Root": (rig.rest[:, 1] < 0.9).astype(float), "Child": (rig.rest[:, 1] >= 0.9).astype(float)}
    one_bone = nr.Rig(rig.rows, rig.rest, rigid, rig.edges, rig.basis)
    pre = object_matrix()
    expected = nr.blender_positions(rig.rest, one_bone.group_names, one_bone.weight_array(), rig.rows, rig.channel(),
                                    pre)
    dqs = ArmatureModifierSettings("A", preserve_volume=True)
    result = audit(nr.skinned_mesh(one_bone, blender=expected, modifier=dqs, mesh_to_armature=pre))
    assert "skinning-mismatch" not in codes(result)
    assert result.metrics["max_numpy_vs_blender"] <= FLOAT32_MATCH * 4  # a size-3 mesh after the 1.5 scale
    assert np.abs(expected - rig.rest).max() > 0.5


def test_engine_keeps_the_largest_weights_as_a_fixed_joint_array_would():
    """Six bones; ring 4 weighs all six (distinct, in shuffled group order), ring 5 five equal
    weights (ties keep group order), vertex 48 five weights of which two negative: -0.05
    ranks below the zero of the group it is not in, so only three are kept."""
    names = ("B0", "B1", "B2", "B3", "B4", "B5")
    rig = nr.chain_tube(names, basis={"B1": nr.rotation("x", 0.5), "B3": nr.rotation("z", -0.7),
                                      "B4": nr.rotation("y", 1.2)})
    groups = {n: rig.groups[n].copy() for n in names}
    for n, w in zip(names, (0.1, 0.3, 0.05, 0.25, 0.2, 0.1), strict=True):
        groups[n][nr.ring(4)] = w
    for n in names:
        groups[n][nr.ring(5)] = 0.2 if n != "B0" else 0.0
        groups[n][48] = 0.0
    for n, w in zip(("B1", "B2", "B3", "B4", "B5"), (0.5, -0.05, 0.4, 0.3, -0.15), strict=True):
        groups[n][48] = w
    crowded = nr.Rig(rig.rows, rig.rest, groups, rig.edges, rig.basis)
    pre = object_matrix()  # the armature origin away from the mesh's: dropped weight goes there
    result = audit(nr.skinned_mesh(crowded, mesh_to_armature=pre), target="raw")
    own = own_divergence(crowded, mesh_to_armature=pre)
    assert own[nr.ring(4)].min() > 1e-3 and own[nr.ring(5)].min() > 1e-3 and own[48] > 1e-3
    np.testing.assert_allclose(result.measures["engine_divergence"], own, atol=1e-9)


def twist_pair_closed_form(rig: nr.Rig, root_degrees: float, child_degrees: float, turn: bool = True) -> np.ndarray:
    """(V, 3) Preserve Volume when Root twists by ``root_degrees`` about +Y and Child (on the same
    axis) by ``child_degrees`` in all: the two unit quaternions (w >= 0, as a matrix gives them)
    blend with Child's sign turned against Root's when they are opposed (Blender's
    add_weighted_dq_dq_pivot), and the vertex turns about Y by twice the blend's angle."""
    def q(deg: float) -> np.ndarray:
        h = math.radians(deg) / 2.0
        out = np.array([math.cos(h), math.sin(h)])
        return out if out[0] >= 0 else -out

    w = rig.weight_array().astype(np.float64)
    q1, q2 = q(root_degrees), q(child_degrees)
    # Per vertex: the running sum after Root is w_root q1; Child's sign is turned against it.
    sign = np.where((w[0] > 0) & (float(q1 @ q2) < 0) & turn, -1.0, 1.0)
    blend = w[0][:, None] * q1 + (w[1] * sign)[:, None] * q2
    phi = 2.0 * np.arctan2(blend[:, 1], blend[:, 0])
    x, y, z = rig.rest.T
    out = np.column_stack([x * np.cos(phi) + z * np.sin(phi), y, -x * np.sin(phi) + z * np.cos(phi)])
    return out.astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("root, child_local, opposed", [(100.0, 160.0, True), (-40.0, 90.0, False)])
def test_preserve_volume_blends_against_the_running_sign(root, child_local, opposed):
    """100 + 160 = 260 degrees: Child's quaternion is opposed to Root's and Blender turns it."""
    rig = clean({"Root": nr.rotation("y", math.radians(root)), "Child": nr.rotation("y", math.radians(child_local))})
    expected = twist_pair_closed_form(rig, root, root + child_local)
    dqs = ArmatureModifierSettings("A", preserve_volume=True)
    result = audit(nr.skinned_mesh(rig, blender=expected, modifier=dqs))
    assert "skinning-mismatch" not in codes(result) and "dqs-order-sensitive" not in codes(result)
    assert result.metrics["max_numpy_vs_blender"] <= FLOAT32_MATCH
    unturned = twist_pair_closed_form(rig, root, root + child_local, turn=False)
    assert (np.abs(unturned - expected).max() > 0.1) == opposed  # the sign rule decides this case


def test_preserve_volume_of_translated_bones_blends_the_translations():
    """Pure translations blend linearly under DQS too: the modifier's formula is the closed form."""
    root, child = np.eye(4), np.eye(4)
    root[:3, 3], child[:3, 3] = (0.3, 0.0, -0.2), (0.0, 0.4, 0.5)
    rig = clean({"Root": root, "Child": child})
    groups = {k: v.copy() for k, v in rig.groups.items()}
    groups["Root"][nr.ring(4)] = groups["Child"][nr.ring(4)] = 0.4  # renormalised: sum 0.8
    rig = nr.Rig(rig.rows, rig.rest, groups, rig.edges, rig.basis)
    pre = object_matrix()
    expected = nr.blender_positions(rig.rest, rig.group_names, rig.weight_array(), rig.rows, rig.channel(), pre)
    dqs = ArmatureModifierSettings("A", preserve_volume=True)
    result = audit(nr.skinned_mesh(rig, blender=expected, modifier=dqs, mesh_to_armature=pre))
    assert "skinning-mismatch" not in codes(result)
    assert result.metrics["max_numpy_vs_blender"] <= FLOAT32_MATCH * 4


def test_bind_pose_drift_blames_only_b_bones_that_weight_a_moved_vertex():
    """Root's B-Bone weights only rings 0-5, Child's rings 3-8: drift on ring 8 names Child alone,
    drift on ring 0 Root alone, and a B-Bone with no moved vertex is never named."""
    from skin_audit.core.audit.drift_causes import rest_drift_causes

    base = clean()
    rig = nr.Rig(tuple(replace(r, bbone_segments=4) for r in base.rows), base.rest, base.groups, base.edges,
                 base.basis)
    mesh = nr.skinned_mesh(rig)
    moved = np.zeros(V, dtype=bool)
    moved[nr.ring(8)] = True  # Child's weight 1, Root's 0 there
    assert rest_drift_causes(mesh, moved) == ["B-Bone segments on Child"]
    moved[:] = False
    moved[nr.ring(0)] = True  # Root's alone
    assert rest_drift_causes(mesh, moved) == ["B-Bone segments on Root"]
    moved[nr.ring(4)] = True  # both weigh ring 4
    assert rest_drift_causes(mesh, moved) == ["B-Bone segments on Child, Root"]
    # Only Child is a B-Bone: drift where only Root weighs has no cause present.
    plain_root = nr.Rig((replace(base.rows[0], bbone_segments=1), rig.rows[1]), base.rest, base.groups, base.edges,
                        base.basis)
    moved[:] = False
    moved[nr.ring(1)] = True
    assert rest_drift_causes(nr.skinned_mesh(plain_root), moved) == []
    # Through the audit: the finding says it is unexplained rather than blaming Child.
    at_rest = base.rest.copy()
    at_rest[nr.ring(1)] += (0.0, 0.0, 0.01)
    found = only(audit(nr.skinned_mesh(plain_root, modelled=base.rest, blender_at_rest=at_rest)), "bind-pose-drift")
    assert found.details["causes"] == []
    assert "B-Bone segments on" not in found.message and "responsible: unexplained" in found.message
