# SPDX-License-Identifier: GPL-3.0-or-later
"""Armature, modifier and data-sanity rules on numpy rigs (core tier)."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings
from tests.core.audit.rule_helpers import audit, codes, only
from tests.factories import numpy_rigs as nr

POSED = {"Child": nr.rotation("x", 0.8)}
STRUCTURE = {"multiple-root-bones", "no-deform-bones", "non-uniform-armature-scale", "negative-armature-scale",
             "preserve-volume-on", "bbones-on-deform-bones", "mesh-not-parented-to-armature",
             "non-finite-positions", "non-finite-bone-matrices", "not-reproduced"}


def clean() -> nr.Rig:
    return nr.chain_tube(basis=POSED)


def with_rows(rig: nr.Rig, *rows: nr.BoneRow) -> nr.Rig:
    return nr.Rig(tuple(rows), rig.rest, rig.groups, rig.edges, rig.basis)


def test_the_clean_rig_has_no_structure_finding():
    assert not codes(audit(nr.skinned_mesh(clean()))) & STRUCTURE


def test_multiple_root_bones():
    rig = clean()
    prop = nr.BoneRow("Prop", (1.0, 0.0, 0.0), (1.0, 1.0, 0.0))
    found = only(audit(nr.skinned_mesh(with_rows(rig, *rig.rows, prop)), target="unreal"), "multiple-root-bones",
                 "WARNING")
    assert (found.bones, found.count) == (("Root", "Prop"), 2)
    # glTF asks only for a common ancestor of a skin's joints: three.js draws it the same.
    found = only(audit(nr.skinned_mesh(with_rows(rig, *rig.rows, prop))), "multiple-root-bones", "INFO")
    assert "target 'threejs' draws it the same" in found.message
    # Parented under the chain, the same bone leaves one root.
    child_prop = nr.BoneRow("Prop", (1.0, 0.0, 0.0), (1.0, 1.0, 0.0), "Root")
    assert "multiple-root-bones" not in codes(audit(nr.skinned_mesh(with_rows(rig, *rig.rows, child_prop))))


def test_no_deform_bones():
    rig = clean()
    off = with_rows(rig, *(nr.BoneRow(**{**r.__dict__, "use_deform": False}) for r in rig.rows))
    result = audit(nr.skinned_mesh(off))
    only(result, "no-deform-bones", "ERROR")
    assert only(result, "unweighted-vertices").count == 72


@pytest.mark.parametrize("scale, mirrored, code, severity", [
    ((1.0, 2.0, 1.0), False, "non-uniform-armature-scale", "WARNING"),
    ((-1.0, 1.0, 1.0), True, "negative-armature-scale", "ERROR"),
])
def test_armature_scale(scale, mirrored, code, severity):
    mesh = nr.skinned_mesh(clean(), armature_scale=np.abs(np.array(scale)), armature_mirrored=mirrored,
                           armature_object_scale=np.array(scale))
    found = only(audit(mesh), code, severity)
    if mirrored:
        assert "[-1.0, 1.0, 1.0]" in found.message  # the scale the user set, not the world matrix's
    uniform = nr.skinned_mesh(clean(), armature_scale=np.full(3, 2.0), armature_object_scale=np.full(3, 2.0))
    assert not codes(audit(uniform)) & {"non-uniform-armature-scale", "negative-armature-scale"}


def test_preserve_volume_on():
    mesh = nr.skinned_mesh(clean(), blender=None, modifier=ArmatureModifierSettings("A", preserve_volume=True))
    assert only(audit(mesh), "preserve-volume-on", "INFO").count == 0
    assert "preserve-volume-on" not in codes(audit(nr.skinned_mesh(clean())))


def test_bbones_on_deform_bones_are_reported_and_their_vertices_left_out():
    rig = clean()
    root, child = rig.rows
    bendy = with_rows(rig, root, nr.BoneRow(**{**child.__dict__, "bbone_segments": 4}))
    result = audit(nr.skinned_mesh(bendy))
    found = only(result, "bbones-on-deform-bones", "INFO")
    assert (found.bones, found.count) == (("Child",), 1)
    # Every vertex Child weighs (rings 3-8) is left out of the comparison.
    assert result.metrics["vertices_compared"] == 72 - 48
    prop = nr.BoneRow("Prop", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), "Root", use_deform=False, bbone_segments=4)
    assert "bbones-on-deform-bones" not in codes(audit(nr.skinned_mesh(with_rows(rig, root, child, prop))))


@pytest.mark.parametrize("parent", ["", "Other"])
def test_mesh_not_parented_to_armature(parent):
    # Blender deforms it and its glTF exporter writes the skin whatever the parent: INFO.
    found = only(audit(nr.skinned_mesh(clean(), parent=parent)), "mesh-not-parented-to-armature", "INFO")
    assert f"'{parent or 'nothing'}'" in found.message
    assert "mesh-not-parented-to-armature" not in codes(audit(nr.skinned_mesh(clean(), parent="Armature")))


def test_non_finite_positions():
    rig = clean()
    rest = rig.rest.copy()
    rest[5] = (np.nan, 0.0, 0.0)
    rest[17, 2] = np.inf
    result = audit(nr.skinned_mesh(nr.Rig(rig.rows, rest, rig.groups, rig.edges, rig.basis), blender=None))
    found = only(result, "non-finite-positions", "ERROR")
    assert (found.vertices, found.count) == ((5, 17), 2)
    assert "non-finite-positions" not in codes(audit(nr.skinned_mesh(rig)))


def test_non_finite_bone_matrices():
    rig = clean()
    channel = rig.channel()
    channel[1, 0, 3] = np.nan
    only(audit(nr.skinned_mesh(rig, channel=channel, blender=None)), "non-finite-bone-matrices", "ERROR")
    assert "non-finite-bone-matrices" not in codes(audit(nr.skinned_mesh(rig)))


def test_not_reproduced_names_each_feature():
    reasons = ("Multi Modifier on 'A'", "envelopes of 'A'")
    result = audit(nr.skinned_mesh(clean(), unsupported=reasons))
    found = [f for f in result.findings if f.code == "not-reproduced"]
    assert len(found) == 2
    assert [f.message for f in found] == [f"not recomputed: {r}" for r in reasons]
    assert {f.severity for f in found} == {"INFO"}
    assert "not-reproduced" not in codes(audit(nr.skinned_mesh(clean())))
