# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape checks (pose sweep, symmetry, stray weights) on rigs built in code.

Every rig carries one known defect, or none; the expected findings come from
closed forms (``sigma = sqrt(1 - 4 w (1 - w) sin^2(theta / 2))`` for a bone
turned by theta against a still neighbour, whatever the axis), from Blender's
own evaluation (a posed copy of the armature, read straight from the
depsgraph) and from Blender's own Symmetrize operator.  skin_audit's blender/
modules are imported inside the tests so the core tier still collects without bpy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from skin_audit.core.tolerances import FLOAT32_RELATIVE

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]

#: Values computed from float32 input (weights, coordinates) against float64 closed forms.
FLOAT32_VALUE = 1e-6


# ---------------------------------------------------------------- own helpers


def closed_form(w: np.ndarray, degrees: float) -> np.ndarray:
    """Smallest singular value of ``(1 - w) I + w R`` for R a rotation by ``degrees`` about any axis."""
    return np.sqrt(np.maximum(1.0 - 4.0 * w * (1.0 - w) * math.sin(math.radians(degrees) / 2.0) ** 2, 0.0))


def own_positions(mesh) -> np.ndarray:
    """(V, 3) float64 vertex coordinates read with foreach_get (not the project's reader)."""
    flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", flat)
    return flat.reshape(-1, 3).astype(np.float64)


def own_weights(obj, group: str) -> np.ndarray:
    """(V,) float64 weight of ``group`` per vertex, 0 where the vertex is not in it."""
    index = obj.vertex_groups[group].index
    out = np.zeros(len(obj.data.vertices))
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == index:
                out[v.index] = g.weight
    return out


def evaluated_positions(bpy, obj) -> np.ndarray:
    """(V, 3) object-space positions after the modifier stack, from the view layer's depsgraph."""
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return own_positions(obj.evaluated_get(depsgraph).data)


def audit(bpy, obj, **options):
    from skin_audit.blender.run.audit_scene import audit_meshes

    results = audit_meshes(bpy.context, [obj], AuditOptions(**options))
    assert len(results) == 1
    return results[0]


def findings(result, code: str, severity: str | None = None):
    return [f for f in result.findings if f.code == code and (severity is None or f.severity == severity)]


def extracted(bpy, obj):
    from skin_audit.blender.read.extract import extract

    return extract(obj, obj.modifiers["Armature"], bpy.context.evaluated_depsgraph_get())


def ring_cylinder(xs: np.ndarray, radius: float, segments: int = 8, turn: float = 0.0):
    """Open cylinder along +X with one ring per ``xs`` value; ring-major vertices, quads."""
    angle = 2.0 * np.pi * (np.arange(segments) + turn) / segments
    verts = np.array([(x, radius * math.cos(a), radius * math.sin(a)) for x in xs for a in angle])
    faces = [(i * segments + j, i * segments + (j + 1) % segments, (i + 1) * segments + (j + 1) % segments,
              (i + 1) * segments + j) for i in range(len(xs) - 1) for j in range(segments)]
    return verts, faces


def set_rotation(pose_bone, axis: str, degrees: float) -> None:
    """Turn a pose bone about its own local ``axis`` (quaternion written out here)."""
    half = math.radians(degrees) / 2.0
    q = [math.cos(half), 0.0, 0.0, 0.0]
    q[1 + "xyz".index(axis)] = math.sin(half)
    pose_bone.rotation_mode = "QUATERNION"
    pose_bone.rotation_quaternion = q


# ---------------------------------------------------------------- the demo cylinder

MID_RING = np.arange(96, 120)  # ring 4 of 9, z = 1, w = 1/2


@pytest.mark.blender42
def test_demo_cylinder_reports_its_mid_ring_at_180_degrees(bpy):
    from skin_audit.blender.build.twist_rig import build_demo_rig
    from skin_audit.core.audit.pose_sweep import run_sweep

    rig = build_demo_rig()
    z = own_positions(rig.mesh.data)[:, 2]
    assert np.allclose(z[MID_RING], 1.0)
    w = z / 2.0  # docs/twist-experiment.md: w_child = z / 2
    result = audit(bpy, rig.mesh)

    collapse = findings(result, "twist-collapse")
    assert [f.severity for f in collapse] == ["INFO"]  # 90 degrees keeps 0.707 > 0.5: only 180 collapses
    f = collapse[0]
    assert set(MID_RING) <= set(f.vertices)
    assert f.details["bone"] == "Child" and abs(f.details["degrees"]) == 180.0
    assert f.details["worst"] == pytest.approx(abs(math.cos(math.radians(90.0))), abs=FLOAT32_VALUE)
    assert f.details["worst_vertex"] in MID_RING
    assert f.details["dqs_worst"] == pytest.approx(1.0, abs=FLOAT32_VALUE)
    # Exactly the vertices whose closed form at 180 degrees is below 0.5 (rings at w = 3/8 .. 5/8);
    # the rings at w = 1/4 and 3/4 sit on the threshold (0.5 exactly) and may go either way.
    at_180 = closed_form(w, 180.0)
    clear = np.abs(at_180 - 0.5) > 1e-6
    assert set(np.flatnonzero((at_180 < 0.5) & clear)) == set(f.vertices) - set(np.flatnonzero(~clear))
    assert result.metrics["collapse_by_bone"]["Child"] == pytest.approx(0.0, abs=FLOAT32_VALUE)
    # The root turns the whole rig rigidly: nothing squashes.
    assert result.metrics["collapse_by_bone"]["Root"] == pytest.approx(1.0, abs=FLOAT32_VALUE)
    assert result.metrics["min_singular_value"] == pytest.approx(0.0, abs=FLOAT32_VALUE)

    volume = findings(result, "volume-loss")
    assert volume and all(f.severity == "INFO" for f in volume)
    assert set(MID_RING) <= set(volume[0].vertices)

    # The sweep per vertex: every pose of either bone, worst over all = the twist (or a bend) at 180.
    sweep = run_sweep(extracted(bpy, rig.mesh), (90.0, 180.0))
    assert np.abs(sweep.smallest - closed_form(w, 180.0)).max() <= FLOAT32_VALUE
    assert np.abs(sweep.det - closed_form(w, 180.0) ** 2).max() <= FLOAT32_VALUE
    assert np.abs(sweep.moderate_smallest - closed_form(w, 90.0)).max() <= FLOAT32_VALUE
    assert np.abs(sweep.dqs_smallest - 1.0).max() <= FLOAT32_VALUE
    mid_poses = {sweep.poses[k] for k in sweep.worst_pose[MID_RING]}
    assert {(p.bone, abs(p.degrees)) for p in mid_poses} == {(1, 180.0)}
    # Rigid end rings: no pose changes their shape, and the sweep says so.
    assert np.all(sweep.worst_pose[w == 0.0] == -1) and np.all(sweep.worst_pose[w == 1.0] == -1)


# ---------------------------------------------------------------- the candy-wrapper forearm

ARM_XS = np.round(np.arange(0.0, 2.0001, 0.1), 6)
ARM_RADIUS = 0.2


def forearm_rig(bpy, name: str = "Arm", **modifier):
    """Upper arm and forearm along +X; the forearm weight ramps 0 -> 1/2 over x in [0.3, 0.7],
    holds a wide 50/50 plateau to x = 1.3, then ramps to 1 at x = 1.7."""
    from tests.factories.blender_rigs import BoneSpec, build_rig

    verts, faces = ring_cylinder(ARM_XS, ARM_RADIUS)
    w = np.interp(verts[:, 0], [0.3, 0.7, 1.3, 1.7], [0.0, 0.5, 0.5, 1.0])
    idx = np.arange(len(verts))
    bones = [BoneSpec("UpperArm", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
             BoneSpec("ForeArm", (1.0, 0.0, 0.0), (2.0, 0.0, 0.0), "UpperArm", use_connect=True)]
    obj, arm = build_rig(name, bones, verts, faces,
                         {"UpperArm": (idx[w < 1.0], 1.0 - w[w < 1.0]), "ForeArm": (idx[w > 0.0], w[w > 0.0])},
                         **modifier)
    return obj, arm, own_weights(obj, "ForeArm")


def test_candy_wrapper_forearm_warns_at_a_90_degree_twist(bpy):
    obj, arm, w = forearm_rig(bpy)
    # By hand: at 90 degrees the plateau keeps cos 45 = 0.707, above the default 0.5: only INFO (180).
    default = audit(bpy, obj)
    assert [f.severity for f in findings(default, "twist-collapse")] == ["INFO"]
    # With a threshold of 0.8, every vertex whose 90-degree value is below 0.8 is a WARNING, and the
    # ones that only fall below 0.8 at 180 degrees an INFO.
    strict = audit(bpy, obj, collapse_threshold=0.8)
    at_90, at_180 = closed_form(w, 90.0), closed_form(w, 180.0)
    assert np.abs(at_90 - 0.8).min() > 1e-3 and np.abs(at_180 - 0.8).min() > 1e-3  # nothing on the edge
    warn = findings(strict, "twist-collapse", "WARNING")
    info = findings(strict, "twist-collapse", "INFO")
    assert len(warn) == 1 and len(info) == 1
    assert set(warn[0].vertices) == set(np.flatnonzero(at_90 < 0.8))
    assert set(info[0].vertices) == set(np.flatnonzero((at_180 < 0.8) & (at_90 >= 0.8)))
    assert warn[0].bones == ("ForeArm",) and warn[0].details["bone"] == "ForeArm"
    # DQS (Preserve Volume) keeps every ring: the measure says 1 ...
    assert warn[0].details["dqs_worst"] == pytest.approx(1.0, abs=FLOAT32_VALUE)
    assert strict.metrics["collapse_by_bone"] == pytest.approx({"UpperArm": 1.0, "ForeArm": 0.0}, abs=FLOAT32_VALUE)

    # ... and Blender agrees: at a 90-degree twist the LBS plateau ring shrinks to cos 45,
    # with Preserve Volume every ring keeps its radius.
    set_rotation(arm.pose.bones["ForeArm"], "y", 90.0)
    radius = np.hypot(*evaluated_positions(bpy, obj)[:, 1:].T)
    tol = FLOAT32_RELATIVE * 2.0
    assert np.abs(radius - ARM_RADIUS * at_90).max() <= tol
    obj.modifiers["Armature"].use_deform_preserve_volume = True
    radius = np.hypot(*evaluated_positions(bpy, obj)[:, 1:].T)
    assert np.abs(radius - ARM_RADIUS).max() <= tol


def test_candy_wrapper_warning_names_the_90_degree_pose(bpy):
    obj, _, _ = forearm_rig(bpy)
    warn = findings(audit(bpy, obj, collapse_threshold=0.8), "twist-collapse", "WARNING")[0]
    assert abs(warn.details["degrees"]) == 90.0
    assert warn.details["worst"] == pytest.approx(math.cos(math.radians(45.0)), abs=FLOAT32_VALUE)


@pytest.mark.blender42
def test_rotation_limits_are_swept_and_judged_as_reachable(bpy):
    """A Limit Rotation constraint (local space, X +-120 deg) and IK limits on Z: swept with source 'limit';
    a limit pose counts as one the rig should survive (WARNING), beyond the limits only INFO."""
    from skin_audit.core.audit.pose_sweep import sweep_poses

    obj, arm, w = forearm_rig(bpy)
    # Without limits: 90 deg keeps 0.707 > 0.6, so a 0.6 threshold gives only INFO (180 deg).
    assert [f.severity for f in findings(audit(bpy, obj, collapse_threshold=0.6), "twist-collapse")] == ["INFO"]

    pb = arm.pose.bones["ForeArm"]
    con = pb.constraints.new("LIMIT_ROTATION")
    con.owner_space = "LOCAL"
    con.use_limit_x = True
    con.min_x, con.max_x = math.radians(-120.0), math.radians(120.0)
    pb.use_ik_limit_z = True
    pb.ik_min_z, pb.ik_max_z = math.radians(-60.0), math.radians(45.0)
    bpy.context.view_layer.update()

    mesh = extracted(bpy, obj)
    limits = [(p.axis, round(p.degrees, 3)) for p in sweep_poses(mesh, (90.0, 180.0))
              if p.source == "limit" and mesh.bones.names[p.bone] == "ForeArm"]
    assert sorted(limits) == [("x", -120.0), ("x", 120.0), ("z", -60.0), ("z", 45.0)]
    assert not any(p.source == "limit" for p in sweep_poses(mesh, (90.0,)) if mesh.bones.names[p.bone] == "UpperArm")

    # At its X limit the forearm bends 120 deg: cos 60 = 0.5 < 0.6 on the plateau, now a WARNING.
    result = audit(bpy, obj, collapse_threshold=0.6)
    at_120 = closed_form(w, 120.0)
    assert np.abs(at_120 - 0.6).min() > 1e-3
    warn = findings(result, "twist-collapse", "WARNING")
    assert len(warn) == 1 and set(warn[0].vertices) == set(np.flatnonzero(at_120 < 0.6))
    # The user's constraint is as it was (the spot check mutes it on a copy only).
    assert not con.mute and con.min_x == pytest.approx(math.radians(-120.0))


# ---------------------------------------------------------------- spot checks against Blender


def general_rig(bpy):
    """Three bones in a bent chain with rolls, under a moved, turned and scaled armature object;
    points scattered along the chain, each blending two or three bones."""
    from tests.factories.blender_rigs import BoneSpec, build_rig

    bones = [BoneSpec("Hip", (0.0, 0.0, 0.0), (0.2, 0.1, 1.0), roll=0.3),
             BoneSpec("Thigh", (0.2, 0.1, 1.0), (0.9, -0.2, 1.6), "Hip", roll=-1.2, use_connect=True),
             BoneSpec("Shin", (0.9, -0.2, 1.6), (1.1, 0.4, 2.5), "Thigh", roll=2.0, use_connect=True)]
    rng = np.random.default_rng(3)
    heads = np.array([b.head for b in bones])
    tails = np.array([b.tail for b in bones])
    t = rng.uniform(0.0, 1.0, 300)
    k = rng.integers(0, 3, 300)
    verts = heads[k] + t[:, None] * (tails[k] - heads[k]) + rng.normal(scale=0.15, size=(300, 3))
    weights = rng.dirichlet(np.ones(3), 300)
    weights[weights < 0.15] = 0.0
    weights /= weights.sum(axis=1, keepdims=True)
    idx = np.arange(300)
    spec = {b.name: (idx[weights[:, j] > 0], weights[weights[:, j] > 0, j]) for j, b in enumerate(bones)}
    obj, arm = build_rig("General", bones, verts, (), spec)
    arm.location = (0.5, -1.0, 0.25)
    arm.rotation_euler = (0.3, -0.2, 1.1)
    arm.scale = (1.5, 1.5, 1.5)
    bpy.context.view_layer.update()
    return obj, arm


@pytest.mark.blender42
def test_sweep_matches_blender_on_a_posed_copy(bpy):
    """The audit's own spot checks pass, and an independent one: a copy of the armature posed here,
    the mesh copy's evaluated vertices against recompute_blender at the sweep pose."""
    from skin_audit.core.audit.pose_sweep import sweep_poses

    obj, arm = general_rig(bpy)
    result = audit(bpy, obj)
    size = result.metrics["size"]
    assert result.metrics["sweep_spot_checks"] >= 1
    assert result.metrics["sweep_spot_check_max_difference"] <= FLOAT32_RELATIVE * max(size, 1.0)
    assert not findings(result, "sweep-mismatch")

    mesh = extracted(bpy, obj)
    poses = sweep_poses(mesh, (90.0, 180.0))
    # Every bone, every axis, at 180 and -90: the root's poses move the whole chain through the hierarchy.
    chosen = [p for p in poses if p.degrees in (180.0, -90.0)]
    assert len({p.bone for p in chosen}) == 3 and len(chosen) == 18
    assert posed_copy_difference(bpy, obj, arm, mesh, chosen) <= FLOAT32_RELATIVE * max(size, 1.0)


@pytest.mark.blender42
def test_spot_checks_pose_a_rig_the_user_shows_at_rest_position(bpy):
    """Rest Position is a display switch: the sweep's test poses are still poses, so the spot
    checks' armature copy is posed (its own data switched back to Pose Position), agrees with the
    sweep, and the user's armature stays at Rest Position."""
    obj, arm = general_rig(bpy)
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    result = audit(bpy, obj)
    size = result.metrics["size"]
    assert result.metrics["sweep_spot_checks"] >= 1
    assert result.metrics["sweep_spot_check_max_difference"] <= FLOAT32_RELATIVE * max(size, 1.0)
    assert not findings(result, "sweep-mismatch")
    assert not findings(result, "bind-pose-drift")
    assert arm.data.pose_position == "REST"


def posed_copy_difference(bpy, obj, arm, mesh, poses) -> float:
    """Largest distance between Blender's deformation of a posed copy of ``arm`` (driving a copy of
    ``obj``) and recompute_blender at each sweep pose, in the mesh's object space."""
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from skin_audit.core.audit.pose_sweep import pose_channel

    arm_copy = arm.copy()
    mesh_copy = obj.copy()
    bpy.context.scene.collection.objects.link(arm_copy)
    bpy.context.scene.collection.objects.link(mesh_copy)
    mesh_copy.modifiers["Armature"].object = arm_copy
    size = float(np.ptp(own_positions(obj.data), axis=0).max())
    worst = 0.0
    for pose in poses:
        for pb in arm_copy.pose.bones:
            set_rotation(pb, "x", 0.0)
        set_rotation(arm_copy.pose.bones[mesh.bones.names[pose.bone]], pose.axis, pose.degrees)
        blender = evaluated_positions(bpy, mesh_copy)
        assert np.linalg.norm(blender - own_positions(obj.data), axis=1).max() > 0.1 * size  # the pose moves it
        numpy_positions = recompute_blender(mesh, mesh.read_pose.at(pose_channel(mesh, pose))).positions
        worst = max(worst, float(np.linalg.norm(blender - numpy_positions, axis=1).max()))
    return worst


def test_sweep_follows_a_bone_that_does_not_inherit_rotation(bpy):
    """Chain A -> B with B's Inherit Rotation off: bending A by 180 leaves B's orientation at rest, so the
    vertices blending A and B collapse (|1 - 2w|) and the sweep must say so and match Blender."""
    from skin_audit.core.audit.pose_sweep import sweep_poses
    from tests.factories.blender_rigs import chain_rig

    obj, arm = chain_rig("NoInherit", ("A", "B"), rings=9, segments=8)
    arm.data.bones["B"].use_inherit_rotation = False
    bpy.context.view_layer.update()
    mesh = extracted(bpy, obj)
    parent_poses = [p for p in sweep_poses(mesh, (90.0, 180.0)) if mesh.bones.names[p.bone] == "A"]
    assert posed_copy_difference(bpy, obj, arm, mesh, parent_poses) <= FLOAT32_RELATIVE * 2.0
    assert audit(bpy, obj).metrics["collapse_by_bone"]["A"] == pytest.approx(0.0, abs=FLOAT32_VALUE)


# ---------------------------------------------------------------- symmetry

LEFT_BONES = ("Arm.L", "Hand.L")


def mirrored_rig(bpy, roll_error: float = 0.0, extra_bone: str | None = None, turn_right: float = 0.0):
    """A spine and a left arm built by hand, the right arm made by Blender's own Symmetrize;
    the mesh is two arm cylinders mirrored across x = 0 with mirrored weights.

    ``roll_error`` is added to Arm.R's roll afterwards (the rolled-bone defect); ``turn_right``
    turns the right cylinder's rings by that fraction of a segment (an asymmetric mesh).
    """
    from tests.factories.blender_rigs import BoneSpec, add_weights, build_armature

    bones = [BoneSpec("Spine", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
             BoneSpec("Arm.L", (0.2, 0.0, 1.0), (1.0, 0.0, 1.0), "Spine", roll=0.7),
             BoneSpec("Hand.L", (1.0, 0.0, 1.0), (1.4, 0.0, 1.0), "Arm.L", roll=-1.1, use_connect=True)]
    if extra_bone:
        bones.append(BoneSpec(extra_bone, (0.0, 0.1, 1.2), (0.0, 0.3, 1.3), "Spine"))
    arm = build_armature("Mirror_Armature", bones)
    view_layer = bpy.context.view_layer
    view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for eb in arm.data.edit_bones:
        eb.select = eb.select_head = eb.select_tail = eb.name in LEFT_BONES
    assert bpy.ops.armature.symmetrize() == {"FINISHED"}
    arm.data.edit_bones["Arm.R"].roll += roll_error
    bpy.ops.object.mode_set(mode="OBJECT")

    xs = np.round(np.arange(0.2, 1.40001, 0.1), 6)
    left, faces = ring_cylinder(xs, 0.1)
    left[:, 2] += 1.0
    right, _ = ring_cylinder(xs, 0.1, turn=turn_right)
    right[:, 2] += 1.0
    right[:, 0] *= -1.0
    n = len(left)
    verts = np.vstack([left, right])
    faces = faces + [tuple(n + i for i in reversed(f)) for f in faces]
    me = bpy.data.meshes.new("Arms")
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    obj = bpy.data.objects.new("Arms", me)
    bpy.context.scene.collection.objects.link(obj)
    x = left[:, 0]
    spine = np.interp(x, [0.2, 0.5], [1.0, 0.0])
    hand = np.interp(x, [0.9, 1.2], [0.0, 1.0])
    arm_w = 1.0 - spine - hand
    idx = np.arange(n)
    spec = {}
    for group, values in (("Spine", spine), ("Arm", arm_w), ("Hand", hand)):
        keep = values > 0
        if group == "Spine":
            spec[group] = (np.concatenate([idx[keep], n + idx[keep]]), np.concatenate([values[keep]] * 2))
        else:
            spec[group + ".L"] = (idx[keep], values[keep])
            spec[group + ".R"] = (n + idx[keep], values[keep])
    add_weights(obj, spec)
    obj.parent = arm
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    view_layer.update()
    return obj, arm, n


@pytest.mark.blender42
def test_properly_mirrored_rig_has_no_symmetry_findings(bpy):
    obj, arm, _ = mirrored_rig(bpy)
    # Blender's Symmetrize made the right side: its rest matrices are S B S of the left ones.
    mirror = np.diag([-1.0, 1.0, 1.0, 1.0])
    for name in LEFT_BONES:
        left = np.array(arm.data.bones[name].matrix_local)
        right = np.array(arm.data.bones[name[:-1] + "R"].matrix_local)
        assert np.abs(mirror @ left @ mirror - right).max() <= 1e-6
    result = audit(bpy, obj)
    for code in ("mirror-axis-mismatch", "unpaired-side-bone", "weight-asymmetry", "mesh-not-symmetric"):
        assert not findings(result, code), code
    assert result.metrics["mirror_matched_fraction"] == pytest.approx(1.0)
    assert result.metrics["max_weight_asymmetry"] <= FLOAT32_VALUE


@pytest.mark.blender42
@pytest.mark.parametrize("error_degrees", [180.0, 30.0])
def test_rolled_bone_is_a_mirror_axis_mismatch(bpy, error_degrees):
    """Arm.R rolled away from the mirror of Arm.L (roll -roll_L + pi for 180): named, with the angle.
    The arms lie along the mirror axis (X), where half a turn about the bone gives the other
    mirror image: told as INFO (not a mismatch by construction), 30 degrees as WARNING."""
    obj, _, _ = mirrored_rig(bpy, roll_error=math.radians(error_degrees))
    f = findings(audit(bpy, obj), "mirror-axis-mismatch")
    assert len(f) == 1 and f[0].severity == ("INFO" if error_degrees == 180.0 else "WARNING")
    assert set(f[0].bones) == {"Arm.L", "Arm.R"}
    assert f[0].details["worst_angle_degrees"] == pytest.approx(error_degrees, abs=0.01)
    assert f[0].details["worst_head_distance"] <= FLOAT32_VALUE


def test_unpaired_side_bone(bpy):
    obj, _, _ = mirrored_rig(bpy, extra_bone="Ear.L")
    result = audit(bpy, obj)
    f = findings(result, "unpaired-side-bone")
    assert len(f) == 1 and f[0].bones == ("Ear.L",)
    assert not findings(result, "mirror-axis-mismatch")


def test_one_changed_weight_is_a_weight_asymmetry(bpy):
    from tests.factories.blender_rigs import add_weights

    obj, _, n = mirrored_rig(bpy)
    verts = own_positions(obj.data)
    k = 5 * 8 + 3  # ring x = 0.7 of the left arm, fully on Arm.L
    assert own_weights(obj, "Arm.L")[k] == pytest.approx(1.0)
    partner = int(np.argmin(np.linalg.norm(verts - verts[k] * np.array([-1.0, 1.0, 1.0]), axis=1)))
    assert partner == n + k
    # Arm.L 1 -> 0.6 (still normalised: Spine 0.25, Hand.L 0.15): the biggest change is Arm.L's.
    add_weights(obj, {"Arm.L": ([k], 0.6), "Spine": ([k], 0.25), "Hand.L": ([k], 0.15)})
    f = findings(audit(bpy, obj), "weight-asymmetry")
    assert len(f) == 1 and f[0].severity == "WARNING"
    assert set(f[0].vertices) == {k, partner}
    assert f[0].details["worst_vertex"] in (k, partner)
    assert f[0].details["worst_difference"] == pytest.approx(0.4, abs=FLOAT32_VALUE)
    assert set(f[0].groups) == {"Arm.L", "Arm.R"}  # Arm.L at the vertex, Arm.R at its mirror
    assert "Arm.L" in f[0].message or "Arm.R" in f[0].message


def test_asymmetric_mesh_is_reported_not_flooded(bpy):
    """The right arm's rings turned by half a segment: no vertex has a mirror partner."""
    from tests.factories.blender_rigs import add_weights

    obj, _, _ = mirrored_rig(bpy, turn_right=0.5)
    add_weights(obj, {"Arm.L": ([43], 0.6), "Spine": ([43], 0.4)})
    result = audit(bpy, obj)
    f = findings(result, "mesh-not-symmetric")
    assert len(f) == 1 and f[0].severity == "INFO"
    assert not findings(result, "weight-asymmetry")
    assert result.metrics["mirror_matched_fraction"] < 0.9


# ---------------------------------------------------------------- stray weights

CHAIN = ("A", "B", "C", "D")  # four bones stacked on +Z, z from 0 to 8
SEGMENTS = 8


def chain(bpy, extra_vertices=(), extra_faces=(), extra_weights=None):
    """A cylinder (17 rings, z = 0 .. 8) on a four-bone chain with clean chain weights."""
    from tests.factories.blender_rigs import add_weights, build_rig, chain_bones, chain_weights, cylinder

    verts, faces = cylinder(rings=17, segments=SEGMENTS, radius=0.5, height=8.0)
    weights = chain_weights(verts[:, 2], CHAIN, 8.0)
    n = len(verts)
    if len(extra_vertices):
        verts = np.vstack([verts, extra_vertices])
        faces = faces + [tuple(n + i for i in f) for f in extra_faces]
    obj, arm = build_rig("Chain", chain_bones(CHAIN, 8.0), verts, faces, weights)
    if extra_weights:
        add_weights(obj, extra_weights)
        bpy.context.view_layer.update()
    return obj, arm, n


def stray_groups(bpy, obj):
    from skin_audit.core.audit.armature_modifier import to_armature
    from skin_audit.core.audit.stray_weights import find_stray_weights

    mesh = extracted(bpy, obj)
    found = find_stray_weights(to_armature(mesh), mesh.weights, mesh.deform_groups(), mesh.bones.heads,
                               mesh.bones.tails, mesh.edges, mesh.size())
    return {mesh.group_names[s.group]: s for s in found}


def test_clean_chain_has_no_stray_weights(bpy):
    obj, _, _ = chain(bpy)
    assert not findings(audit(bpy, obj), "stray-weights")


def test_far_vertex_and_island_are_stray_weights(bpy):
    from tests.factories.blender_rigs import add_weights

    # Vertex 0 (z = 0, at the bottom) also weighted to D (z 6 .. 8): far from D's other vertices.
    # Vertices 7 * 8 and 7 * 8 + 1 (z = 3.5) weighted to A, whose region ends below z = 3: an island
    # 1.6 from A's bone, within A's reach, so not far.
    ring7 = [7 * SEGMENTS, 7 * SEGMENTS + 1]
    obj, _, _ = chain(bpy, extra_weights={"A": ([0], 0.8), "D": ([0], 0.2)})
    add_weights(obj, {"A": (ring7, 0.3), "B": (ring7, 0.7)})
    bpy.context.view_layer.update()
    z = own_positions(obj.data)[:, 2]
    assert z[0] == 0.0 and np.allclose(z[ring7], 3.5)

    groups = stray_groups(bpy, obj)
    assert set(groups) == {"A", "D"}
    assert groups["D"].far.tolist() == [0]
    assert groups["A"].far.size == 0 and sorted(groups["A"].islands.tolist()) == ring7

    f = findings(audit(bpy, obj), "stray-weights")
    assert len(f) == 1 and f[0].severity == "WARNING"
    assert set(f[0].vertices) == {0, *ring7}
    assert set(f[0].bones) == {"A", "D"}


def test_loose_piece_weighted_to_a_bone_is_not_an_island(bpy):
    """An 'eyeball': a separate octahedron inside the top of the cylinder, fully weighted to D."""
    centre, r = np.array([0.0, 0.2, 7.0]), 0.1
    octa = centre + r * np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    faces = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    n = 17 * SEGMENTS
    obj, _, _ = chain(bpy, octa, faces, {"D": (np.arange(n, n + 6), 1.0)})
    assert not stray_groups(bpy, obj)
    assert not findings(audit(bpy, obj), "stray-weights")


def test_region_across_a_split_seam_is_not_an_island(bpy):
    """The chain cylinder cut open along one side (seam vertices duplicated, as a glTF import leaves
    them) and a 'Sleeve' bone weighting only the side across the seam: one region on the surface."""
    from tests.factories.blender_rigs import BoneSpec, build_rig, chain_bones, chain_weights

    rings, seg = 17, SEGMENTS
    angle = 2.0 * np.pi * np.arange(seg + 1) / seg  # seg + 1 columns: the last one duplicates the first
    z = np.linspace(0.0, 8.0, rings)
    verts = np.column_stack([np.tile(0.5 * np.cos(angle), rings), np.tile(0.5 * np.sin(angle), rings),
                             np.repeat(z, seg + 1)])
    faces = [(i * (seg + 1) + j, i * (seg + 1) + j + 1, (i + 1) * (seg + 1) + j + 1, (i + 1) * (seg + 1) + j)
             for i in range(rings - 1) for j in range(seg)]
    column = np.tile(np.arange(seg + 1), rings)
    sleeve = np.flatnonzero(np.isin(column, (0, 1, seg - 1, seg)) & (verts[:, 2] > 2.9) & (verts[:, 2] < 5.1))
    weights = chain_weights(verts[:, 2], CHAIN, 8.0)
    weights["Sleeve"] = (sleeve, 0.3)
    bones = chain_bones(CHAIN, 8.0) + [BoneSpec("Sleeve", (0.5, 0.0, 3.0), (0.5, 0.0, 5.0), "B")]
    obj, _ = build_rig("Seam", bones, verts, faces, weights)
    seam = own_positions(obj.data)
    assert np.allclose(seam[column == 0], seam[column == seg], atol=1e-6)  # the seam: same positions, split
    assert "Sleeve" not in stray_groups(bpy, obj)
    assert not findings(audit(bpy, obj), "stray-weights")


# ---------------------------------------------------------------- the user's data


def snapshot(bpy):
    """Everything an audit must leave as it was."""
    scene = bpy.context.scene
    state = {
        "frame": scene.frame_current,
        "active": bpy.context.view_layer.objects.active.name if bpy.context.view_layer.objects.active else None,
        "counts": {k: len(getattr(bpy.data, k)) for k in ("objects", "meshes", "armatures", "scenes", "actions",
                                                            "collections", "materials", "node_groups")},
    }
    for obj in bpy.data.objects:
        entry = {"mode": obj.mode, "select": obj.select_get(), "hide": obj.hide_get(),
                 "matrix": tuple(map(tuple, obj.matrix_world)), "parent": obj.parent.name if obj.parent else None,
                 "modifiers": [(m.name, m.type, m.show_viewport, getattr(m, "object", None) and m.object.name,
                                getattr(m, "use_deform_preserve_volume", None)) for m in obj.modifiers]}
        if obj.type == "ARMATURE":
            entry["pose"] = {pb.name: (pb.rotation_mode, tuple(pb.location), tuple(pb.rotation_quaternion),
                                       tuple(pb.rotation_euler), tuple(pb.scale),
                                       [(c.name, c.mute, c.influence) for c in pb.constraints])
                             for pb in obj.pose.bones}
            entry["pose_position"] = obj.data.pose_position
        if obj.type == "MESH":
            entry["vertices"] = own_positions(obj.data).tobytes()
            entry["groups"] = [g.name for g in obj.vertex_groups]
            entry["active_group"] = obj.vertex_groups.active_index
        state[obj.name] = entry
    return state


@pytest.mark.blender42
def test_audit_leaves_the_users_data_as_it_was(bpy):
    from skin_audit.blender.build.twist_rig import build_demo_rig

    rig = build_demo_rig()
    scene = bpy.context.scene
    scene.frame_set(7)
    pb = rig.armature.pose.bones["Child"]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = (0.1, 0.7, -0.2)
    pb.location = (0.0, 0.05, 0.0)
    con = pb.constraints.new("LIMIT_ROTATION")
    con.owner_space = "LOCAL"
    con.use_limit_y, con.min_y, con.max_y = True, -2.0, 2.0
    rig.mesh.select_set(True)
    rig.armature.select_set(False)
    bpy.context.view_layer.objects.active = rig.armature
    bpy.ops.object.mode_set(mode="POSE")
    bpy.context.view_layer.update()
    deformed_before = evaluated_positions(bpy, rig.mesh)
    before = snapshot(bpy)

    result = audit(bpy, rig.mesh)
    assert result.metrics["sweep_spot_checks"] >= 1  # the sandbox really posed copies

    assert snapshot(bpy) == before
    assert np.array_equal(evaluated_positions(bpy, rig.mesh), deformed_before)
    assert rig.armature.mode == "POSE"
