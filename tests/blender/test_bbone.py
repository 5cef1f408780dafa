# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bones against the real Blender: ``skin_audit.core.maths.bbone`` recomputes the
segment matrices (``PoseBone.bbone_segment_matrix``), the vertex to segment mapping
(``PoseBone.bbone_segment_index``) and the Armature modifier's deformation, LBS and
Preserve Volume, read back from the evaluated mesh vertex by vertex.

Rigs are built here in code: a 3-bone chain (off-axis, rolled) inside a cylinder
that overhangs both ends, weights set by hand from the distance to each bone, and
every B-Bone option (ease, roll, scale in/out with easing, curve in/out, custom
handles absolute / relative / tangent with handle scale and ease, end roll as in
roll, straight and curved mapping) at rest and posed (bend, twist, stretch with
non-uniform scale).  Blender's inputs are read here, from ``bpy`` properties, into the
core's records: this file is also the reference for the audit's extraction.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from skin_audit.core.maths import bbone as bb
from tests.factories import bbone_reference as ref

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("empty_scene")]

#: Chain heads and the last tail (off the axes so no frame is a special case).
JOINTS = ((0.0, 0.0, 0.0), (0.15, 1.0, 0.1), (0.25, 2.1, 0.35), (0.2, 3.0, 0.5))
ROLLS = (0.3, -0.4, 0.8)
RINGS, AROUND, RADIUS = 36, 12, 0.45
#: Mesh size ~3.6 (cylinder from y = -0.3 to 3.3).  Most rigs agree to ~3e-6; curve
#: in/out offsets on a nearly straight chain reach ~2.5e-5 because Blender's
#: cubic_tangent_factor_circle_v3 computes ``1 - cos(angle / 2)`` in float32 and cancels
#: (handle length off by ~4e-5 relative, seen in ``PoseBone.compute_bbone_handles`` and
#: reproduced by evaluating the formula in float32 on Blender's own dot product).
MESH_SIZE = 3.6
POSITION_TOL = 1e-5 * MESH_SIZE
#: Segment matrices (order-1 entries, bones ~1 m): 2e-6 typical, 1.7e-5 with curve offsets
#: for the same float32 cancellation.
MATRIX_TOL = 4e-5
#: Handle vectors from PoseBone.compute_bbone_handles, relative to the bone length.
HANDLE_TOL = 1e-4


# ---------------------------------------------------------------- building rigs


def build_rig(bpy, segments=(6, 8, 5), mapping="STRAIGHT", preserve_volume=False, edit=None):
    """Armature ``Rig`` (bones B0-B2, connected, plus free handle bones H0, H1) and mesh ``Tube``."""
    arm_data = bpy.data.armatures.new("Rig")
    arm = bpy.data.objects.new("Rig", arm_data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    bones = []
    for i in range(3):
        eb = arm_data.edit_bones.new(f"B{i}")
        eb.head, eb.tail, eb.roll = JOINTS[i], JOINTS[i + 1], ROLLS[i]
        if i:
            eb.parent, eb.use_connect = bones[-1], True
        bones.append(eb)
    # Free handle bones beside the chain, for custom handles.
    for name, head, tail in (("H0", (-0.6, 0.6, 0.2), (-0.4, 1.3, 0.0)), ("H1", (0.8, 2.0, -0.2), (0.9, 2.6, 0.3))):
        eb = arm_data.edit_bones.new(name)
        eb.head, eb.tail, eb.roll = head, tail, 0.5
        eb.use_deform = False
    bpy.ops.object.mode_set(mode="OBJECT")
    for i, b in enumerate(arm_data.bones[name] for name in ("B0", "B1", "B2")):
        b.bbone_segments = segments[i]
        b.bbone_mapping_mode = mapping
    if edit is not None:
        edit(arm)

    verts, faces = [], []
    for r in range(RINGS):
        y = -0.3 + 3.6 * r / (RINGS - 1)
        for a in range(AROUND):
            ang = 2 * math.pi * a / AROUND
            verts.append((0.15 + RADIUS * math.cos(ang), y, 0.25 + RADIUS * math.sin(ang)))
    for r in range(RINGS - 1):
        for a in range(AROUND):
            b = (a + 1) % AROUND
            faces.append((r * AROUND + a, r * AROUND + b, (r + 1) * AROUND + b, (r + 1) * AROUND + a))
    mesh = bpy.data.meshes.new("Tube")
    mesh.from_pydata(verts, [], faces)
    tube = bpy.data.objects.new("Tube", mesh)
    bpy.context.scene.collection.objects.link(tube)
    rest = np.array(verts)
    dist = np.stack([segment_distance(rest, JOINTS[i], JOINTS[i + 1]) for i in range(3)], axis=1)
    weights = np.exp(-((dist / 0.5) ** 2))
    weights /= weights.sum(axis=1, keepdims=True)
    for j in range(3):
        group = tube.vertex_groups.new(name=f"B{j}")
        for v, w in enumerate(weights[:, j]):
            if w > 1e-3:
                group.add([v], float(w), "REPLACE")
    mod = tube.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    mod.use_deform_preserve_volume = preserve_volume
    return arm, tube


def segment_distance(p, a, b):
    a, b = np.asarray(a), np.asarray(b)
    ab = b - a
    t = np.clip((p - a) @ ab / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


def evaluate(bpy, obj):
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    return np.array([tuple(v.co) for v in ev.data.vertices], dtype=np.float64)


# ---------------------------------------------------------------- reading Blender into the core's records


def shape_of(item):
    return bb.BBoneShape(
        ease_in=item.bbone_easein, ease_out=item.bbone_easeout, roll_in=item.bbone_rollin,
        roll_out=item.bbone_rollout, curve_in_x=item.bbone_curveinx, curve_in_z=item.bbone_curveinz,
        curve_out_x=item.bbone_curveoutx, curve_out_z=item.bbone_curveoutz,
        scale_in=tuple(item.bbone_scalein), scale_out=tuple(item.bbone_scaleout))


def handle_of(arm, pose_bone):
    if pose_bone is None:
        return None
    local = arm.convert_space(pose_bone=pose_bone, matrix=pose_bone.matrix, from_space="POSE", to_space="LOCAL")
    return bb.BBoneHandle(
        rest=np.array(pose_bone.bone.matrix_local), pose=np.array(pose_bone.matrix),
        length=pose_bone.bone.length, segments=pose_bone.bone.bbone_segments,
        local_scale=tuple(np.linalg.norm(np.array(local)[:3, :3], axis=0)),
        roll_out_rest=pose_bone.bone.bbone_rollout, roll_out_pose=pose_bone.bbone_rollout)


def resolve_handles(arm, pb):
    """Blender's BKE_pchan_bbone_handles_get: AUTO is the connected parent / last connected child."""
    bone = pb.bone
    if bone.bbone_handle_type_start == "AUTO":
        prev = pb.parent if bone.use_connect else None
    else:
        prev = arm.pose.bones[bone.bbone_custom_handle_start.name] if bone.bbone_custom_handle_start else None
    if bone.bbone_handle_type_end == "AUTO":
        connected = [c for c in pb.children if c.bone.use_connect]
        nxt = connected[-1] if connected else None
    else:
        nxt = arm.pose.bones[bone.bbone_custom_handle_end.name] if bone.bbone_custom_handle_end else None
    return prev, nxt


def spline_of(arm, pb):
    bone = pb.bone
    prev, nxt = resolve_handles(arm, pb)
    return bb.BBoneSpline(
        rest=np.array(bone.matrix_local), length=bone.length, segments=bone.bbone_segments,
        shape=shape_of(bone), handle_type_start=bone.bbone_handle_type_start,
        handle_type_end=bone.bbone_handle_type_end, prev=handle_of(arm, prev), next=handle_of(arm, nxt),
        use_scale_start=tuple(bone.bbone_handle_use_scale_start),
        use_scale_end=tuple(bone.bbone_handle_use_scale_end),
        use_ease_start=bone.bbone_handle_use_ease_start, use_ease_end=bone.bbone_handle_use_ease_end,
        use_endroll_as_inroll=bone.use_endroll_as_inroll, use_scale_easing=bone.use_scale_easing,
        mapping_mode=bone.bbone_mapping_mode)


def numpy_segments(arm, pb):
    """Rest and posed joints of the one-B-Bone reference curve."""
    return ref.bbone_segment_matrices(spline_of(arm, pb), np.array(pb.matrix), shape_of(pb))


def batched_segments(arm, names=("B0", "B1", "B2"), edit_handle=None):
    """The product's posed joints of the B-Bones ``names`` at the current pose, computed from the
    handles in one pass (``rig_pose_segments_multi``, nothing read at this pose); ``edit_handle``
    changes each handle record (a control)."""
    pbs = arm.pose.bones
    index = {pb.name: i for i, pb in enumerate(pbs)}
    # The pose matrices as channels over unit rests: the pass then sees PoseBone.matrix itself, as
    # the reference does (the curve's circle factor, 1 - cos of a small angle, would magnify a
    # last-bit difference of its inputs past the 1e-12 the two are compared with).
    channel = np.array([np.array(pb.matrix) for pb in pbs])
    rest = np.tile(np.eye(4), (len(pbs), 1, 1))
    requests = []
    for name in names:
        pb = pbs[name]
        spline = spline_of(arm, pb)
        if edit_handle is not None:
            spline = dataclasses.replace(spline, prev=spline.prev and edit_handle(spline.prev),
                                         next=spline.next and edit_handle(spline.next))
        prev, nxt = resolve_handles(arm, pb)
        record = bb.RigBBone(spline, index[prev.name] if prev else -1, index[nxt.name] if nxt else -1,
                             blender_segments(pb, True))
        requests.append((record, index[name], [0], bb.BBonePose(shape_of(pb))))
    return {name: m[0] for name, m in zip(names, bb.rig_pose_segments_multi(requests, channel[None], rest),
                                          strict=True)}


def blender_segments(pb, rest):
    return np.array([np.array(pb.bbone_segment_matrix(i, rest=rest)) for i in range(pb.bone.bbone_segments + 1)])


def numpy_deform(arm, tube, preserve_volume):
    """The Armature modifier recomputed with the core's B-Bone functions (all bones bendy here): the
    posed joints from the product's batched pass, the rest ones from the reference curve."""
    rest = np.array([tuple(v.co) for v in tube.data.vertices], dtype=np.float64)
    v = len(rest)
    names = [g.name for g in tube.vertex_groups]
    weights = np.zeros((v, len(names)))
    for vert in tube.data.vertices:
        for g in vert.groups:
            weights[vert.index, g.group] = g.weight
    disp = np.zeros((v, 3))
    real, dual = np.zeros((v, 4)), np.zeros((v, 4))
    contrib = np.zeros(v)
    posed = batched_segments(arm, tuple(names))
    for j, name in enumerate(names):
        pb = arm.pose.bones[name]
        w = weights[:, j]
        arm_mat = np.array(pb.bone.matrix_local)
        channel = np.array(pb.matrix) @ np.linalg.inv(arm_mat)
        rest_seg, _ = numpy_segments(arm, pb)
        pose_seg = posed[name]
        co_bone = rest @ np.linalg.inv(arm_mat)[:3, :3].T + np.linalg.inv(arm_mat)[:3, 3]
        idx, blend = bb.segment_index_and_blend(co_bone, pb.bone.length, rest_seg, pb.bone.bbone_mapping_mode)
        deform = bb.bbone_deform_matrices(arm_mat, channel, rest_seg, pose_seg)
        if preserve_volume:
            quats = bb.segment_dual_quaternions(arm_mat, rest_seg, deform)
            real, dual = bb.accumulate_bbone_dual(real, dual, rest, w, idx, blend, quats)
        else:
            m = bb.blended_segment_matrices(idx, blend, deform)
            moved = np.einsum("vij,vj->vi", m[:, :3, :3], rest) + m[:, :3, 3]
            disp += w[:, None] * (moved - rest)
        contrib += w
    if preserve_volume:
        return ref.dual_transform(rest, real, dual, contrib)
    return rest + disp / contrib[:, None]


# ---------------------------------------------------------------- the option cases


def plain(arm):
    pass


def ease_roll_curve(arm):
    for name, k in (("B0", 1.0), ("B1", -0.7), ("B2", 0.5)):
        b = arm.data.bones[name]
        b.bbone_easein, b.bbone_easeout = 1.0 + 0.6 * k, 1.0 - 0.4 * k
        b.bbone_rollin, b.bbone_rollout = 0.3 * k, -0.5 * k
        b.bbone_curveinx, b.bbone_curveinz = 0.2 * k, -0.15 * k
        b.bbone_curveoutx, b.bbone_curveoutz = -0.1 * k, 0.25 * k


def scale_in_out(arm):
    for name, easing in (("B0", False), ("B1", True), ("B2", True)):
        b = arm.data.bones[name]
        b.bbone_scalein = (1.3, 0.7, 0.9)
        b.bbone_scaleout = (0.8, 1.6, 1.2)
        b.use_scale_easing = easing
        b.bbone_easein = 1.4


def handles(kind):
    def edit(arm):
        b = arm.data.bones["B1"]
        b.bbone_handle_type_start = kind
        b.bbone_handle_type_end = kind
        b.bbone_custom_handle_start = arm.data.bones["H0"]
        b.bbone_custom_handle_end = arm.data.bones["H1"]
        b.bbone_handle_use_scale_start = (True, False, True)
        b.bbone_handle_use_scale_end = (False, True, True)
        b.bbone_handle_use_ease_start = True
        b.bbone_handle_use_ease_end = kind != "TANGENT"
        arm.data.bones["B2"].use_endroll_as_inroll = True
        arm.data.bones["B1"].bbone_rollout = 0.4
    edit.__name__ = f"handles_{kind.lower()}"
    return edit


CASES = [plain, ease_roll_curve, scale_in_out, handles("ABSOLUTE"), handles("RELATIVE"), handles("TANGENT")]


def pose_rig(arm, kind):
    pbs = arm.pose.bones
    for pb in pbs:
        # Each pose starts from the rest pose, so poses can follow one another on one rig.
        pb.rotation_mode = "XYZ"
        pb.location, pb.rotation_euler, pb.scale = (0, 0, 0), (0, 0, 0), (1, 1, 1)
        pb.bbone_easein = pb.bbone_easeout = pb.bbone_rollin = pb.bbone_rollout = 0.0
        pb.bbone_curveinx = pb.bbone_curveinz = pb.bbone_curveoutx = pb.bbone_curveoutz = 0.0
        pb.bbone_scalein = pb.bbone_scaleout = (1, 1, 1)
    if kind in ("bend", "all"):
        pbs["B1"].rotation_euler = (math.radians(55), 0.0, math.radians(20))
        pbs["B2"].rotation_euler = (math.radians(-35), 0.0, 0.0)
    if kind in ("twist", "all"):
        pbs["B2"].rotation_euler[1] = math.radians(80)
        pbs["B0"].rotation_euler[1] = math.radians(-30)
    if kind == "flip":
        # Twists past 180 degrees: neighbouring joints' quaternions fall in opposite
        # hemispheres, so Preserve Volume's sign flip against the running sum matters.
        pbs["B1"].rotation_euler = (0.2, math.radians(200), 0.0)
        pbs["B2"].rotation_euler = (0.0, math.radians(-160), 0.3)
    if kind in ("stretch", "all"):
        pbs["B1"].scale = (1.0, 1.4, 1.0)  # non-uniform: the scaled-space branch
        pbs["B0"].scale = (1.2, 1.2, 1.2)
    if kind == "all":
        pbs["H0"].location = (0.1, 0.2, -0.3)
        pbs["H0"].scale = (1.3, 0.8, 1.1)
        pbs["H1"].rotation_euler = (0.4, 0.2, -0.3)
        pbs["H1"].scale = (0.9, 1.5, 1.2)
        for pb, k in ((pbs["B0"], 0.5), (pbs["B1"], -1.0), (pbs["B2"], 0.8)):
            pb.bbone_easein, pb.bbone_easeout = 0.3 * k, -0.2 * k
            pb.bbone_rollin, pb.bbone_rollout = 0.4 * k, 0.2 * k
            pb.bbone_curveinx, pb.bbone_curveoutz = 0.2 * k, -0.3 * k
            pb.bbone_curveinz, pb.bbone_curveoutx = 0.1 * k, 0.15 * k
            pb.bbone_scalein = (1.0 + 0.2 * k, 1.0 + 0.3 * k, 0.9)
            pb.bbone_scaleout = (0.9, 1.0 - 0.2 * k, 1.1)


POSES = ("rest", "bend", "twist", "stretch", "all")


# ---------------------------------------------------------------- tests


@pytest.mark.blender42
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_segment_matrices_match_blender(bpy, case):
    """The reference curve (rest and posed) and the product's batched pass (posed, the three
    B-Bones in one pass) against PoseBone.bbone_segment_matrix; the two agree within 1e-12."""
    arm, tube = build_rig(bpy, edit=case)
    for pose in POSES:
        pose_rig(arm, pose)
        evaluate(bpy, tube)
        worst = 0.0
        batched = batched_segments(arm)
        for name in ("B0", "B1", "B2"):
            pb = arm.pose.bones[name]
            rest_np, pose_np = numpy_segments(arm, pb)
            for what, rest, ours in (("reference", True, rest_np), ("reference", False, pose_np),
                                     ("batched", False, batched[name])):
                theirs = blender_segments(pb, rest)
                err = float(np.abs(ours - theirs).max())
                worst = max(worst, err)
                assert err < MATRIX_TOL, f"{pose} {name} {what} rest={rest}: max |numpy - Blender| = {err:.3g}"
            np.testing.assert_allclose(batched[name], pose_np, rtol=0, atol=1e-12)
        print(f"segment matrices {case.__name__}/{pose}: max err {worst:.3g}")


@pytest.mark.blender42
@pytest.mark.parametrize("kind", ["ABSOLUTE", "RELATIVE"])
def test_batched_pass_reads_pose_scale_and_handle_scale(bpy, kind):
    """The rows the batched pass takes from a scaled pose: B1 stretched non-uniformly, its custom
    handles H0 and H1 scaled non-uniformly and read (``use_scale_start/end``, ``use_ease_start/end``).
    The pass equals Blender's joints, and a pass that ignored either scale would not (controls)."""
    arm, tube = build_rig(bpy, edit=handles(kind))
    pose_rig(arm, "all")
    evaluate(bpy, tube)
    pb = arm.pose.bones["B1"]
    size = np.linalg.norm(np.array(pb.matrix)[:3, :3], axis=0)
    assert np.ptp(size) > 0.3  # Blender's do_scale
    theirs = blender_segments(pb, False)
    ours = batched_segments(arm, ("B1",))["B1"]
    assert np.abs(ours - theirs).max() < MATRIX_TOL
    # Control: the handles' local scale at one, the joints move away from Blender's.
    unit = batched_segments(arm, ("B1",), lambda h: dataclasses.replace(h, local_scale=(1.0, 1.0, 1.0)))["B1"]
    assert np.abs(unit - theirs).max() > 100 * MATRIX_TOL
    # Control: the same bone unscaled (its axes normalised, a uniform pose) is another curve.
    assert np.abs(ours - numpy_segments_unscaled(arm, pb)).max() > 100 * MATRIX_TOL


def numpy_segments_unscaled(arm, pb):
    """The reference's posed joints with the bone's pose axes made unit (no ``do_scale``)."""
    pose = np.array(pb.matrix)
    pose[:3, :3] /= np.linalg.norm(pose[:3, :3], axis=0)
    return ref.bbone_segment_matrices(spline_of(arm, pb), pose, shape_of(pb))[1]


@pytest.mark.blender42
@pytest.mark.parametrize("mapping", ["STRAIGHT", "CURVED"])
def test_segment_index_matches_blender(bpy, mapping):
    """Our mapping of each rest vertex equals PoseBone.bbone_segment_index (same blended joint)."""
    arm, tube = build_rig(bpy, segments=(4, 16, 7), mapping=mapping, edit=ease_roll_curve)
    evaluate(bpy, tube)
    rest = np.array([tuple(v.co) for v in tube.data.vertices])
    for name in ("B0", "B1", "B2"):
        pb = arm.pose.bones[name]
        arm_mat = np.array(pb.bone.matrix_local)
        inv = np.linalg.inv(arm_mat)
        rest_seg, _ = numpy_segments(arm, pb)
        idx, blend = bb.segment_index_and_blend(rest @ inv[:3, :3].T + inv[:3, 3], pb.bone.length, rest_seg, mapping)
        theirs = [pb.bbone_segment_index(tuple(p)) for p in rest]
        t_idx = np.array([t[0] for t in theirs])
        t_blend = np.array([t[1] for t in theirs])
        # Position along the bone in segment units (equal at a boundary whichever side is taken).
        err = np.abs((idx + blend) - (t_idx + t_blend))
        assert err.max() < 1e-4, f"{name} {mapping}: worst vertex {int(err.argmax())} off by {err.max():.3g}"


@pytest.mark.blender42
@pytest.mark.parametrize("preserve_volume", [False, True], ids=["lbs", "dqs"])
@pytest.mark.parametrize("mapping", ["STRAIGHT", "CURVED"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_deformation_matches_blender(bpy, case, mapping, preserve_volume):
    arm, tube = build_rig(bpy, segments=(4, 12, 16) if mapping == "CURVED" else (8, 5, 10),
                          mapping=mapping, preserve_volume=preserve_volume, edit=case)
    for pose in ("rest", "all"):
        pose_rig(arm, pose)
        theirs = evaluate(bpy, tube)
        ours = numpy_deform(arm, tube, preserve_volume)
        err = np.linalg.norm(ours - theirs, axis=1)
        print(f"deform {case.__name__}/{mapping}/{'dqs' if preserve_volume else 'lbs'}/{pose}: max {err.max():.3g}")
        assert err.max() < POSITION_TOL, (
            f"{pose}: {int((err >= POSITION_TOL).sum())} vertices off, worst {int(err.argmax())} by {err.max():.3g}")


@pytest.mark.blender42
@pytest.mark.parametrize("pose", ["bend", "twist", "stretch", "flip"])
def test_deformation_simple_poses(bpy, pose):
    """Each pose kind alone (bend, twist, non-uniform stretch, twist past 180 degrees),
    LBS and Preserve Volume."""
    for preserve_volume in (False, True):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        arm, tube = build_rig(bpy, preserve_volume=preserve_volume, edit=ease_roll_curve)
        pose_rig(arm, pose)
        theirs = evaluate(bpy, tube)  # updates the pose matrices that numpy_deform reads
        err = np.linalg.norm(numpy_deform(arm, tube, preserve_volume) - theirs, axis=1)
        print(f"deform ease_roll_curve/STRAIGHT/{'dqs' if preserve_volume else 'lbs'}/{pose}: max {err.max():.3g}")
        assert err.max() < POSITION_TOL, f"{pose} pv={preserve_volume}: worst {err.max():.3g}"


@pytest.mark.blender42
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_handles_match_blender(bpy, case):
    """Our handles and end rolls equal PoseBone.compute_bbone_handles (ease and offsets on)."""
    arm, tube = build_rig(bpy, edit=case)
    pose_rig(arm, "all")
    evaluate(bpy, tube)
    for name in ("B0", "B1", "B2"):
        pb = arm.pose.bones[name]
        for rest in (True, False):
            params = ref.spline_parameters(spline_of(arm, pb), rest, np.array(pb.matrix), shape_of(pb))
            h1, roll1, h2, roll2 = ref.spline_handles(params)
            t_h1, t_roll1, t_h2, t_roll2 = pb.compute_bbone_handles(rest=rest, ease=True, offsets=True)
            scale = pb.bone.length
            assert np.abs(h1 - np.array(t_h1)).max() < HANDLE_TOL * scale, (name, rest, h1, tuple(t_h1))
            assert np.abs(h2 - np.array(t_h2)).max() < HANDLE_TOL * scale, (name, rest, h2, tuple(t_h2))
            assert abs(roll1 - t_roll1) < 1e-5, (name, rest, roll1, t_roll1)
            assert abs(roll2 - t_roll2) < 1e-5, (name, rest, roll2, t_roll2)


@pytest.mark.blender42
def test_bbone_is_not_a_plain_bone(bpy):
    """Control: the posed B-Bone deformation differs from treating the bones as plain
    bones, so the agreement above is not a plain-bone coincidence."""
    arm, tube = build_rig(bpy, edit=ease_roll_curve)
    pose_rig(arm, "all")
    theirs = evaluate(bpy, tube)
    rest = np.array([tuple(v.co) for v in tube.data.vertices])
    plain_disp = np.zeros_like(rest)
    total = np.zeros(len(rest))
    for vert in tube.data.vertices:
        for g in vert.groups:
            pb = arm.pose.bones[tube.vertex_groups[g.group].name]
            m = np.array(pb.matrix) @ np.linalg.inv(np.array(pb.bone.matrix_local))
            plain_disp[vert.index] += g.weight * (m[:3, :3] @ rest[vert.index] + m[:3, 3] - rest[vert.index])
            total[vert.index] += g.weight
    plain_result = rest + plain_disp / total[:, None]
    assert np.linalg.norm(plain_result - theirs, axis=1).max() > 100 * POSITION_TOL


# ---------------------------------------------------------------- the audit's recomputation


@pytest.mark.blender42
@pytest.mark.parametrize("preserve_volume", [False, True], ids=["lbs", "dqs"])
@pytest.mark.parametrize("mapping", ["STRAIGHT", "CURVED"])
def test_audit_recomputes_bbone_vertices(bpy, mapping, preserve_volume):
    """extract + recompute_blender on a B-Bone rig (objects moved off the origin): every vertex
    is compared, at the extracted pose (Blender's segments) and at a pose made in numpy
    (segments from the handles), and equals Blender's evaluated mesh."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from skin_audit.core.audit.mesh_audit import _unsupported_vertices

    arm, tube = build_rig(bpy, segments=(5, 9, 12), mapping=mapping, preserve_volume=preserve_volume,
                          edit=handles("ABSOLUTE"))
    arm.location = (0.3, -0.2, 0.5)
    arm.rotation_euler = (0.2, 0.1, -0.4)
    tube.parent = arm
    tube.matrix_parent_inverse = arm.matrix_world.inverted() @ __import__("mathutils").Matrix.Translation((0.1, 0, 0))
    pose_rig(arm, "all")
    evaluate(bpy, tube)
    data = extract(tube, tube.modifiers[0], bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    assert data.bones.bbones and sum(b is not None for b in data.bones.bbones) == 3
    assert not any("B-Bone" in u for u in data.unsupported)
    rec = recompute_blender(data, data.read_pose)
    assert not _unsupported_vertices(data, rec).any()
    theirs = evaluate(bpy, tube)
    rest = np.array([tuple(v.co) for v in tube.data.vertices])
    assert np.linalg.norm(theirs - rest, axis=1).max() > 0.3  # a real pose
    err = np.linalg.norm(rec.positions - theirs, axis=1)
    print(f"audit {mapping}/{'dqs' if preserve_volume else 'lbs'} extracted pose: max {err.max():.3g}")
    assert err.max() < POSITION_TOL

    # A second pose, rotations only (the handles' local scale and the animated B-Bone values
    # stay as extracted): the numpy pose path recomputes the curves from the handles.
    pbs = arm.pose.bones
    pbs["B1"].rotation_euler = (math.radians(-40), math.radians(30), math.radians(10))
    pbs["H1"].rotation_euler = (0.9, -0.2, 0.3)
    pbs["H0"].location = (-0.2, 0.1, 0.3)
    theirs = evaluate(bpy, tube)
    arm_eval = arm.evaluated_get(bpy.context.evaluated_depsgraph_get())
    channel = np.array([np.array(arm_eval.pose.bones[n].matrix_channel) for n in data.bones.names])
    assert not np.allclose(channel, data.read_pose.channel)
    err = np.linalg.norm(recompute_blender(data, data.read_pose.at(channel)).positions - theirs, axis=1)
    print(f"audit {mapping}/{'dqs' if preserve_volume else 'lbs'} numpy pose: max {err.max():.3g}")
    assert err.max() < POSITION_TOL


@pytest.mark.parametrize("preserve_volume", [False, True], ids=["lbs", "dqs"])
def test_rigify_body_every_vertex_recomputed(bpy, rigify_character, preserve_volume):
    """The production case: Rigify's generated rig (52 deform B-Bones) posed
    through its FK controls so its arm B-Bones bend; every vertex of the body is compared
    and equals Blender's evaluated mesh."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from skin_audit.core.audit.mesh_audit import _unsupported_vertices
    from tests.factories.rigify import BODY, RIG, pose_left_arm_fk

    bpy.ops.wm.open_mainfile(filepath=str(rigify_character), load_ui=False, use_scripts=False)
    rig, body = bpy.data.objects[RIG], bpy.data.objects[BODY]
    (mod,) = [m for m in body.modifiers if m.type == "ARMATURE"]
    mod.use_deform_preserve_volume = preserve_volume
    pose_left_arm_fk(rig)
    theirs = evaluate(bpy, body)
    data = extract(body, mod, bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    assert sum(b is not None for b in data.bones.bbones) >= 20
    rec = recompute_blender(data, data.read_pose)
    assert not _unsupported_vertices(data, rec).any()
    err = np.linalg.norm(rec.positions - theirs, axis=1)
    print(f"rigify body {'dqs' if preserve_volume else 'lbs'}: {len(err)} vertices, max {err.max():.3g}")
    assert err.max() < 1e-5 * data.size()
    bpy.ops.wm.read_factory_settings(use_empty=True)


@pytest.mark.blender42
@pytest.mark.parametrize("case", [ease_roll_curve, handles("ABSOLUTE")], ids=lambda c: c.__name__)
def test_poses_recomputed_together_leave_out_only_bbones_at_rest(bpy, case):
    """``recompute_blender_many`` computes the B-Bones' curves of several poses together and skips a
    B-Bone where it and its handles sit at rest.  Each pose below turns one bone (a custom handle
    H1 alone, the chain's end, its middle): Blender's own evaluation of each, through the audit's
    spot checker, is what the batch must give."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.core.audit.armature_modifier import recompute_blender, recompute_blender_many
    from skin_audit.core.audit.pose import Pose
    from skin_audit.core.audit.pose_sweep import SweepPose, pose_channel

    bpy.ops.wm.read_factory_settings(use_empty=True)
    arm, tube = build_rig(bpy, edit=case)
    mod = tube.modifiers["Armature"]
    mesh = extract(tube, mod, bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    names = [b.name for b in arm.data.bones]
    poses = [SweepPose(names.index(n), axis, deg, "test") for n, axis, deg in
             (("H1", "x", 60.0), ("B2", "z", 90.0), ("B1", "y", 120.0), ("B0", "x", 0.0))]
    theirs = spot_checker(tube, mod)(poses)
    ours = recompute_blender_many(mesh, [Pose(pose_channel(mesh, p)) for p in poses])
    moved = 0
    for pose, blender, rec in zip(poses, theirs, ours, strict=True):
        err = np.linalg.norm(rec.positions - blender, axis=1)
        assert err.max() < POSITION_TOL, f"{names[pose.bone]}: worst {err.max():.3g}"
        alone = recompute_blender(mesh, Pose(pose_channel(mesh, pose))).positions
        np.testing.assert_allclose(rec.positions, alone, rtol=0, atol=1e-12)
        moved += np.abs(blender - np.array([tuple(v.co) for v in tube.data.vertices])).max() > 0.05
    assert moved >= 2 + (case is not ease_roll_curve)  # the poses really bend B-Bones (H1 only with handles)


def second_connected_child(arm):
    """B1 gets a second connected child, B2b (no weights), created after B2: the last of the two."""
    import bpy
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones.new("B2b")
    eb.head, eb.tail, eb.roll = JOINTS[2], (0.9, 2.6, -0.3), 0.2
    eb.parent, eb.use_connect = arm.data.edit_bones["B1"], True
    eb.use_deform = False
    bpy.ops.object.mode_set(mode="OBJECT")


@pytest.mark.blender42
def test_automatic_end_handle_is_the_last_connected_child(bpy):
    """With two connected children, B1's automatic end handle is the last (B2b): turning B2b, which
    weighs no vertex, bends B1 in Blender's evaluated mesh, and the audit's recomputation of that
    pose and of one turning B2 (the handles read by the extraction) equals Blender's."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.core.audit.armature_modifier import recompute_blender_many
    from skin_audit.core.audit.pose import Pose
    from skin_audit.core.audit.pose_sweep import SweepPose, pose_channel

    bpy.ops.wm.read_factory_settings(use_empty=True)
    arm, tube = build_rig(bpy, edit=second_connected_child)
    assert [c.name for c in arm.pose.bones["B1"].children if c.bone.use_connect] == ["B2", "B2b"]
    mod = tube.modifiers["Armature"]
    mesh = extract(tube, mod, bpy.context.evaluated_depsgraph_get(), measure_drift=False)
    names = [b.name for b in arm.data.bones]
    poses = [SweepPose(names.index(n), axis, deg, "test") for n, axis, deg in (("B2b", "x", 70.0), ("B2", "z", 70.0))]
    theirs = spot_checker(tube, mod)(poses)
    ours = recompute_blender_many(mesh, [Pose(pose_channel(mesh, p)) for p in poses])
    rest = np.array([tuple(v.co) for v in tube.data.vertices])
    # B2b weighs no vertex: what it moves in Blender's mesh, it moves as B1's end handle.
    assert np.linalg.norm(theirs[0] - rest, axis=1).max() > 0.05
    for pose, blender, rec in zip(poses, theirs, ours, strict=True):
        err = np.linalg.norm(rec.positions - blender, axis=1)
        assert err.max() < POSITION_TOL, f"{names[pose.bone]}: worst {err.max():.3g}"
