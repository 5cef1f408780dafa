# SPDX-License-Identifier: GPL-3.0-or-later
"""Weight and group rules on numpy rigs: each defect made on purpose on known
vertices, and the same rig without it.  Core tier: numpy and pytest only.

The tube (tests/factories/numpy_rigs.chain_tube) has 9 rings of 8 vertices;
Child's weight by ring is 0, 0, 0, 1/4, 1/2, 3/4, 1, 1, 1 and Root's the rest.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.audit.rule_helpers import audit, by_code, codes, only
from tests.factories import numpy_rigs as nr

V = 72
POSED = {"Child": nr.rotation("x", 0.8)}


def clean() -> nr.Rig:
    return nr.chain_tube(basis=POSED)


def with_groups(rig: nr.Rig, **groups: np.ndarray) -> nr.Rig:
    """A copy of ``rig`` with groups replaced or added (weights (V,) each)."""
    new = {k: v.copy() for k, v in rig.groups.items()}
    new.update({k: np.asarray(v, dtype=np.float64) for k, v in groups.items()})
    return nr.Rig(rig.rows, rig.rest, new, rig.edges, rig.basis)


def test_the_clean_rig_has_no_weight_or_group_finding():
    result = audit(nr.skinned_mesh(clean()))
    assert result.findings == ()
    assert result.metrics["unweighted_vertices"] == 0 and result.metrics["max_influences"] == 2


def test_unweighted_vertices_follow_blenders_1e4_rule():
    rig = clean()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[nr.ring(0)] = 0.0  # ring 0: no weight at all
    root[8], root[9] = 1e-4, 2e-4  # vertex 8 sums to 1e-4 (stays put), vertex 9 just above
    result = audit(nr.skinned_mesh(with_groups(rig, Root=root, Child=child)))
    found = only(result, "unweighted-vertices", "ERROR")
    assert found.vertices == tuple(range(9)) and found.count == 9
    assert result.metrics["unweighted_vertices"] == 9
    # Vertex 9 moves under Blender's renormalisation and is judged for its sum instead.
    assert 9 in only(result, "weights-not-normalized", "INFO").vertices  # threejs divides by the sum too
    assert "skinning-mismatch" not in codes(result)


def test_weights_of_another_armature_modifier_count_toward_the_total():
    rig = clean()
    top = nr.ring(8)
    root, child, face = rig.groups["Root"].copy(), rig.groups["Child"].copy(), np.zeros(V)
    child[top], face[top] = 0.0, 1.0
    split = with_groups(rig, Root=root, Child=child, Face=face)
    alone = audit(nr.skinned_mesh(split))
    assert only(alone, "unweighted-vertices").vertices == tuple(top)
    assert only(alone, "group-without-bone").groups == ("Face",)
    shared = audit(nr.skinned_mesh(split, other_bones=frozenset({"Face"}), other_deform_bones=frozenset({"Face"})))
    assert not codes(shared) & {"unweighted-vertices", "group-without-bone", "weights-not-normalized"}


@pytest.mark.parametrize("tolerance, flagged_rings", [(1e-4, (4,)), ("gltf", (4, 5))])
def test_weights_not_normalized(tolerance, flagged_rings):
    rig = clean()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[nr.ring(4)] = child[nr.ring(4)] = 0.45  # sums 0.9
    child[nr.ring(5)] = 0.75 + 5e-5  # sums 1 + 5e-5: within 1e-4, beyond glTF's 2 x 2e-7
    result = audit(nr.skinned_mesh(with_groups(rig, Root=root, Child=child)), weight_tolerance=tolerance)
    # The default target (threejs, through Blender's glTF exporter) divides by the sum as Blender does.
    found = only(result, "weights-not-normalized", "INFO")
    expected = tuple(v for r in flagged_rings for v in nr.ring(r))
    assert found.vertices == expected and found.count == len(expected)
    assert found.details["max_error"] == pytest.approx(0.1, rel=1e-6)
    # raw keeps the sums: ring 4 is drawn at 0.9 of its place, beyond the engine-divergence tolerance.
    raw = audit(nr.skinned_mesh(with_groups(rig, Root=root, Child=child)), weight_tolerance=tolerance, target="raw")
    kept = only(raw, "weights-not-normalized", "WARNING")
    assert kept.vertices == expected and kept.details["drawn_off"] == len(nr.ring(4))


def test_too_many_influences_follows_max_influences():
    names = ("B0", "B1", "B2", "B3", "B4")
    rig = nr.chain_tube(names, basis={"B2": nr.rotation("x", 0.3)})
    five = {n: rig.groups[n].copy() for n in names}
    for n in names:
        five[n][nr.ring(4)] = 0.2
    crowded = with_groups(rig, **five)
    found = only(audit(nr.skinned_mesh(crowded)), "too-many-influences", "WARNING")
    assert found.vertices == tuple(nr.ring(4)) and found.details["max_influences"] == 5
    assert "too-many-influences" not in codes(audit(nr.skinned_mesh(crowded), max_influences=5))
    assert "too-many-influences" not in codes(audit(nr.skinned_mesh(rig)))


def test_group_without_bone():
    rig = clean()
    ghost = np.zeros(V)
    ghost[[40, 41]] = 0.3
    # Vertices 40 and 41 are weighted to the chain too: nothing drawn changes, INFO.
    found = only(audit(nr.skinned_mesh(with_groups(rig, Ghost=ghost))), "group-without-bone", "INFO")
    assert (found.groups, found.vertices, found.count, found.bones) == (("Ghost",), (40, 41), 2, ())
    # Where it is a vertex's only weight, the vertex stays behind: WARNING.
    alone = {g: w.copy() for g, w in rig.groups.items()}
    for w in alone.values():
        w[40] = 0.0
    lonely = nr.Rig(rig.rows, rig.rest, alone, rig.edges)
    found = only(audit(nr.skinned_mesh(with_groups(lonely, Ghost=ghost))), "group-without-bone", "WARNING")
    assert found.vertices == (40, 41) and "1 of its vertices have no other deform weight" in found.message
    # An empty group, and a group used as the modifier's mask, are not reported.
    assert "group-without-bone" not in codes(audit(nr.skinned_mesh(with_groups(rig, Ghost=np.zeros(V)))))
    from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings

    masked = nr.skinned_mesh(with_groups(rig, Ghost=ghost), modifier=ArmatureModifierSettings("A", mask_group="Ghost"))
    assert "group-without-bone" not in codes(audit(masked))


def test_weights_on_non_deform_bone():
    rig = clean()
    rows = (rig.rows[0], nr.BoneRow(**{**rig.rows[1].__dict__, "use_deform": False}))
    off = nr.Rig(rows, rig.rest, rig.groups, rig.edges, rig.basis)
    found = by_code(audit(nr.skinned_mesh(off)))
    (warning,) = found["weights-on-non-deform-bone"]
    child_weighted = tuple(v for r in range(3, 9) for v in nr.ring(r))
    assert (warning.severity, warning.bones, warning.groups) == ("WARNING", ("Child",), ("Child",))
    assert warning.vertices == child_weighted
    # Blender ignores the group: rings 6-8 (Child only) are left without weight.
    (unweighted,) = found["unweighted-vertices"]
    assert unweighted.vertices == tuple(v for r in range(6, 9) for v in nr.ring(r))
    assert "skinning-mismatch" not in found


def test_deform_bone_without_weights():
    rig = clean()
    tail = nr.BoneRow("Tail", (0.0, 2.0, 0.0), (0.0, 3.0, 0.0), "Child")
    idle = nr.Rig(rig.rows + (tail,), rig.rest, rig.groups, rig.edges, rig.basis)
    found = only(audit(nr.skinned_mesh(idle)), "deform-bone-without-weights", "INFO")
    assert (found.bones, found.count, found.vertices) == (("Tail",), 1, ())
    not_deform = nr.Rig(rig.rows + (nr.BoneRow("Tail", (0.0, 2.0, 0.0), (0.0, 3.0, 0.0), "Child",
                                                use_deform=False),), rig.rest, rig.groups, rig.edges, rig.basis)
    assert "deform-bone-without-weights" not in codes(audit(nr.skinned_mesh(not_deform)))


def test_non_finite_weights():
    rig = clean()
    w = rig.weight_array()
    w[1, 10], w[0, 11] = np.nan, np.inf
    result = audit(nr.skinned_mesh(rig, weights=w, blender=None))
    found = only(result, "non-finite-weights", "ERROR")
    assert (found.vertices, found.count) == ((10, 11), 2)
    assert "non-finite-weights" not in codes(audit(nr.skinned_mesh(rig)))


def test_negative_weights():
    rig = clean()
    w = rig.weight_array()
    w[1, 12] = -0.25
    found = only(audit(nr.skinned_mesh(rig, weights=w, blender=None)), "negative-weights", "ERROR")
    assert (found.vertices, found.count) == ((12,), 1)
    assert "negative-weights" not in codes(audit(nr.skinned_mesh(rig)))
