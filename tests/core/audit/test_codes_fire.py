# SPDX-License-Identifier: GPL-3.0-or-later
"""Every documented finding code fires: each is produced by running its rule on a rig or file
built for it here, and read from what the rule returned (core tier, no bpy).

A code whose rule needs what only Blender (or a running engine) provides would be listed in
``ELSEWHERE`` with the reason and the test that runs it through the real ``bpy`` audit or the
engine; the tables together must be exactly the documented codes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from skin_audit.core.audit.animation import action_findings
from skin_audit.core.audit.animation_data import ActionData, EulerSamples, animation_data_findings
from skin_audit.core.audit.finite import finite_audit
from skin_audit.core.audit.mesh_audit import RULE_CODES
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.audit.rig_audit import MissingModifier, RigidPart, audit_rig
from skin_audit.core.audit.shape_checks import SHAPE_CODES
from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings
from skin_audit.core.audit.surface import measure_surface
from skin_audit.core.audit.surface_verdicts import surface_findings
from skin_audit.core.codes import CODES
from skin_audit.core.engines import babylon
from skin_audit.core.engines.gltf_audit import GLTF_CODES, importer_changes, match_node, unmatched_finding
from skin_audit.core.engines.targets import THREEJS
from skin_audit.core.gltf.checks import file_checks
from skin_audit.core.gltf.document import load_gltf
from skin_audit.core.gltf.skin import skinned_primitives
from skin_audit.core.skeleton import cross_file_findings
from tests.core.audit import test_animation_core as anim
from tests.core.audit import test_rig_verdicts as verdicts
from tests.core.audit import test_rules_shape as shapes
from tests.core.audit import test_surface as surf
from tests.core.audit.rule_helpers import audit
from tests.core.audit.test_rules_deformation import _three_bone_rig
from tests.core.skeleton import test_skeleton as skel
from tests.core.test_gltf_audit import POSITIONS, blender_coords, broken_tiny, imported
from tests.factories import numpy_rigs as nr
from tests.factories.humanoid_rigs import MIXAMO, humanoid_rows, many_joint_rig
from tests.hostile.bounded_files import with_draco, with_extra_buffer

POSED = {"Child": nr.rotation("x", 0.8)}

Codes = set[str]


def _codes(findings) -> Codes:
    """The codes of ``findings``; each at a severity its entry of core/codes.py allows."""
    for f in findings:
        assert f.severity in CODES[f.code].severities, (f.code, f.severity, CODES[f.code].severity)
    return {f.code for f in findings}


def _mesh(rig: nr.Rig | None = None, **fields) -> Codes:
    return _codes(audit(nr.skinned_mesh(rig or nr.chain_tube(basis=POSED), **fields)).findings)


def _groups(rig: nr.Rig, **groups) -> nr.Rig:
    new = {k: v.copy() for k, v in rig.groups.items()}
    new.update({k: np.asarray(v, dtype=np.float64) for k, v in groups.items()})
    return nr.Rig(rig.rows, rig.rest, new, rig.edges, rig.basis)


def _rows(rig: nr.Rig, *rows: nr.BoneRow) -> nr.Rig:
    return nr.Rig(tuple(rows), rig.rest, rig.groups, rig.edges, rig.basis)


# ------------------------------------------------------------ the mesh audit's rules


def unweighted() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    root = rig.groups["Root"].copy()
    root[nr.ring(0)] = 0.0
    return _mesh(_groups(rig, Root=root))


def unnormalised() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[nr.ring(4)] = child[nr.ring(4)] = 0.45
    return _codes(audit(nr.skinned_mesh(_groups(rig, Root=root, Child=child)), target="raw").findings)


def crowded() -> Codes:
    names = ("B0", "B1", "B2", "B3", "B4")
    rig = nr.chain_tube(names, basis={"B2": nr.rotation("x", 0.3)})
    five = {n: rig.groups[n].copy() for n in names}
    for n in names:
        five[n][nr.ring(4)] = 0.2
    return _mesh(_groups(rig, **five))


def ghost_group() -> Codes:
    ghost = np.zeros(72)
    ghost[[40, 41]] = 0.3
    return _mesh(_groups(nr.chain_tube(basis=POSED), Ghost=ghost))


def non_deform_weighted() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    return _mesh(_rows(rig, rig.rows[0], replace(rig.rows[1], use_deform=False)))


def idle_deform_bone() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    return _mesh(_rows(rig, *rig.rows, nr.BoneRow("Tail", (0.0, 2.0, 0.0), (0.0, 3.0, 0.0), "Child")))


def bad_weights(value: float) -> Callable[[], Codes]:
    def build() -> Codes:
        rig = nr.chain_tube(basis=POSED)
        w = rig.weight_array()
        w[1, 12] = value
        return _mesh(rig, weights=w, blender=None)
    return build


def two_roots() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    return _mesh(_rows(rig, *rig.rows, nr.BoneRow("Prop", (1.0, 0.0, 0.0), (1.0, 1.0, 0.0))))


def no_deform() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    return _mesh(_rows(rig, *(replace(r, use_deform=False) for r in rig.rows)))


def armature_scale(scale: tuple[float, float, float]) -> Callable[[], Codes]:
    def build() -> Codes:
        return _mesh(armature_scale=np.abs(np.array(scale)), armature_mirrored=min(scale) < 0,
                     armature_object_scale=np.array(scale))
    return build


def bendy() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    return _mesh(_rows(rig, rig.rows[0], replace(rig.rows[1], bbone_segments=4)))


def non_finite_rest() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    rest = rig.rest.copy()
    rest[5] = (np.nan, 0.0, 0.0)
    return _mesh(nr.Rig(rig.rows, rest, rig.groups, rig.edges, rig.basis), blender=None)


def non_finite_channel() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    channel = rig.channel()
    channel[1, 0, 3] = np.nan
    return _mesh(rig, channel=channel, blender=None)


def drift() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    at_rest = rig.rest.copy()
    at_rest[[3, 4]] += (0.0, 0.0, 0.01)
    return _mesh(rig, modelled=rig.rest, blender_at_rest=at_rest)


def mismatch() -> Codes:
    rig = nr.chain_tube(basis=POSED)
    return _mesh(rig, blender=rig.rest.copy())  # Blender left the posed mesh at rest


def dqs_order() -> Codes:
    dqs = ArmatureModifierSettings("A", preserve_volume=True)
    return _mesh(_three_bone_rig(60.0), blender=None, modifier=dqs)


def non_finite_metric() -> Codes:
    result = audit(nr.skinned_mesh(nr.chain_tube(basis=POSED)))
    return _codes(finite_audit(replace(result, metrics={**result.metrics, "size": math.nan})).findings)


# ------------------------------------------------------------ shape checks


def shape(rig: nr.Rig, checker=None) -> Codes:
    return _codes(shapes.shape(nr.skinned_mesh(rig), checker).findings)


def stray() -> Codes:
    rig = nr.chain_tube()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[64], child[64] = 0.25, 0.75
    return shape(nr.Rig(rig.rows, rig.rest, {"Root": root, "Child": child}, rig.edges))


def asymmetric() -> Codes:
    rig = shapes.arms()
    groups = {k: v.copy() for k, v in rig.groups.items()}
    groups["Arm.L"][20] -= 0.1
    groups["Hand.L"][20] += 0.1
    return shape(nr.Rig(rig.rows, rig.rest, groups, rig.edges))


# ------------------------------------------------------------ the rig audit


def rig_codes(rig: nr.Rig | None = None, **kwargs) -> Codes:
    return _codes(verdicts._rig_only(rig=rig, **kwargs).findings)


def missing_modifier() -> Codes:
    return rig_codes(missing=[MissingModifier("Body.001", "has vertex groups named after bones of 'Armature'",
                                              ("Root",))])


def humanoid(rows, **options) -> Codes:
    rig, _ = skel.audit(rows, **options)
    return _codes(rig.findings)


def ambiguous() -> Codes:
    rows = humanoid_rows(MIXAMO)
    return humanoid(rows + (replace(rows[-1], name="hand_r", parent="mixamorig:Hips"),))


def joint_budget() -> Codes:
    _, parts = audit_rig("Armature", [nr.skinned_mesh(many_joint_rig(300))], AuditOptions(target="unreal",
                                                                                           shape_checks=False))
    return _codes(parts[0].findings)


def skeleton_differs() -> Codes:
    files = [skel.file_of("a.blend", humanoid_rows(MIXAMO)),
             skel.file_of("b.blend", humanoid_rows(MIXAMO, rename={"mixamorig:Spine1": "mixamorig:Spine_Mid"}))]
    return _codes(cross_file_findings(files)[1].rigs[0].findings)


# ------------------------------------------------------------ animation


def played(degrees, target=None) -> Codes:
    found, _ = action_findings(anim.play(nr.skinned_mesh(nr.chain_tube(("Root", "Child"))), degrees, target=target),
                               AuditOptions())
    return _codes(found)


def crowded_animation() -> Codes:
    rig = nr.chain_tube(("Root", "Child", "Tip", "End", "Last"))
    mesh = nr.skinned_mesh(nr.Rig(rig.rows, rig.rest, {g: np.full(len(rig.rest), 0.2) for g in rig.groups},
                                  rig.edges))
    m = anim.ActionMeasures(mesh, "Wave", anim.get_target("threejs"))
    channels = np.stack([nr.channels(rig.rows, {"Last": nr.rotation("x", math.radians(d))}) for d in (0, 45, 90)])
    m.add([1.0, 2.0, 3.0], channels, anim.prepare_target(mesh, anim.get_target("threejs")))
    return _codes(action_findings(m, AuditOptions())[0])


def spot_check_off() -> Codes:
    m = anim.play(nr.skinned_mesh(nr.chain_tube(("Root", "Child"))), [0, 10])
    m.spot_checks += [(1.0, 0.0), (2.0, 0.01)]
    return _codes(action_findings(m, AuditOptions())[0])


def keyed() -> Codes:
    k = anim.keys
    actions = [ActionData("Act", (1, 40), (
        k("location", 0, (1, 0.0), (10, 1.0)), k('pose.bones["Gone"].location', 0, (1, 0.0)),
        k('pose.bones["ctrl"].location', 1, (1, 0.0), (10, 1.0)),
        *(k('pose.bones["Root"].scale', i, (1, 1.0), (5, 0.0)) for i in range(3))))]
    flip = EulerSamples("Arm", 2, (1.0, 2.0, 3.0), tuple(math.radians(d) for d in (170, 175, -175)))
    actions.append(ActionData("Spin", (1, 3), (), (flip,)))
    return _codes(animation_data_findings("Rig", anim.bones(), actions))


# ------------------------------------------------------------ glTF file checks and Babylon


def gltf_file(tmp_path: Path) -> Codes:
    t = broken_tiny(first_key=-1.0)  # a key before 0 s
    doc = load_gltf(t.gltf(tmp_path))
    found = _codes(file_checks(doc))
    # Against what Blender's importer made (a layout built here): v2's 1.2 and -0.2 clamped to 1
    # and 0 are a change Blender shows; other faces leave the mesh unpaired.
    prims, rest = skinned_primitives(doc), blender_coords(np.array(POSITIONS))
    clamped = imported(doc, rest, np.array([[0.5, 0.0, 1.0, 0.5], [0.5, 0.0, 0.0, 0.0]]))
    change = importer_changes(doc, match_node(doc, prims, clamped, {0: "Body"}), clamped, THREEJS)
    found |= {change.code} if change is not None else set()
    reordered = imported(doc, rest, np.zeros((2, 4)), faces=[[0, 1, 3]])
    unpaired = match_node(doc, prims, reordered, {0: "Body", 1: "J0", 2: "J1"})
    if not unpaired.reliable:
        found.add(unmatched_finding(reordered.object, unpaired.why, THREEJS).code)
    # A second influence set (Blender's importer merges it into the vertex groups).
    attrs = t.json["meshes"][0]["primitives"][0]["attributes"]
    attrs["JOINTS_1"] = t.accessor([[1, 0, 0, 0]] * 4, "<u1", 5121, "VEC4")
    attrs["WEIGHTS_1"] = t.accessor([[0.1, 0, 0, 0]] * 4, "<f4", 5126, "VEC4")
    found |= _codes(file_checks(load_gltf(t.gltf(tmp_path, "two_sets.gltf"))))
    # A buffer read from outside the file's folder; Draco data no decoder accepts.
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "zeros.bin").write_bytes(bytes(48))
    (tmp_path / "asset").mkdir()
    found |= _codes(file_checks(load_gltf(with_extra_buffer(tmp_path / "asset" / "up.gltf", "../outside/zeros.bin",
                                                            used=True))))
    found |= _codes(file_checks(load_gltf(with_draco(tmp_path / "draco.gltf", b"NOTDRACO" * 8))))
    return found


def babylon_codes() -> Codes:
    """v0 clean; v1 no weight (vanishes); v2 (1.25, -0.25) (CPU skips -0.25, the shader keeps it);
    v3 sums 1.2 (shading off); a morph target (the CPU path drops it); joint 1 moved by (0, 1, 0)."""
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    joints = np.array([[0, 1, 0, 0]] * 4)
    weights = np.array([[0.5, 0.5, 0, 0], [0, 0, 0, 0], [1.25, -0.25, 0, 0], [0.6, 0.6, 0, 0]])
    mats = np.tile(np.eye(4), (2, 1, 1))
    mats[1, :3, 3] = (0.0, 1.0, 0.0)
    return _codes(babylon.babylon_findings(rest, [joints], [weights], mats, target_deltas=np.full((1, 4, 3), 0.1),
                                           target_weights=np.array([0.5])))


#: code -> the run that must return it.
def stepped_tube() -> Codes:
    """A bent tube with a hard 0 -> 1 step at its joint: a seam the bend stretches and folds."""
    rings, seg = 41, 32
    return _codes(audit(surf.mesh_of(surf.bent_tube(rings, seg, step=True), rings, seg), shape_checks=True).findings)


def twisted_cap() -> Codes:
    """The twisted cylinder with its mid ring capped: the cap's triangles collapse at 180 degrees."""
    mesh, _, _ = surf.capped_twist_cylinder()
    found = surface_findings(mesh, measure_surface(mesh, (90.0, 180.0), 90.0), 90.0, (90.0, 180.0)).findings
    return _codes(found)


def crowded_twist() -> Codes:
    """Five bones of one chain at 0.2 each on every vertex: a candy wrapper."""
    names = ("A", "B", "C", "D", "E")
    rest, edges = nr.tube(9, 8, 0.3, 2.0)
    rig = nr.Rig(tuple(nr.chain(names, 2.0)), rest, {n: np.full(len(rest), 0.2) for n in names}, edges)
    return _codes(audit(nr.skinned_mesh(rig, blender=None), shape_checks=True).findings)


FIRES: dict[str, Callable[[], Codes]] = {
    "weight-step": stepped_tube,
    "surface-stretch": stepped_tube,
    "surface-fold": stepped_tube,
    "surface-area-collapse": twisted_cap,
    "twist-region-crowded": crowded_twist,
    "unweighted-vertices": unweighted,
    "weights-not-normalized": unnormalised,
    "engine-divergence": unnormalised,
    "too-many-influences": crowded,
    "group-without-bone": ghost_group,
    "weights-on-non-deform-bone": non_deform_weighted,
    "deform-bone-without-weights": idle_deform_bone,
    "non-finite-weights": bad_weights(math.nan),
    "negative-weights": bad_weights(-0.25),
    "multiple-root-bones": two_roots,
    "no-deform-bones": no_deform,
    "non-uniform-armature-scale": armature_scale((1.0, 2.0, 1.0)),
    "negative-armature-scale": armature_scale((-1.0, 1.0, 1.0)),
    "preserve-volume-on": lambda: _mesh(blender=None, modifier=ArmatureModifierSettings("A", preserve_volume=True)),
    "bbones-on-deform-bones": bendy,
    "mesh-not-parented-to-armature": lambda: _mesh(parent="Other"),
    "non-finite-positions": non_finite_rest,
    "non-finite-bone-matrices": non_finite_channel,
    "not-reproduced": lambda: _mesh(unsupported=("Multi Modifier on 'A'",)),
    "rest-position-shown": lambda: _mesh(shown_at_rest=True),
    "bind-pose-drift": drift,
    "skinning-mismatch": mismatch,
    "dqs-order-sensitive": dqs_order,
    "non-finite-result": non_finite_metric,
    "twist-collapse": lambda: shape(shapes.gradient_tube(True)),
    "volume-loss": lambda: shape(shapes.gradient_tube(True)),
    "sweep-mismatch": lambda: shape(nr.chain_tube(), shapes.OwnBlender(nr.chain_tube(), nudge=0.01, vertex=40)),
    "no-mirrored-bones": lambda: shape(nr.chain_tube()),
    "unpaired-side-bone": lambda: shape(shapes.arms(extra=(nr.BoneRow("Finger.L", (2.5, 1.0, 0.0), (3.0, 1.0, 0.0),
                                                                      "Hand.L"),))),
    "mirror-axis-mismatch": lambda: shape(shapes.arms(hand_roll=math.radians(30.0))),
    "mirror-axis-convention": lambda: shape(shapes.arms(right_roll=math.pi)),
    "mesh-not-symmetric": lambda: shape(shapes.arms(left_only=True)),
    "weight-asymmetry": asymmetric,
    "stray-weights": stray,
    "armature-modifier-missing": missing_modifier,
    "rigid-part": lambda: rig_codes(rigid=[RigidPart("Glove", "Hand", 24)], rig=verdicts._with_hand()),
    "humanoid-bone-missing": lambda: humanoid(humanoid_rows(MIXAMO, without=("Hand",))),
    "humanoid-bone-ambiguous": ambiguous,
    "rest-pose": lambda: humanoid(humanoid_rows(MIXAMO, arm_degrees=40.0)),
    "rest-pose-mismatch": lambda: humanoid(humanoid_rows(MIXAMO, arm_degrees=40.0), rest_pose="t"),
    "joint-budget-exceeded": joint_budget,
    "skeleton-differs": skeleton_differs,
    "animation-collapse": lambda: played(anim.DEGREES),
    "animation-volume-loss": lambda: played(anim.DEGREES),
    "animation-engine-divergence": crowded_animation,
    "animation-mismatch": spot_check_off,
    "animation-scale-keys": keyed,
    "armature-object-keys": keyed,
    "animation-missing-bone": keyed,
    "animation-helper-keys": keyed,
    "action-range-beyond-keys": keyed,
    "animation-euler-flip": keyed,
    "babylon-vertex-vanishes": babylon_codes,
    "babylon-cpu-gpu-differ": babylon_codes,
    "babylon-unnormalised-weights-shading": babylon_codes,
    "babylon-shape-keys-ignored-on-cpu": babylon_codes,
}

#: Codes of the glTF file checks and of the file against Blender's import, fired by one tiny file.
FILE_CHECKS = {"gltf-joint-out-of-range", "gltf-weight-negative", "gltf-joint-on-zero-weight", "gltf-joint-repeated",
               "gltf-blender-clamps-weight", "gltf-rotation-not-unit", "gltf-weights-not-normalised",
               "gltf-animation-time-negative", "gltf-blender-changes-weights", "gltf-not-compared",
               "gltf-uri-outside-folder", "gltf-draco-undecodable", "gltf-blender-merges-sets"}

#: code -> why it does not fire on a numpy rig or a tiny file here, and the test that runs it
#: (none today: every documented code fires above).
_PLANTED = ("needs a limb built in real Blender with its limits and triangles: "
            "tests/rigs/test_planted_problems.py::test_each_planted_problem_is_found_naming_its_bone")
ELSEWHERE: dict[str, str] = {
    "self-intersection": _PLANTED,
    "mesh-intersection": _PLANTED.replace("test_each_planted_problem_is_found_naming_its_bone",
                                          "test_the_sleeve_the_arm_passes_through_is_named"),
    "joint-off-transition": _PLANTED,
    "joint-outside-mesh": _PLANTED,
    "chain-roll-inconsistent": _PLANTED,
    "animation-clip-divergence": "needs Blender's import of a glTF clip beside the file's own samplers: "
                                 "tests/engines/test_animation_threejs.py runs it on Fox and on a sparse-key clip "
                                 "against the running three.js",
}


def test_the_tables_are_exactly_the_documented_codes():
    from tests.core.audit.test_rules_codes import documented_codes

    every = set(RULE_CODES | SHAPE_CODES | GLTF_CODES)
    assert documented_codes() == every
    assert not set(FIRES) & FILE_CHECKS and not (set(FIRES) | FILE_CHECKS) & set(ELSEWHERE)
    assert set(FIRES) | FILE_CHECKS | set(ELSEWHERE) == every


@pytest.mark.parametrize("code", sorted(FIRES))
def test_the_code_fires_when_its_rule_runs(code):
    found = FIRES[code]()
    assert code in found, f"{code} not returned; the rule returned {sorted(found)}"


def test_the_gltf_file_checks_fire_on_a_tiny_file(tmp_path):
    found = gltf_file(tmp_path)
    assert sorted(FILE_CHECKS - found) == []
