# SPDX-License-Identifier: GPL-3.0-or-later
"""The rest pose of a hand-placed humanoid (and what it needs to be measured at all), and an
armature whose deform bones form two hierarchies."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit.rig_audit import structure_findings
from skin_audit.core.skeleton.humanoid import HumanoidMap
from skin_audit.core.skeleton.rest_pose import measure_rest_pose
from tests.factories import numpy_rigs as nr

# Armature space, +Z up, the character's left on +X: the left arm straight out, the right arm
# 45 degrees down (0.3 out, 0.3 down).
HEADS = {"hips": (0.0, 0.0, 1.0), "neck": (0.0, 0.0, 1.5), "head": (0.0, 0.0, 1.6),
         "leftUpperArm": (0.2, 0.0, 1.4), "leftLowerArm": (0.5, 0.0, 1.4),
         "rightUpperArm": (-0.2, 0.0, 1.4), "rightLowerArm": (-0.5, 0.0, 1.1)}


def _measure(leave_out: tuple[str, ...] = ()):
    keys = [k for k in HEADS if k not in leave_out]
    names = tuple(f"bone_{k}" for k in keys)
    mapping = HumanoidMap(bones={k: f"bone_{k}" for k in keys}, how={k: "name" for k in keys}, ambiguous={},
                          missing=(), humanoid=True)
    return measure_rest_pose(mapping, names, np.array([HEADS[k] for k in keys], dtype=np.float64))


def test_arm_angles_below_the_horizontal_by_hand():
    pose = _measure()
    assert pose is not None
    assert pose.limbs["leftArm"]["below_horizontal"] == pytest.approx(0.0, abs=1e-9)
    assert pose.limbs["rightArm"]["below_horizontal"] == pytest.approx(45.0, abs=1e-9)
    assert pose.limbs["leftArm"]["forward"] == pytest.approx(0.0, abs=1e-9)
    assert pose.convention is None  # one arm out, one arm down: neither T nor A for both


def test_the_neck_stands_in_for_a_missing_head():
    pose = _measure(("head",))
    assert pose is not None and pose.limbs["rightArm"]["below_horizontal"] == pytest.approx(45.0, abs=1e-9)


@pytest.mark.parametrize("missing", [("head", "neck"), ("hips",), ("rightUpperArm",), ("leftUpperArm",)])
def test_without_hips_a_top_bone_or_either_upper_arm_there_is_no_rest_pose(missing):
    assert _measure(missing) is None


def test_two_deform_hierarchies_name_both_roots_and_the_helper_above_one():
    # Ctrl (no deform) holds Spine; Prop is a root of its own: two deform roots, Spine under a helper.
    rows = (nr.BoneRow("Ctrl", (0.0, 0.0, 0.0), (0.0, 0.5, 0.0), use_deform=False),
            nr.BoneRow("Spine", (0.0, 0.5, 0.0), (0.0, 1.5, 0.0), "Ctrl"),
            nr.BoneRow("Prop", (1.0, 0.0, 0.0), (1.0, 1.0, 0.0)))
    rest = np.array([[0.0, 1.0, 0.0], [1.0, 0.5, 0.0]])
    mesh = nr.skinned_mesh(nr.Rig(rows, rest, {"Spine": np.array([1.0, 0.0]), "Prop": np.array([0.0, 1.0])}),
                           blender=None)
    (f,) = structure_findings("Armature", mesh.bones, "threejs")
    assert f.code == "multiple-root-bones" and f.count == 2
    assert f.bones == ("Spine", "Prop")
    assert f.details["deform_roots"] == 2 and f.details["helper_parents"] == ["Ctrl"]


# --- the humanoid map through the audit, and a bone whose parent is gone ------------------------


def test_a_flat_rigify_rig_maps_through_the_audit_and_in_any_bone_order():
    from tests.core.skeleton.test_skeleton import audit, expected, mapping_of
    from tests.factories.humanoid_rigs import RIGIFY, humanoid_rows

    rows = humanoid_rows(RIGIFY, flat=True)
    # Through the audit (judge_skeleton): the chain is split where the shoulders sit along it,
    # which reads the bones' tails.
    rig, _ = audit(rows)
    assert rig.skeleton["humanoid"]["bones"] == expected(RIGIFY)
    # Every DEF bone is a root, so any order is a valid armature: the lowest-numbered spine bone
    # ("DEF-spine", number 0) is the hips wherever it is listed.
    reordered = rows[1:] + rows[:1]
    assert reordered[0].name != "DEF-spine" and rows[0].name == "DEF-spine"
    m = mapping_of(reordered)
    assert m.bones == expected(RIGIFY) and m.how["hips"] == "hierarchy"


def _sig(bones):
    return {"size": 1.0, "bones": [{"name": n, "parent": p, "head": [0.0, y, 0.0], "tail": [0.0, y + 0.1, 0.0],
                                    "x_axis": [1.0, 0.0, 0.0]} for n, p, y in bones]}


def test_a_bone_left_without_its_parent_is_reparented():
    from skin_audit.core.skeleton.compare import compare

    # Root -> Spine -> Head; the other file has no Root (Spine becomes a root) and renames Head to Skull.
    reference = _sig([("Root", None, 0.0), ("Spine", "Root", 0.2), ("Head", "Spine", 0.4)])
    other = _sig([("Spine", None, 0.2), ("Skull", "Spine", 0.4)])
    diff = compare(reference, other)
    assert diff.missing == ("Root",) and diff.renamed == (("Head", "Skull"),)
    assert diff.reparented == ("Spine",)  # its parent was Root, now none
    assert diff.moved == () and diff.extra == ()
