# SPDX-License-Identifier: GPL-3.0-or-later
"""Every audit rule on small rigs built in code: one rig with exactly the defect,
one without it, and the vertices, bones and groups the finding must name.

Truth here never comes from the code under test.  Expected vertex sets are the
ones the test made defective (the cylinder's rings have exact weights: child
weight 0, 0, 0, 1/4, 1/2, 3/4, 1, 1, 1 from the bottom ring up); what Blender
does is read straight from the evaluated mesh with this file's own loops
(``own_evaluated``), and the pose's skinning matrices from ``pose_bone.matrix``
and ``bone.matrix_local``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from skin_audit.core.audit import mesh_audit as audit_mesh
from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.tolerances import FLOAT32_RELATIVE, SKINNING_MATCH_RELATIVE
from tests.independent_readers import own_weights

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]
#: The rules on small rigs must hold on the oldest supported Blender too.
on_blender42 = pytest.mark.blender42

RINGS, SEGMENTS, RADIUS, HEIGHT = 9, 8, 0.5, 2.0
V = RINGS * SEGMENTS
BONES = ("Root", "Child")
#: Child weight of each ring (z = 0, 0.25, ..., 2) in the clean rig: exact binary fractions.
CHILD_BY_RING = (0.0, 0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 1.0)
#: Rotating Child about its local X turns about the world line y = 0, z = 1: ring 4 has two
#: vertices on it, (0.5, 0, 1) and (-0.5, 0, 1), which no rotation about X moves.
ON_CHILD_X_AXIS = (32, 36)
#: Findings of the audit rules tested here (other issues add their own codes).
RULE_CODES = audit_mesh.RULE_CODES
#: Blender (float32) against the float64 recomputation on these ~size-2 rigs: measured <= 1e-6.
MATCH = FLOAT32_RELATIVE * 2.0


# ------------------------------------------------------------------ helpers


@pytest.fixture(scope="module")
def rb():
    """The rig builder (imported here: it needs bpy, which the conftest checks first)."""
    from tests.factories import blender_rigs as rig_builder

    return rig_builder


def ring(r: int) -> list[int]:
    return list(range(r * SEGMENTS, (r + 1) * SEGMENTS))


def clean_weights(rb, names=BONES, height=HEIGHT, rings=RINGS) -> dict[str, tuple]:
    verts, _ = rb.cylinder(rings, SEGMENTS, RADIUS, height)
    return rb.chain_weights(verts[:, 2], names, height)


def set_weights(weights: dict[str, tuple], vertex_groups: dict[int, dict[str, float]]) -> dict[str, tuple]:
    """A copy of ``weights`` where each listed vertex has exactly the given groups."""
    out = {g: (np.asarray(i), np.asarray(w, dtype=np.float64)) for g, (i, w) in weights.items()}
    for g, (idx, w) in out.items():
        keep = ~np.isin(idx, list(vertex_groups))
        out[g] = (idx[keep], w[keep])
    for v, groups in vertex_groups.items():
        for g, value in groups.items():
            idx, w = out.get(g, (np.zeros(0, dtype=np.int64), np.zeros(0)))
            out[g] = (np.append(idx, v), np.append(w, value))
    return out


def cylinder_rig(rb, name="Rig", weights=None, bones=None, **settings):
    verts, faces = rb.cylinder(RINGS, SEGMENTS, RADIUS, HEIGHT)
    return rb.build_rig(name, bones or rb.chain_bones(BONES, HEIGHT), verts, faces,
                        clean_weights(rb) if weights is None else weights, **settings)


def pose(bpy, arm, bone: str, euler=(0.0, 0.0, 0.0), location=None, scale=None) -> None:
    pb = arm.pose.bones[bone]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = euler
    if location is not None:
        pb.location = location
    if scale is not None:
        pb.scale = scale
    bpy.context.view_layer.update()


def run_audit(bpy, obj, **options):
    from skin_audit.blender.run.audit_scene import audit_meshes

    (result,) = audit_meshes(bpy.context, [obj], AuditOptions(**options))
    return result


def rule_findings(result) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in result.findings:
        if f.code in RULE_CODES:
            out.setdefault(f.code, []).append(f)
    return out


def only(result, code: str):
    found = rule_findings(result).get(code, [])
    assert len(found) == 1, f"expected one {code!r} finding, got {[f.code for f in result.findings]}"
    return found[0]


def own_rest(obj) -> np.ndarray:
    return np.array([tuple(v.co) for v in obj.data.vertices], dtype=np.float64)


def own_evaluated(bpy, obj) -> np.ndarray:
    """(V, 3) object-space positions after the modifier stack, read one ``co`` at a time."""
    bpy.context.view_layer.update()
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    return np.array([tuple(v.co) for v in mesh.vertices], dtype=np.float64)




def skin_matrix(arm, bone: str) -> np.ndarray:
    """Armature-space skinning matrix ``pose_bone.matrix @ bone.matrix_local^-1``."""
    return np.array(arm.pose.bones[bone].matrix) @ np.linalg.inv(np.array(arm.data.bones[bone].matrix_local))


def apply(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    return p @ m[:3, :3].T + m[:3, 3]


# ------------------------------------------------------------ the control rig


@on_blender42
def test_clean_rig_posed_has_no_rule_finding(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    pose(bpy, arm, "Child", (0.7, 0.2, 0.4))
    result = run_audit(bpy, mesh)
    assert rule_findings(result) == {}
    # The recomputation against Blender's own evaluated mesh, read here.
    moved = own_evaluated(bpy, mesh)
    assert np.abs(moved - own_rest(mesh)).max() > 0.3  # the pose does move the mesh
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    assert result.metrics["vertices_compared"] == V


# ------------------------------------------------------------ weight rules


@on_blender42
def test_unweighted_vertices_and_blenders_1e4_rule(bpy, rb):
    # 5, 50, 51: no group at all; 60: Child 5e-5 (<= 1e-4: Blender ignores it); 61: Child 2e-4 (moves).
    weights = set_weights(clean_weights(rb), {5: {}, 50: {}, 51: {}, 60: {"Child": 5e-5}, 61: {"Child": 2e-4}})
    mesh, arm = cylinder_rig(rb, weights=weights)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    result = run_audit(bpy, mesh)
    f = only(result, "unweighted-vertices")
    assert (f.severity, f.count, f.vertices) == ("ERROR", 4, (5, 50, 51, 60))
    assert result.metrics["unweighted_vertices"] == 4
    # Blender's truth: the four stay where they were modelled; 61 follows Child fully (renormalised).
    rest, moved = own_rest(mesh), own_evaluated(bpy, mesh)
    assert np.abs(moved[[5, 50, 51, 60]] - rest[[5, 50, 51, 60]]).max() < 1e-7
    expected_61 = apply(skin_matrix(arm, "Child"), rest[61])
    assert np.linalg.norm(moved[61] - expected_61) < MATCH
    assert np.linalg.norm(moved[61] - rest[61]) > 0.1
    # 61 is weighted but far from 1.
    assert 61 in only(result, "weights-not-normalized").vertices
    # Control: the clean rig.
    control, _ = cylinder_rig(rb, name="Control")
    assert "unweighted-vertices" not in rule_findings(run_audit(bpy, control))


@on_blender42
@pytest.mark.parametrize("tolerance, expected", [(1e-4, (2, 30)), ("gltf", (2, 3, 30))])
def test_weights_not_normalized(bpy, rb, tolerance, expected):
    # 2: Root 0.9 (off by 0.1); 3: Root 1 - 5e-5 (off by 5e-5: within 1e-4, not within glTF's
    # 2e-7 a weight); 30 (ring 3): Root 0.75 + Child 0.2505 (off by 5e-4).
    weights = set_weights(clean_weights(rb), {2: {"Root": 0.9}, 3: {"Root": 1.0 - 5e-5},
                                              30: {"Root": 0.75, "Child": 0.2505}})
    mesh, _ = cylinder_rig(rb, weights=weights)
    _, w = own_weights(mesh)
    sums = w.sum(axis=1)
    assert np.abs(np.delete(sums, [2, 3, 30]) - 1.0).max() < 1e-7  # every other vertex is normalised
    result = run_audit(bpy, mesh, weight_tolerance=tolerance)
    f = only(result, "weights-not-normalized")
    # threejs (the default) reads what Blender's glTF exporter writes, divided by the sum: it draws
    # these vertices where Blender does, so the rule says so at INFO.
    assert (f.severity, f.count, f.vertices, f.bones, f.groups) == ("INFO", len(expected), expected, (), ())
    assert f.details["max_error"] == pytest.approx(0.1, abs=1e-6)
    assert f.details["target"] == "threejs" and "exporter divides" in f.message and "nothing shows" in f.message
    # raw keeps the sums as stored: vertex 2 (Root only, 0.9) is drawn at 0.9 of its armature-space
    # position at every pose (Root turns about the origin), 0.1 of its distance from Blender's; the
    # others are within the engine-divergence tolerance.
    raw = only(run_audit(bpy, mesh, weight_tolerance=tolerance, target="raw"), "weights-not-normalized")
    rest = np.array([v.co[:] for v in mesh.data.vertices])
    assert (raw.severity, raw.vertices, raw.details["drawn_off"]) == ("WARNING", expected, 1)
    assert raw.details["max_drawn_difference"] == pytest.approx(0.1 * np.linalg.norm(rest[2]), rel=1e-5)
    assert "raw" in raw.message and "world units" in raw.message and "of the mesh's size" in raw.message
    control, _ = cylinder_rig(rb, name="Control")
    assert "weights-not-normalized" not in rule_findings(run_audit(bpy, control, weight_tolerance=tolerance))


@on_blender42
def test_too_many_influences_follows_max_influences(bpy, rb):
    names = ("B0", "B1", "B2", "B3", "B4")
    five = {n: 0.2 for n in names}
    weights = set_weights(clean_weights(rb, names), {10: five, 20: five})
    mesh, _ = cylinder_rig(rb, weights=weights, bones=rb.chain_bones(names, HEIGHT))
    _, w = own_weights(mesh)
    assert sorted(np.flatnonzero((w > 0).sum(axis=1) > 4)) == [10, 20]
    result = run_audit(bpy, mesh, max_influences=4, target="raw")  # raw: the top-N model, named
    f = only(result, "too-many-influences")
    assert (f.severity, f.count, f.vertices) == ("WARNING", 2, (10, 20))
    assert f.details["max_influences"] == 5
    assert result.metrics["max_influences"] == 5
    assert "weights-not-normalized" not in rule_findings(result)
    # An engine keeping 4 of 5 equal weights loses a fifth of the vertex: it diverges there only.
    assert only(result, "engine-divergence").vertices == (10, 20)
    # Control: the same rig judged with a limit of 5.
    relaxed = rule_findings(run_audit(bpy, mesh, max_influences=5, target="raw"))
    assert "too-many-influences" not in relaxed and "engine-divergence" not in relaxed


@on_blender42
def test_group_without_bone(bpy, rb):
    weights = clean_weights(rb)
    weights["Ghost"] = ([57, 58], [0.5, 0.5])  # ring 7: Child 1 as well
    weights["Spare"] = ([], [])  # a group with no weight is no problem
    mesh, arm = cylinder_rig(rb, weights=weights)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    result = run_audit(bpy, mesh)
    f = only(result, "group-without-bone")
    # Both vertices are weighted to Child as well: nothing drawn changes, so INFO.
    assert (f.severity, f.count, f.vertices, f.groups, f.bones) == ("INFO", 2, (57, 58), ("Ghost",), ())
    # Blender's truth: the group changes nothing (same positions without it), and the
    # recomputation that ignores it too matches Blender.
    with_ghost = own_evaluated(bpy, mesh)
    mesh.vertex_groups.remove(mesh.vertex_groups["Ghost"])
    assert np.abs(own_evaluated(bpy, mesh) - with_ghost).max() == 0.0
    assert "skinning-mismatch" not in rule_findings(result)


@on_blender42
def test_weights_on_non_deform_bone(bpy, rb):
    bones = [*rb.chain_bones(BONES, HEIGHT),
             rb.BoneSpec("Ctrl", (0.0, 1.0, 1.0), (0.0, 1.0, 2.0), "Root", use_deform=False),
             rb.BoneSpec("Ctrl2", (0.0, -1.0, 1.0), (0.0, -1.0, 2.0), "Root", use_deform=False)]
    weights = clean_weights(rb)
    weights["Ctrl"] = ([57, 58], [0.5, 0.5])
    weights["Ctrl2"] = ([], [])  # control: a non-deform bone's empty group
    mesh, arm = cylinder_rig(rb, weights=weights, bones=bones)
    pose(bpy, arm, "Ctrl", (1.2, 0.0, 0.0))
    result = run_audit(bpy, mesh)
    f = only(result, "weights-on-non-deform-bone")
    assert (f.severity, f.count, f.vertices, f.bones, f.groups) == ("WARNING", 2, (57, 58), ("Ctrl",), ("Ctrl",))
    # Blender's truth: rotating the non-deform bone moves nothing.
    assert np.abs(own_evaluated(bpy, mesh) - own_rest(mesh)).max() < 1e-7
    assert "deform-bone-without-weights" not in rule_findings(result)


@on_blender42
def test_deform_bone_without_weights(bpy, rb):
    bones = [*rb.chain_bones(BONES, HEIGHT),
             rb.BoneSpec("Spare", (0.0, 1.0, 0.0), (0.0, 1.0, 1.0), "Root"),
             rb.BoneSpec("Empty", (0.0, -1.0, 0.0), (0.0, -1.0, 1.0), "Root"),
             rb.BoneSpec("Ctrl", (1.0, 0.0, 0.0), (1.0, 0.0, 1.0), "Root", use_deform=False)]
    weights = clean_weights(rb)
    weights["Empty"] = ([], [])
    mesh, _ = cylinder_rig(rb, weights=weights, bones=bones)
    f = only(run_audit(bpy, mesh), "deform-bone-without-weights")
    assert f.severity == "INFO"
    assert (f.count, sorted(f.bones), f.vertices) == (2, ["Empty", "Spare"], ())
    control, _ = cylinder_rig(rb, name="Control", bones=[*rb.chain_bones(BONES, HEIGHT), bones[-1]])
    assert "deform-bone-without-weights" not in rule_findings(run_audit(bpy, control))


# ------------------------------------------------------------ armature and object rules


@on_blender42
def test_multiple_root_bones(bpy, rb):
    # A deform bone outside the chain: the deform hierarchy an exporter writes has two roots.
    bones = [*rb.chain_bones(BONES, HEIGHT), rb.BoneSpec("Prop", (1.0, 0.0, 0.0), (1.0, 0.0, 1.0))]
    mesh, _ = cylinder_rig(rb, bones=bones)
    f = only(run_audit(bpy, mesh, target="unreal"), "multiple-root-bones")
    assert (f.severity, f.count, sorted(f.bones), f.vertices) == ("WARNING", 2, ["Prop", "Root"], ())
    assert only(run_audit(bpy, mesh), "multiple-root-bones").severity == "INFO"  # three.js: one skin, drawn alike
    # A helper (non-deform) root reaches only exporters that write every bone: INFO.
    bones = [*rb.chain_bones(BONES, HEIGHT), rb.BoneSpec("Prop", (1.0, 0.0, 0.0), (1.0, 0.0, 1.0), use_deform=False)]
    mesh, _ = cylinder_rig(rb, name="Helper", bones=bones)
    f = only(run_audit(bpy, mesh), "multiple-root-bones")
    assert (f.severity, f.count, sorted(f.bones), f.vertices) == ("INFO", 2, ["Prop", "Root"], ())
    control, _ = cylinder_rig(rb, name="Control")
    assert "multiple-root-bones" not in rule_findings(run_audit(bpy, control))


@on_blender42
def test_no_deform_bones(bpy, rb):
    bones = [replace(b, use_deform=False) for b in rb.chain_bones(BONES, HEIGHT)]
    mesh, arm = cylinder_rig(rb, bones=bones)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    found = rule_findings(run_audit(bpy, mesh))
    (f,) = found["no-deform-bones"]
    assert (f.severity, f.count) == ("ERROR", 0)
    assert found["unweighted-vertices"][0].count == V
    assert sorted(g for x in found["weights-on-non-deform-bone"] for g in x.groups) == ["Child", "Root"]
    assert np.abs(own_evaluated(bpy, mesh) - own_rest(mesh)).max() < 1e-7  # Blender moves nothing
    control, _ = cylinder_rig(rb, name="Control")
    assert "no-deform-bones" not in rule_findings(run_audit(bpy, control))


@on_blender42
@pytest.mark.parametrize("scale, code", [((1.0, 2.0, 1.0), "non-uniform-armature-scale"),
                                         ((-1.0, 1.0, 1.0), "negative-armature-scale")])
def test_armature_scale(bpy, rb, scale, code):
    severity = {"non-uniform-armature-scale": "WARNING", "negative-armature-scale": "ERROR"}[code]
    mesh, arm = cylinder_rig(rb)
    arm.scale = scale
    pose(bpy, arm, "Child", (0.6, 0.1, 0.3))
    found = rule_findings(run_audit(bpy, mesh))
    (f,) = found[code]
    assert (f.severity, f.count, arm.name in f.message) == (severity, 0, True)
    other = ({"non-uniform-armature-scale", "negative-armature-scale"} - {code}).pop()
    assert other not in found
    assert "skinning-mismatch" not in found  # the recomputation follows the scaled armature
    control, control_arm = cylinder_rig(rb, name="Control")
    control_arm.scale = (1.5, 1.5, 1.5)
    assert not {"non-uniform-armature-scale", "negative-armature-scale"} & set(
        rule_findings(run_audit(bpy, control)))


def test_negative_scale_message_names_the_scale_the_user_set(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    arm.scale = (-1.0, 1.0, 1.0)
    bpy.context.view_layer.update()
    assert "[-1.0, 1.0, 1.0]" in only(run_audit(bpy, mesh), "negative-armature-scale").message


def test_group_without_bone_a_vertex_depends_on(bpy, rb):
    """A group naming no bone that is a vertex's only weight leaves it behind: WARNING, counted."""
    weights = set_weights(clean_weights(rb), {57: {"Ghost": 1.0}})
    weights["Ghost"] = (np.append(weights["Ghost"][0], 58), np.append(weights["Ghost"][1], 0.5))
    mesh, arm = cylinder_rig(rb, weights=weights)
    rest = own_evaluated(bpy, mesh)[57].copy()
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    f = only(run_audit(bpy, mesh), "group-without-bone")
    assert (f.severity, f.count, f.vertices) == ("WARNING", 2, (57, 58))
    assert "1 of its vertices have no other deform weight" in f.message
    # Blender's truth: vertex 57 stays where it was modelled while the bone turns.
    assert np.abs(own_evaluated(bpy, mesh)[57] - rest).max() < 1e-6


@on_blender42
def test_mesh_not_parented_to_armature(bpy, rb):
    mesh, arm = cylinder_rig(rb, parent_to_armature=False)
    f = only(run_audit(bpy, mesh), "mesh-not-parented-to-armature")
    # Blender deforms it and its glTF exporter writes the skin whatever the parent: INFO.
    assert (f.severity, f.count, "nothing" in f.message) == ("INFO", 0, True)
    holder = bpy.data.objects.new("Holder", None)
    bpy.context.scene.collection.objects.link(holder)
    mesh.parent = holder
    assert "'Holder'" in only(run_audit(bpy, mesh), "mesh-not-parented-to-armature").message
    mesh.parent = arm
    assert "mesh-not-parented-to-armature" not in rule_findings(run_audit(bpy, mesh))


@on_blender42
def test_a_mesh_also_parented_with_parent_type_armature_is_deformed_twice(bpy, rb):
    """Parent type Armature runs a hidden Armature modifier before the stack: with the mesh's own
    modifier Blender deforms it twice.  That is reported as such (a real mismatch), and the
    copies' hidden modifier follows their armature copy: at Rest Position nothing drifts."""
    mesh, arm = cylinder_rig(rb)
    mesh.parent_type = "ARMATURE"
    pose(bpy, arm, "Child", (0.5, 0.0, 0.0))
    result = run_audit(bpy, mesh)
    found = rule_findings(result)
    assert "bind-pose-drift" not in found and result.metrics["max_bind_drift"] < 1e-5
    mismatch = only(result, "skinning-mismatch")
    assert f"'{mesh.name}' is parented to '{arm.name}' with parent type Armature" in mismatch.message
    # Blender's truth: the same pose through the modifier alone (parent type Object) is what numpy gives.
    twice = own_evaluated(bpy, mesh)
    mesh.parent_type = "OBJECT"
    bpy.context.view_layer.update()
    once = own_evaluated(bpy, mesh)
    assert np.abs(twice - once).max() > 0.1
    assert "skinning-mismatch" not in rule_findings(run_audit(bpy, mesh))


# ------------------------------------------------------------ bind pose


def _child_weighted_off_axis() -> list[int]:
    return [i for r in range(RINGS) if CHILD_BY_RING[r] > 0 for i in ring(r) if i not in ON_CHILD_X_AXIS]


def _child_held_away(bpy, rb, holder: str):
    """The cylinder rig with Child held 0.5 rad about X from rest by a ``holder``: a Limit Rotation
    constraint or a driver."""
    mesh, arm = cylinder_rig(rb)
    pb = arm.pose.bones["Child"]
    pb.rotation_mode = "XYZ"
    if holder == "constraint":
        c = pb.constraints.new("LIMIT_ROTATION")
        c.owner_space, c.use_limit_x, c.min_x, c.max_x = "LOCAL", True, 0.5, 0.6
    else:
        fc = pb.driver_add("rotation_euler", 0)
        fc.driver.type, fc.driver.expression = "SCRIPTED", "0.5"  # a simple expression: no Python needed
    bpy.context.view_layer.update()
    return mesh, arm


@on_blender42
@pytest.mark.parametrize("holder", ["constraint", "driver"])
def test_bind_pose_drift_from_a_bone_held_away_from_rest(bpy, rb, holder):
    mesh, arm = _child_held_away(bpy, rb, holder)
    result = run_audit(bpy, mesh)
    f = only(result, "bind-pose-drift")
    # Blender's truth: with every channel already cleared, the rig still moves these vertices.
    drift = np.linalg.norm(own_evaluated(bpy, mesh) - own_rest(mesh), axis=1)
    moved = tuple(int(i) for i in np.flatnonzero(drift > 1e-3))
    assert moved == tuple(_child_weighted_off_axis())
    assert np.delete(drift, moved).max() < 1e-6  # a clear gap: nothing in between
    assert (f.severity, f.count, f.vertices, f.bones) == ("ERROR", len(moved), moved, ("Child",))
    assert f.details["max_drift"] == pytest.approx(drift.max(), abs=MATCH)


@on_blender42
@pytest.mark.parametrize("holder", ["constraint", "driver"])
def test_a_bone_held_away_from_rest_drifts_while_the_rig_shows_rest_position(bpy, rb, holder):
    """Rest Position is a display switch: the bones a constraint or driver holds away from rest
    still drift the bind pose, the same finding as at Pose Position, and the user's armature
    stays at Rest Position."""
    mesh, arm = _child_held_away(bpy, rb, holder)
    at_pose = run_audit(bpy, mesh)
    posed = only(at_pose, "bind-pose-drift")
    assert "rest-position-shown" not in rule_findings(at_pose)
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    at_rest = run_audit(bpy, mesh)
    shown_at_rest = only(at_rest, "bind-pose-drift")
    assert arm.data.pose_position == "REST"
    # The current pose compared with Blender is the rest: said, so a clean comparison is not read
    # as a verified pose.
    note = only(at_rest, "rest-position-shown")
    assert (note.severity, note.count) == ("INFO", 0) and f"'{arm.name}' is shown at Rest Position" in note.message
    assert (shown_at_rest.count, shown_at_rest.vertices, shown_at_rest.bones) == \
        (posed.count, posed.vertices, posed.bones) == (len(_child_weighted_off_axis()),
                                                       tuple(_child_weighted_off_axis()), ("Child",))
    assert shown_at_rest.details["max_drift"] == pytest.approx(posed.details["max_drift"], abs=MATCH)


@on_blender42
def test_no_bind_pose_drift_when_constraints_allow_rest(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    c = arm.pose.bones["Child"].constraints.new("LIMIT_ROTATION")
    c.owner_space, c.use_limit_x, c.min_x, c.max_x = "LOCAL", True, -0.1, 0.1
    pose(bpy, arm, "Child", (0.05, 0.0, 0.0))
    assert "bind-pose-drift" not in rule_findings(run_audit(bpy, mesh))


@on_blender42
def test_bind_pose_drift_from_an_active_shape_key(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    mesh.shape_key_add(name="Basis")
    key = mesh.shape_key_add(name="Bulge")
    for i in (3, 4, 40):
        key.data[i].co.x += 0.2
    key.value = 1.0
    pose(bpy, arm, "Child", (0.7, 0.0, 0.2))
    result = run_audit(bpy, mesh)
    f = only(result, "bind-pose-drift")
    assert (f.severity, f.count, f.vertices) == ("ERROR", 3, (3, 4, 40))
    assert f.details["causes"] == ["shape key 'Bulge'"] and "'Bulge'" in f.message
    assert f.details["max_drift"] == pytest.approx(0.2, abs=1e-6)
    # The recomputation starts from the shape-keyed mesh, as Blender's modifier does.
    assert "skinning-mismatch" not in rule_findings(result)
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    key.value = 0.0  # control
    bpy.context.view_layer.update()
    assert "bind-pose-drift" not in rule_findings(run_audit(bpy, mesh))


@on_blender42
def test_a_shape_key_the_rig_drives_is_not_bind_pose_drift(bpy, rb):
    """A corrective key driven by the Child bone's rotation (no Python: a Transform Channel
    variable) moves its vertices whenever the bone turns: the key at work, not the bind pose.
    INFO, named; an undriven key left on stays an ERROR."""
    mesh, arm = cylinder_rig(rb)
    mesh.shape_key_add(name="Basis")
    key = mesh.shape_key_add(name="Corrective")
    for i in (3, 4, 40):
        key.data[i].co.x += 0.2
    fcurve = key.driver_add("value")
    driver = fcurve.driver
    driver.type = "SUM"
    var = driver.variables.new()
    var.type = "TRANSFORMS"
    var.targets[0].id = arm
    var.targets[0].bone_target = "Child"
    var.targets[0].transform_type = "ROT_X"
    var.targets[0].transform_space = "LOCAL_SPACE"
    pose(bpy, arm, "Child", (0.7, 0.0, 0.2))
    result = run_audit(bpy, mesh)
    f = only(result, "bind-pose-drift")
    assert (f.severity, f.vertices) == ("INFO", (3, 4, 40)), f.message
    assert "'Corrective'" in f.message and "not the bind pose" in f.message
    assert "skinning-mismatch" not in rule_findings(result)
    # Blender's truth: the user's rig shown at Rest Position leaves the mesh as modelled (this
    # driver reads the rest there), so an ERROR would be false.
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    moved = own_evaluated(bpy, mesh) - np.array([v.co for v in mesh.data.vertices])
    arm.data.pose_position = "POSE"
    bpy.context.view_layer.update()
    assert np.abs(moved).max() < 1e-6
    # An undriven key left on at the same vertices is still drift, an ERROR.
    key.driver_remove("value")
    key.value = 1.0
    bpy.context.view_layer.update()
    assert only(run_audit(bpy, mesh), "bind-pose-drift").severity == "ERROR"


# ------------------------------------------------------------ Blender vs the recomputation


@on_blender42
def test_skinning_mismatch_from_a_weight_modifier_before_the_armature(bpy, rb):
    """A Vertex Weight Edit modifier ahead of the Armature modifier removes Child weights
    below 0.4: Blender deforms ring 3 (Child 1/4 as painted) with Root only."""
    mesh, arm = cylinder_rig(rb)
    edit = mesh.modifiers.new("Trim Child", "VERTEX_WEIGHT_EDIT")
    edit.vertex_group, edit.use_remove, edit.remove_threshold = "Child", True, 0.4
    mesh.modifiers.move(1, 0)
    pose(bpy, arm, "Child", (0.9, 0.0, 0.0))
    result = run_audit(bpy, mesh)
    f = only(result, "skinning-mismatch")
    assert (f.severity, f.count, f.vertices) == ("ERROR", SEGMENTS, tuple(ring(3)))
    # Blender's truth: ring 3 stays rigid with the (unposed) root; painted weights would move it by
    # 1/4 of Child's motion.
    rest, moved = own_rest(mesh), own_evaluated(bpy, mesh)
    assert np.abs(moved[ring(3)] - rest[ring(3)]).max() < 1e-6
    painted = 0.75 * rest[ring(3)] + 0.25 * apply(skin_matrix(arm, "Child"), rest[ring(3)])
    assert f.details["max_difference"] == pytest.approx(np.linalg.norm(painted - rest[ring(3)], axis=1).max(),
                                                        abs=MATCH)
    # Control: a threshold that removes nothing.
    edit.remove_threshold = 0.1
    bpy.context.view_layer.update()
    assert "skinning-mismatch" not in rule_findings(run_audit(bpy, mesh))


@on_blender42
def test_skinning_mismatch_judge_on_extracted_data(bpy, rb):
    """The judge itself: real extracted data whose Blender positions are moved on purpose."""
    from skin_audit.blender.read.extract import extract
    from tests.factories.audits import audit_skinned_mesh

    mesh, arm = cylinder_rig(rb)
    pose(bpy, arm, "Child", (0.7, 0.3, 0.0))
    data = extract(mesh, mesh.modifiers[0], bpy.context.evaluated_depsgraph_get())
    assert np.abs(data.blender - own_evaluated(bpy, mesh)).max() == 0.0  # extract reads Blender's output
    options = AuditOptions()
    assert "skinning-mismatch" not in rule_findings(audit_skinned_mesh(data, options))
    tol = SKINNING_MATCH_RELATIVE * max(data.size(), 1.0)
    blender = data.blender.copy()
    blender[7, 0] += 10 * tol
    blender[33, 2] -= 50 * tol
    blender[50, 1] += 0.1 * tol  # within float32 noise: not a mismatch
    f = only(audit_skinned_mesh(replace(data, blender=blender), options), "skinning-mismatch")
    assert (f.severity, f.count, f.vertices) == ("ERROR", 2, (7, 33))
    assert f.details["max_difference"] == pytest.approx(50 * tol, rel=0.05)


def test_vertex_groups_off_is_recomputed(bpy, rb):
    mesh, arm = cylinder_rig(rb, use_vertex_groups=False)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    assert np.abs(own_evaluated(bpy, mesh) - own_rest(mesh)).max() < 1e-7  # Blender moves nothing
    assert "skinning-mismatch" not in rule_findings(run_audit(bpy, mesh))


@on_blender42
def test_engine_divergence(bpy, rb):
    # Vertex 2 (ring 0, radius 0.5 from the armature origin) keeps Root 0.9: an engine that does
    # not renormalise puts it at 0.9 p, Blender at p, 0.05 apart at any pose of the rigid root.
    weights = set_weights(clean_weights(rb), {2: {"Root": 0.9}, 3: {"Root": 1.0 - 5e-5}})
    mesh, _ = cylinder_rig(rb, weights=weights)
    f = only(run_audit(bpy, mesh, target="raw"), "engine-divergence")
    assert (f.severity, f.count, f.vertices) == ("WARNING", 1, (2,))
    assert f.details["target"] == "raw"
    assert f.details["max_divergence"] == pytest.approx(0.1 * RADIUS, abs=1e-6)
    control, _ = cylinder_rig(rb, name="Control")
    result = run_audit(bpy, control, target="raw")
    assert "engine-divergence" not in rule_findings(result)
    assert result.metrics["max_engine_divergence"] < 1e-6
    # threejs (the default): Blender's exporter renormalises vertex 2, so no engine draws it elsewhere.
    assert "engine-divergence" not in rule_findings(run_audit(bpy, mesh))


# ------------------------------------------------------------ Blender features the recomputation follows


@on_blender42
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("preserve_volume", [False, True])
def test_mask_group_is_followed(bpy, rb, invert, preserve_volume):
    weights = clean_weights(rb)
    masked = np.arange(0, V, 3)
    weights["mask"] = (masked, np.linspace(0.1, 1.0, masked.size))
    mesh, arm = cylinder_rig(rb, weights=weights, vertex_group="mask", invert_vertex_group=invert,
                             use_deform_preserve_volume=preserve_volume)
    pose(bpy, arm, "Child", (0.8, 0.3, 0.2))
    result = run_audit(bpy, mesh)
    found = rule_findings(result)
    assert "skinning-mismatch" not in found and "group-without-bone" not in found
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    assert result.metrics["vertices_compared"] == V
    # Blender's truth: a mask factor of 0 pins a vertex (outside the group, or weight 1 inverted).
    rest, moved = own_rest(mesh), own_evaluated(bpy, mesh)
    pinned = [masked[-1]] if invert else [i for i in range(V) if i % 3]
    assert np.abs(moved[pinned] - rest[pinned]).max() < 1e-7
    assert np.abs(moved - rest).max() > 0.1


@on_blender42
def test_preserve_volume_with_scaled_bones_is_recomputed(bpy, rb):
    mesh, arm = cylinder_rig(rb, use_deform_preserve_volume=True)
    pose(bpy, arm, "Child", (0.7, 0.3, 1.2), scale=(1.0, 2.0, 0.5))
    pose(bpy, arm, "Root", (0.1, 0.0, 0.2), scale=(1.3, 1.0, 1.0))
    result = run_audit(bpy, mesh)
    f = only(result, "preserve-volume-on")
    assert (f.severity, f.count) == ("INFO", 0)
    assert "skinning-mismatch" not in rule_findings(result)
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    # Not vacuous: the bone scale changes Blender's result a lot.
    scaled = own_evaluated(bpy, mesh)
    pose(bpy, arm, "Child", (0.7, 0.3, 1.2), scale=(1.0, 1.0, 1.0))
    assert np.abs(own_evaluated(bpy, mesh) - scaled).max() > 0.1
    control, _ = cylinder_rig(rb, name="Control")
    assert "preserve-volume-on" not in rule_findings(run_audit(bpy, control))


@on_blender42
@pytest.mark.parametrize("parented", [True, False])
def test_object_transforms_are_followed(bpy, rb, parented):
    mesh, arm = cylinder_rig(rb, parent_to_armature=parented)
    arm.location, arm.rotation_euler, arm.scale = (1.0, 2.0, 3.0), (0.3, 0.5, 0.7), (1.5, 1.5, 1.5)
    mesh.location, mesh.rotation_euler, mesh.scale = (0.2, -0.1, 0.4), (0.1, 0.2, -0.3), (1.0, 2.0, 0.5)
    pose(bpy, arm, "Child", (0.8, 0.3, 0.2), location=(0.1, 0.0, 0.05))
    result = run_audit(bpy, mesh)
    assert "skinning-mismatch" not in rule_findings(result)
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    # Blender's truth, by hand: object -> armature space, skin, and back.
    to_arm = np.linalg.inv(np.array(arm.matrix_world)) @ np.array(mesh.matrix_world)
    rest = apply(to_arm, own_rest(mesh))
    _, w = own_weights(mesh)
    skinned = (w[:, :1] * apply(skin_matrix(arm, "Root"), rest) + w[:, 1:2] * apply(skin_matrix(arm, "Child"), rest))
    expected = apply(np.linalg.inv(to_arm), skinned)
    assert np.abs(own_evaluated(bpy, mesh) - expected).max() <= MATCH * 3


@on_blender42
def test_bbones_are_reported_and_their_vertices_compared(bpy, rb):
    names, height, rings = ("A", "B", "C"), 3.0, 13
    verts, faces = rb.cylinder(rings, SEGMENTS, RADIUS, height)
    weights = rb.chain_weights(verts[:, 2], names, height)
    on_b = set(int(i) for i in weights["B"][0])

    def rig(name, segments):
        bones = rb.chain_bones(names, height)
        bones[1] = replace(bones[1], bbone_segments=segments)
        bones.append(rb.BoneSpec("Ctl", (1.0, 0.0, 0.0), (1.0, 0.0, 1.0), "A", use_deform=False, bbone_segments=3))
        mesh, arm = rb.build_rig(name, bones, verts, faces, weights)
        pose(bpy, arm, "B", (0.3, 0.0, 0.0))
        pose(bpy, arm, "C", (0.8, 0.0, 0.2))
        return mesh, arm

    plain, _ = rig("Plain", 1)
    curved, _ = rig("Curved", 4)
    # Blender's truth: segments bend B's vertices (and only those) away from plain-bone skinning.
    diff = np.linalg.norm(own_evaluated(bpy, curved) - own_evaluated(bpy, plain), axis=1)
    assert diff[sorted(on_b)].max() > 0.05
    assert np.delete(diff, sorted(on_b)).max() < 1e-7

    result = run_audit(bpy, curved)
    found = rule_findings(result)
    (bb,) = found["bbones-on-deform-bones"]
    assert (bb.severity, bb.bones, bb.count) == ("INFO", ("B",), 1)  # not Ctl: it does not deform
    # The segments are recomputed (core.maths.bbone): every vertex is compared, B's included.
    assert not any("B-Bone" in f.message for f in found.get("not-reproduced", ()))
    assert "skinning-mismatch" not in found
    assert result.metrics["vertices_compared"] == len(verts)
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    control = rule_findings(run_audit(bpy, plain))
    assert "bbones-on-deform-bones" not in control and "not-reproduced" not in control


@on_blender42
def test_displace_before_the_armature(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    displace = mesh.modifiers.new("Displace", "DISPLACE")
    displace.strength = 0.3
    mesh.modifiers.move(1, 0)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.3))
    result = run_audit(bpy, mesh)
    found = rule_findings(result)
    assert "skinning-mismatch" not in found
    assert result.metrics["max_numpy_vs_blender"] <= MATCH
    assert result.metrics["vertices_compared"] == V
    # The displaced mesh is the armature's input: at rest every vertex sits 0.3 x (1 - 0.5) off.
    (drift,) = found["bind-pose-drift"]
    assert (drift.count, drift.details["causes"]) == (V, ["modifier 'Displace'"])
    assert drift.details["max_drift"] == pytest.approx(0.15, abs=1e-6)


@on_blender42
def test_subdivision_before_the_armature_is_not_reproduced(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    mesh.modifiers.new("Subdivision", "SUBSURF")
    mesh.modifiers.move(1, 0)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    result = run_audit(bpy, mesh)
    found = rule_findings(result)
    (nr,) = found["not-reproduced"]
    assert nr.severity == "INFO" and "vertex count" in nr.message
    assert "skinning-mismatch" not in found
    assert result.metrics["max_numpy_vs_blender"] is None
    assert len(own_evaluated(bpy, mesh)) > V  # Blender's output really has more vertices


# ------------------------------------------------------------ the independent check


def _random_chain_rig(bpy, rb, seed: int, preserve_volume: bool):
    from mathutils import Quaternion

    rng = np.random.default_rng(seed)
    count = int(rng.integers(3, 6))
    heads, bones = [np.zeros(3)], []
    for j in range(count):
        d = rng.normal(size=3)
        d[2] = abs(d[2]) + 0.5
        tail = heads[-1] + d / np.linalg.norm(d) * rng.uniform(0.5, 1.0)
        bones.append(rb.BoneSpec(f"B{j}", tuple(heads[-1]), tuple(tail), f"B{j - 1}" if j else None,
                                 roll=float(rng.uniform(-3.0, 3.0)), use_connect=j > 0))
        heads.append(tail)
    lo, hi = np.min(heads, axis=0) - 0.5, np.max(heads, axis=0) + 0.5
    verts = rng.uniform(lo, hi, size=(300, 3))
    w = np.zeros((count, len(verts)))
    for v in range(len(verts)):
        k = int(rng.integers(3, min(4, count) + 1))
        w[rng.choice(count, k, replace=False), v] = rng.dirichlet(np.ones(k))
    weights = {f"B{j}": (np.flatnonzero(w[j]), w[j][w[j] > 0]) for j in range(count)}
    mesh, arm = rb.build_rig(f"Random{seed}", bones, verts, (), weights,
                             use_deform_preserve_volume=preserve_volume)
    for pb in arm.pose.bones:
        pb.rotation_quaternion = Quaternion(rng.normal(size=3), float(rng.uniform(-1.0, 1.0)))
        pb.location = rng.uniform(-0.2, 0.2, 3)
        if not preserve_volume:
            pb.scale = rng.uniform(0.8, 1.2, 3)
    bpy.context.view_layer.update()
    return mesh, arm


@on_blender42
@pytest.mark.parametrize("preserve_volume", [False, True], ids=["lbs", "dqs"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recomputation_matches_blender_on_a_random_chain(bpy, rb, seed, preserve_volume):
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.armature_modifier import recompute_blender

    mesh, arm = _random_chain_rig(bpy, rb, seed, preserve_volume)
    data = extract(mesh, mesh.modifiers[0], bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    rec = recompute_blender(data, data.read_pose)
    blender = own_evaluated(bpy, mesh)
    rest = own_rest(mesh)
    assert np.linalg.norm(blender - rest, axis=1).max() > 0.5  # a real pose
    tol = FLOAT32_RELATIVE * max(data.size(), 1.0)
    compared = ~rec.order_sensitive
    assert compared.sum() >= 0.9 * len(rest)
    assert np.linalg.norm(rec.positions - blender, axis=1)[compared].max() <= tol
    if not preserve_volume:
        # And this file's own LBS from the pose matrices (mesh and armature at the origin).
        names, w = own_weights(mesh)
        own = sum(w[:, [g]] * apply(skin_matrix(arm, n), rest) for g, n in enumerate(names))
        assert np.abs(own - blender).max() <= tol


# ------------------------------------------------------------ reading weights


@on_blender42
def test_geometry_nodes_weight_reader_matches_a_plain_loop(bpy, rb):
    """Above 5000 vertices weights are read through a Geometry Nodes copy; groups named like
    built-in attributes must not be confused with them, and nothing is left behind."""
    from skin_audit.blender.read.weights import LOOP_LIMIT, group_weights

    verts, faces = rb.cylinder(80, 70, RADIUS, HEIGHT)
    assert len(verts) > LOOP_LIMIT
    weights = rb.chain_weights(verts[:, 2], BONES, HEIGHT)
    weights["position"] = (np.arange(0, len(verts), 7), 0.25)
    weights["sharp_face"] = (np.arange(3, len(verts), 11), 0.75)
    mesh, _ = rb.build_rig("Big", rb.chain_bones(BONES, HEIGHT), verts, faces, weights)
    counts = {k: len(getattr(bpy.data, k)) for k in ("objects", "meshes", "node_groups", "scenes")}
    names, own = own_weights(mesh)
    read = group_weights(mesh)
    assert read.shape == (len(names), len(verts))
    assert np.array_equal(read.T, own.astype(np.float32))
    assert {k: len(getattr(bpy.data, k)) for k in counts} == counts


# ------------------------------------------------------------ cases that were bugs once


def test_nla_animation_is_not_bind_pose_drift(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    pose(bpy, arm, "Child", (1.0, 0.0, 0.0))
    arm.pose.bones["Child"].keyframe_insert("rotation_euler", frame=1)
    action = arm.animation_data.action
    arm.animation_data.nla_tracks.new().strips.new("Pushed down", 1, action)
    arm.animation_data.action = None
    bpy.context.view_layer.update()
    assert "bind-pose-drift" not in rule_findings(run_audit(bpy, mesh))


def test_pinned_shape_key_is_the_armatures_input(bpy, rb):
    mesh, arm = cylinder_rig(rb)
    mesh.shape_key_add(name="Basis")
    key = mesh.shape_key_add(name="Pinned")
    for i in range(V):
        key.data[i].co.x += 0.1
    key.value = 0.0
    mesh.active_shape_key_index, mesh.show_only_shape_key = 1, True
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    found = rule_findings(run_audit(bpy, mesh))
    assert "skinning-mismatch" not in found
    assert found["bind-pose-drift"][0].details["causes"] == [
        "shape key 'Pinned' (pinned by Shape Key Lock: shown alone at full strength whatever its value)"]


@pytest.mark.parametrize("how", ["hide_viewport", "excluded collection"])
def test_rig_hidden_from_the_view_layer(bpy, rb, how):
    mesh, arm = cylinder_rig(rb)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    if how == "hide_viewport":
        mesh.hide_viewport = arm.hide_viewport = True
    else:
        rb.exclude_from_view_layer((mesh, arm))
    bpy.context.view_layer.update()
    result = run_audit(bpy, mesh)
    assert "skinning-mismatch" not in rule_findings(result)
    # Compared for real: every vertex, against a mesh the pose really moved.
    assert result.metrics["vertices_compared"] == V and result.metrics["max_numpy_vs_blender"] <= MATCH
    assert result.metrics["max_engine_divergence"] is not None
    assert float(np.abs(result.measures["numpy_vs_blender"]).max()) <= MATCH


def test_armature_in_edit_mode_gives_no_false_errors(bpy, rb):
    from skin_audit.core.errors import InputError

    mesh, arm = cylinder_rig(rb)
    pose(bpy, arm, "Child", (0.8, 0.0, 0.0))
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        found = rule_findings(run_audit(bpy, mesh))
    except InputError as exc:
        assert arm.name in str(exc)
        return
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    assert "skinning-mismatch" not in found and "bind-pose-drift" not in found


def test_mesh_split_between_two_armatures(bpy, rb):
    top = ring(RINGS - 1)
    weights = set_weights(clean_weights(rb), {v: {"Face": 1.0} for v in top})
    mesh, _ = cylinder_rig(rb, weights=weights)
    face = rb.build_armature("FaceRig", [rb.BoneSpec("Face", (0.0, 0.0, 1.8), (0.0, 0.0, 2.2))])
    mesh.modifiers.new("Face", "ARMATURE").object = face
    bpy.context.view_layer.update()
    from skin_audit.blender.run.audit_scene import audit_meshes

    results = audit_meshes(bpy.context, [mesh], AuditOptions())
    # One entry per Armature modifier: neither may be dropped (zero results would pass the loop below).
    assert len(results) == 2 and sorted(r.armature for r in results) == ["FaceRig", "Rig_Armature"]
    for result in results:
        found = rule_findings(result)
        assert "unweighted-vertices" not in found and "group-without-bone" not in found, result.armature
        assert result.metrics["vertices_compared"] == V and result.metrics["max_numpy_vs_blender"] <= MATCH


# ------------------------------------------------------------ the rig builder itself


@on_blender42
def test_rig_builder_builds_what_it_is_given_and_restores_the_mode(bpy, rb):
    from skin_audit.core.errors import InputError

    other, other_arm = cylinder_rig(rb, name="Other")
    bpy.context.view_layer.objects.active = other_arm
    bpy.ops.object.mode_set(mode="POSE")
    bones = [rb.BoneSpec("Hip", (0.0, 0.0, 0.0), (0.0, 0.2, 1.0), roll=0.3),
             rb.BoneSpec("Knee", (0.0, 0.2, 1.0), (0.0, 0.0, 2.0), "Hip", use_connect=True, bbone_segments=3),
             rb.BoneSpec("Ctl", (1.0, 0.0, 0.0), (1.0, 0.0, 1.0), "Hip", use_deform=False)]
    verts = [(0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 0.0, 2.0)]
    mesh, arm = rb.build_rig("Leg", bones, verts, [], {"Hip": ([0, 1], [1.0, 0.5]), "Knee": ([1, 2], 0.5)},
                             use_deform_preserve_volume=True, vertex_group="Hip")
    assert bpy.context.view_layer.objects.active == other_arm and other_arm.mode == "POSE"
    assert arm.mode == "OBJECT" and mesh.parent == arm and mesh.modifiers[0].object == arm
    assert mesh.modifiers[0].use_deform_preserve_volume and mesh.modifiers[0].vertex_group == "Hip"
    read = {b.name: b for b in arm.data.bones}
    assert list(read) == ["Hip", "Knee", "Ctl"]
    assert read["Knee"].parent == read["Hip"] and read["Knee"].use_connect and read["Knee"].bbone_segments == 3
    assert not read["Ctl"].use_deform and read["Hip"].use_deform
    for spec in bones:
        assert np.allclose(read[spec.name].head_local, spec.head, atol=1e-6)
        assert np.allclose(read[spec.name].tail_local, spec.tail, atol=1e-6)
    names, w = own_weights(mesh)
    assert names == ("Hip", "Knee")
    assert np.allclose(w, [[1.0, 0.0], [0.5, 0.5], [0.0, 0.5]])
    count = len(bpy.data.objects)
    with pytest.raises(InputError, match="no setting 'not_a_setting'"):
        rb.build_rig("Bad", bones, verts, [], {}, not_a_setting=True)
    assert len(bpy.data.objects) == count  # refused before anything was made
    with pytest.raises(InputError, match="listed twice"):
        rb.add_weights(mesh, {"Hip": ([0, 0], [0.1, 0.2])})
    with pytest.raises(InputError, match="listed before"):
        rb.build_armature("Orphan", [rb.BoneSpec("A", (0, 0, 0), (0, 0, 1), "B")])
