# SPDX-License-Identifier: GPL-3.0-or-later
"""Rig verdicts whose severity follows what the user will see (core tier, numpy rigs):

- a one-sided asset (every side bone a right one) has no partner to miss;
- weight symmetry pairs each mesh that mirrors onto itself within itself (never a skin with the
  joint spheres beside it), pairs the meshes left together (a character split per side), and
  still judges the meshes that mirror when another part (hair) does not;
- stray weights are a WARNING only where they move their vertex visibly at the stress poses
  (closed form: ``w |(R - I)(p - h)|`` for a weight on the parent bone of a vertex carried by the
  child), INFO below;
- a static instance of a skinned mesh is not a mesh missing its modifier;
- a bone carrying a rigid part moves vertices, and a target dropping such parts says so.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core import tolerances
from skin_audit.core.audit.mesh_audit import audit_character
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.rig_audit import MissingModifier, RigidPart
from tests.core.audit.rule_helpers import audit, codes, only
from tests.factories import numpy_rigs as nr


def shape(mesh, **options):
    return audit(mesh, None, shape_checks=True, **options)


def character(rigs, names, **options):
    """The rig entry and mesh entries of ``rigs`` (one armature) audited together."""
    meshes = [nr.skinned_mesh(r, object=n) for r, n in zip(rigs, names, strict=True)]
    return audit_character("Armature", meshes, AuditOptions(shape_checks=True, **options))


def rig_codes(rig) -> set[str]:
    return {f.code for f in rig.findings}


# ------------------------------------------------------------------ one-sided assets


def _hand(suffix: str = ".R", other: str | None = None) -> nr.Rig:
    """A right hand: a palm bone and two finger chains, every bone a right one (or ``other``)."""
    rows = [nr.BoneRow(f"Hand{suffix}", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0))]
    rows += nr.chain([f"Index1{suffix}", f"Index2{suffix}"], 1.0, start=(0.2, 1.0, 0.0), parent=f"Hand{suffix}")
    rows += nr.chain([f"Thumb1{other or suffix}", f"Thumb2{other or suffix}"], 1.0, start=(-0.2, 1.0, 0.0),
                     parent=f"Hand{suffix}")
    rest, edges = nr.tube(9, 8, 0.3, 2.0)
    w = nr.chain_weights(rest[:, 1], [f"Hand{suffix}", f"Index1{suffix}"])
    return nr.Rig(tuple(rows), rest, w, edges)


def test_a_one_sided_asset_has_no_unpaired_side_bone():
    result = shape(nr.skinned_mesh(_hand()))
    assert "unpaired-side-bone" not in codes(result)
    found = only(result, "no-mirrored-bones", "INFO")
    assert "every side deform bone of the rig is a right one (5 bones" in found.message


def test_side_bones_of_both_sides_without_pairs_are_unpaired():
    """Not one-sided: left thumbs on a right hand, and no pair by name."""
    found = only(shape(nr.skinned_mesh(_hand(other=".L"))), "unpaired-side-bone", "WARNING")
    assert set(found.bones) == {"Hand.R", "Index1.R", "Index2.R", "Thumb1.L", "Thumb2.L"}


# ------------------------------------------------------------------ weight symmetry, mesh by mesh


def _arms(difference: float = 0.0, vertex: int = 20) -> nr.Rig:
    """Mirrored arm tubes in one mesh (left 72 vertices, then the right ones); ``difference``
    moves weight from Arm.L to Hand.L on ``vertex`` of the left tube."""
    rows = tuple(nr.mirrored_arms(start=(0.5, 1.0, 0.0)))
    left, edges = nr.tube(9, 8, 0.3, 2.0, (0.5, 1.0, 0.0), "x")
    right, _ = nr.tube(9, 8, 0.3, 2.0, (-0.5, 1.0, 0.0), "-x")
    w = nr.chain_weights(left[:, 0] - 0.5, ("Arm", "Hand"))
    pad = np.zeros(len(left))
    groups = {"Arm.L": np.r_[w["Arm"], pad], "Hand.L": np.r_[w["Hand"], pad],
              "Arm.R": np.r_[pad, w["Arm"]], "Hand.R": np.r_[pad, w["Hand"]]}
    groups["Arm.L"][vertex] -= difference
    groups["Hand.L"][vertex] += difference
    return nr.Rig(rows, np.vstack([left, right]), groups, np.vstack([edges, edges + len(left)]))


def _spheres(arms: nr.Rig) -> nr.Rig:
    """Joint markers on the skin's own vertex positions, each weighted wholly to the bone of its
    side that the skin does not give it (Hand on the arm half, Arm on the hand half): mirror
    images of each other, and nothing like the skin vertex they sit on."""
    rest = arms.rest.copy()
    left = np.arange(len(rest)) < 72
    near = np.abs(rest[:, 0]) < 1.5
    groups = {g: np.zeros(len(rest)) for g in ("Arm.L", "Hand.L", "Arm.R", "Hand.R")}
    groups["Hand.L"][left & near] = groups["Arm.L"][left & ~near] = 1.0
    groups["Hand.R"][~left & near] = groups["Arm.R"][~left & ~near] = 1.0
    return nr.Rig(arms.rows, rest, groups, arms.edges)


def test_weight_asymmetry_pairs_a_mesh_within_itself_first():
    """A skin with joint spheres on its vertices: paired together, a skin vertex may find its
    mirror on a sphere (worst 1.0); each within itself, only the skin's true 0.1."""
    skin = _arms(0.1)
    rig, (skin_audit, spheres_audit) = character([skin, _spheres(skin)], ["Skin", "Spheres"])
    found = only(skin_audit, "weight-asymmetry", "WARNING")
    assert (found.vertices, found.count) == ((20, 92), 2)
    assert found.details["mirror_object"] == "Skin"
    assert found.details["worst_difference"] == pytest.approx(0.1, rel=1e-6)
    assert "weight-asymmetry" not in codes(spheres_audit)
    assert spheres_audit.metrics["max_weight_asymmetry"] == 0.0
    assert "mesh-not-symmetric" not in rig_codes(rig)


def _split(difference: float) -> tuple[nr.Rig, nr.Rig]:
    arms = _arms(difference)
    halves = []
    for side in (slice(0, 72), slice(72, 144)):
        groups = {g: w[side] for g, w in arms.groups.items()}
        halves.append(nr.Rig(arms.rows, arms.rest[side], groups, arms.edges[:len(arms.edges) // 2]))
    return halves[0], halves[1]


@pytest.mark.parametrize("difference, flagged", [(0.1, True), (0.04, False)])
def test_a_character_split_per_side_is_paired_across_its_meshes(difference, flagged):
    left, right = _split(difference)
    rig, (a, b) = character([left, right], ["Arm.L", "Arm.R"])
    assert "mesh-not-symmetric" not in rig_codes(rig)
    assert a.metrics["mirror_matched_fraction"] == b.metrics["mirror_matched_fraction"] == 1.0
    if not flagged:
        assert "weight-asymmetry" not in codes(a) | codes(b)
        return
    found_a, found_b = only(a, "weight-asymmetry"), only(b, "weight-asymmetry")
    assert found_a.vertices == (20,) and found_a.details["mirror_object"] == "Arm.R"
    assert found_b.vertices == (20,) and found_b.details["mirror_object"] == "Arm.L"
    assert found_a.details["worst_difference"] == pytest.approx(difference, rel=1e-6)


def _hair(count: int = 120) -> nr.Rig:
    """Points on one side only (no mirror vertex), weighted to Arm.L."""
    rng = np.random.default_rng(5)
    rest = rng.uniform([0.2, 2.0, -0.5], [1.5, 3.0, 0.5], size=(count, 3))
    return nr.Rig(tuple(nr.mirrored_arms(start=(0.5, 1.0, 0.0))), rest, {"Arm.L": np.ones(count)})


def test_a_part_that_does_not_mirror_leaves_the_others_judged():
    """Head 144 vertices (mirrors onto itself), hair 120 (none mirror): together 55% matched,
    which switched symmetry off for the whole character; the head is still judged."""
    rig, (head, hair) = character([_arms(0.1), _hair()], ["Head", "Hair"])
    found = only(head, "weight-asymmetry", "WARNING")
    assert found.vertices == (20, 92)
    assert "weight-asymmetry" not in codes(hair) and "max_weight_asymmetry" not in hair.metrics
    (info,) = [f for f in rig.findings if f.code == "mesh-not-symmetric"]
    assert info.severity == "INFO" and info.details["meshes"] == ["Hair"]
    assert info.details["matched_fractions"] == [0.0]
    assert "1 of 2 meshes" in info.message
    assert head.metrics["mirror_matched_fraction"] == 1.0 and hair.metrics["mirror_matched_fraction"] == 0.0


def test_no_mesh_mirrors_then_symmetry_is_not_checked():
    rig, (hair,) = character([_hair()], ["Hair"])
    (info,) = [f for f in rig.findings if f.code == "mesh-not-symmetric"]
    assert "weight symmetry was not checked" in info.message and "only 0%" in info.message
    assert "weight-asymmetry" not in codes(hair)


# ------------------------------------------------------------------ stray weights by what moves


def _stray_tube(weight: float) -> nr.Rig:
    """The chain tube with ``weight`` of Root on vertex 64 (top ring, carried by Child):
    an island of Root cut off from its region (rings 0-5)."""
    rig = nr.chain_tube()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[64], child[64] = weight, 1.0 - weight
    return nr.Rig(rig.rows, rig.rest, {"Root": root, "Child": child}, rig.edges)


def _closed_form(rig: nr.Rig, weight: float, degrees: float = 90.0) -> float:
    """How far Root's ``weight`` moves vertex 64 at the worst stress pose, by hand.

    Every bone turns by ``degrees`` about one of its own axes; Child's matrix is Root's times
    Child's turn about its head h, so the vertex's two candidate places differ by Root's rigid
    motion of ``(R - I)(p - h)``, R the turn about Child's own axis a: its length is
    ``2 sin(theta / 2) |(p - h) minus its part along a|``.  The stray weight moves the vertex by
    ``weight`` times that (Child alone carries it without the weight), over the sum of the two
    weights as stored (float32: not exactly 1).
    """
    stored, other = float(np.float32(weight)), float(np.float32(1.0 - weight))
    child = rig.rows[1]
    frame = nr.rest_matrix(child.head, child.tail, child.roll)[:3, :3]
    v = rig.rest[64] - np.asarray(child.head)
    chord = 2.0 * math.sin(math.radians(degrees) / 2.0)
    return stored / (stored + other) * max(chord * float(np.linalg.norm(v - (v @ a) * a)) for a in frame.T)


@pytest.mark.parametrize("weight, severity", [(0.25, "WARNING"), (0.014, "WARNING"), (0.012, "INFO"),
                                              (0.002, "INFO")])
def test_stray_weights_warn_only_where_they_move_the_vertex_visibly(weight, severity):
    rig = _stray_tube(weight)
    result = shape(nr.skinned_mesh(rig))
    found = only(result, "stray-weights")
    assert found.severity == severity
    assert (found.vertices, found.bones, found.groups) == ((64,), ("Root",), ("Root",))
    expected = _closed_form(rig, weight)
    assert found.details["worst_displacement"] == pytest.approx(expected, rel=1e-9)
    size = 2.0  # the tube's longest side
    assert found.details["worst_displacement_relative"] == pytest.approx(expected / size, rel=1e-9)
    assert (expected > tolerances.STRAY_VISIBLE_RELATIVE * size) == (severity == "WARNING")


def test_stray_weights_are_judged_against_the_size_in_armature_space():
    """The same tube stored three times larger in an object scaled by 1/3 (a scaled FBX import):
    in armature space it is the tube above, so the same vertex at the same relative displacement
    and severity; its object's own size (6) must not dilute it."""
    rig = _stray_tube(0.014)
    scaled = nr.Rig(rig.rows, rig.rest * 3.0, rig.groups, rig.edges)
    to_armature = np.diag([1.0 / 3.0] * 3 + [1.0])
    found = only(shape(nr.skinned_mesh(scaled, mesh_to_armature=to_armature)), "stray-weights")
    expected = _closed_form(rig, 0.014)
    assert (found.severity, found.vertices) == ("WARNING", (64,))
    assert found.details["worst_displacement_relative"] == pytest.approx(expected / 2.0, rel=1e-9)


def _eyes(eye_weight: float, right_eye_weight: float | None = None) -> nr.Rig:
    """A strip of 7 vertices across the face (x from -0.3 to 0.3, one piece of mesh) on a Head
    bone, its two ends (x = +-0.3, +-0.2) the eyes: weighted ``eye_weight`` to a middle Eyes bone
    and the rest to Head. The right eye is an island of Eyes: the mirror image of the left one."""
    rows = (nr.BoneRow("Head", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
            nr.BoneRow("Eyes", (0.0, 0.6, 0.1), (0.0, 0.8, 0.1), "Head"))
    x = np.array([-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3])
    rest = np.stack([x, np.full(7, 0.6), np.full(7, 0.2)], axis=1)
    eyes = np.where(np.abs(x) >= 0.15, eye_weight, 0.0)
    if right_eye_weight is not None:
        eyes[:2] = right_eye_weight
    edges = np.array([(i, i + 1) for i in range(6)], dtype=np.intp)
    return nr.Rig(rows, rest, {"Head": 1.0 - eyes, "Eyes": eyes}, edges)


@pytest.mark.parametrize("weight", [1.0, 0.7])
def test_the_mirror_image_of_a_middle_bones_region_is_not_stray(weight):
    """Two eyes on one Eyes bone, painted alike (in full, or carried at 0.7): rigged on purpose."""
    assert "stray-weights" not in codes(shape(nr.skinned_mesh(_eyes(weight))))


def test_mirrored_patches_of_a_light_bleed_are_still_stray():
    """The same two patches at 0.3 (Head carries them): a bleed, mirrored or not."""
    found = only(shape(nr.skinned_mesh(_eyes(0.3))), "stray-weights")
    assert found.groups == ("Eyes",) and set(found.vertices) <= {0, 1, 5, 6}


def test_an_island_that_does_not_mirror_the_region_is_stray():
    """The right eye at 0.7 but the left at 1.0 is still the mirror image in place: not stray; a
    right eye weighted where the left has nothing would be, so move the left eye's weight off."""
    rig = _eyes(0.7)
    groups = {k: v.copy() for k, v in rig.groups.items()}
    groups["Eyes"][5:] = 0.0  # the left eye unweighted: Eyes weighs the right eye and the middle vertex
    groups["Eyes"][3] = 0.7
    groups["Head"] = 1.0 - groups["Eyes"]
    found = only(shape(nr.skinned_mesh(nr.Rig(rig.rows, rig.rest, groups, rig.edges))), "stray-weights")
    assert found.groups == ("Eyes",)


def test_a_far_vertex_weighted_to_its_bone_alone_moves_visibly():
    """A loose vertex 20 units up the chain, Root's only: without the weight Blender leaves it at
    rest, with it Root turns it about its head: chord 2 sin(45 deg) x its distance from Root's
    axis... at worst sqrt(2) x 20 (a bend about an axis across the chain)."""
    rig = nr.chain_tube()
    rest = np.vstack([rig.rest, [(0.0, 20.0, 0.0)]])
    groups = {"Root": np.r_[rig.groups["Root"], 1.0], "Child": np.r_[rig.groups["Child"], 0.0]}
    found = only(shape(nr.skinned_mesh(nr.Rig(rig.rows, rest, groups, rig.edges))), "stray-weights", "WARNING")
    assert found.vertices == (72,)
    assert found.details["worst_displacement"] == pytest.approx(math.sqrt(2.0) * 20.0, rel=1e-9)


# ------------------------------------------------------------------ instances and rigid parts


def _rig_only(missing=(), rigid=(), rig: nr.Rig | None = None, **options):
    rig = rig or nr.chain_tube()
    entry, _ = audit_character("Armature", [nr.skinned_mesh(rig)], AuditOptions(**options), missing=missing,
                               rigid=rigid)
    return entry


def test_an_unparented_object_sharing_skinned_data_is_an_instance():
    instance = MissingModifier("Body.001", "has vertex groups named after bones of 'Armature'", ("Root",),
                               instance_of="Body")
    (found,) = [f for f in _rig_only([instance]).findings if f.code == "armature-modifier-missing"]
    assert (found.code, found.severity) == ("armature-modifier-missing", "INFO")
    assert found.details == {"object": "Body.001", "instance_of": "Body"}
    assert "static instance" in found.message and "Add an Armature modifier" not in found.message
    # The same object with its own data: groups weighing deform bones that never bend.
    (error,) = [f for f in _rig_only([MissingModifier("Body.001", "has vertex groups named after bones of "
                                                      "'Armature'", ("Root",))]).findings
                if f.code == "armature-modifier-missing"]
    assert (error.code, error.severity) == ("armature-modifier-missing", "ERROR")


def _with_hand() -> nr.Rig:
    """The chain tube and a deform bone 'Hand' on Child that no vertex of the tube uses."""
    rig = nr.chain_tube()
    hand = nr.BoneRow("Hand", (0.0, 2.0, 0.0), (0.0, 2.5, 0.0), "Child")
    return nr.Rig((*rig.rows, hand), rig.rest, rig.groups, rig.edges)


def test_a_bone_carrying_a_rigid_part_moves_vertices():
    idle = only_rig(_rig_only(rig=_with_hand()), "deform-bone-without-weights")
    assert idle.bones == ("Hand",)  # without the part: Deform off is offered for Hand
    entry = _rig_only(rigid=[RigidPart("Glove", "Hand", 24)], rig=_with_hand())
    assert "deform-bone-without-weights" not in rig_codes(entry)
    part = only_rig(entry, "rigid-part")
    assert (part.severity, part.bones, part.count) == ("INFO", ("Hand",), 1)
    assert part.details["parts"] == {"Glove": "Hand"}
    assert "'Glove' on 'Hand'" in part.message and "Unreal" not in part.message


def test_a_target_dropping_bone_children_says_so():
    part = only_rig(_rig_only(rigid=[RigidPart("Glove", "Hand", 24)], rig=_with_hand(), target="unreal"),
                    "rigid-part")
    assert part.severity == "WARNING" and "For target 'unreal'" in part.message
    assert "skeletal-mesh import" in part.message


def test_a_rigid_part_on_a_bone_with_deform_off():
    rig = _with_hand()
    rows = (*rig.rows[:2], nr.BoneRow("Hand", (0.0, 2.0, 0.0), (0.0, 2.5, 0.0), "Child", use_deform=False))
    part = only_rig(_rig_only(rigid=[RigidPart("Glove", "Hand", 24)], rig=nr.Rig(rows, rig.rest, rig.groups,
                                                                                  rig.edges)), "rigid-part")
    assert "1 of those bones have Deform off (Hand)" in part.message


def only_rig(rig, code):
    found = [f for f in rig.findings if f.code == code]
    assert len(found) == 1, [(f.code, f.severity) for f in rig.findings]
    return found[0]


def test_a_stray_group_whose_weights_are_not_finite_moves_nothing_here():
    """The group's weights on the vertices are infinite (found by a property test): they are the
    weight checks' to report, the stray displacement is 0, not an IndexError."""
    from skin_audit.core.audit.stray_weights import stray_displacement

    points = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    weights = np.array([[1.0, 1.0], [np.inf, 0.0]], dtype=np.float32)
    channels = np.broadcast_to(np.eye(4), (1, 2, 4, 4)).copy()
    moved = stray_displacement(points, weights, np.array([0, 1]), 1, np.array([0]), channels)
    assert moved.tolist() == [0.0]
