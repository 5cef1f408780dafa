# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading Blender into arrays without side effects: positions through one reused buffer,
spot-check poses as Blender stores them, and sandboxes that leave the user's evaluated
objects alone (Blender's own depsgraph update report is the witness)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.blender42, pytest.mark.usefixtures("empty_scene")]


def posed_chain(bpy):
    """A cylinder on a two-bone chain, its child bone bent (so evaluated != stored positions)."""
    from tests.factories.blender_rigs import chain_rig

    obj, arm = chain_rig("Reader", ("Root", "Child"), rings=9, segments=12)
    pb = arm.pose.bones["Child"]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = (0.6, 0.0, 0.2)
    bpy.context.view_layer.update()
    return obj, arm


def per_vertex_co(mesh) -> np.ndarray:
    """(V, 3) float32 from Blender's per-vertex API, one vertex at a time: the reference."""
    return np.array([tuple(v.co) for v in mesh.vertices], dtype=np.float32)


def test_positions_are_read_through_the_given_buffer(bpy):
    from skin_audit.blender.read.arrays import mesh_positions, stored_positions

    obj, _ = posed_chain(bpy)
    truth = per_vertex_co(obj.data)
    buffer = np.full(len(truth) * 3 + 5, np.nan, dtype=np.float32)  # larger than needed: its start is used
    got = stored_positions(obj.data, buffer)
    assert got.dtype == np.float32 and got.shape == truth.shape and np.shares_memory(got, buffer)
    np.testing.assert_array_equal(got, truth)
    widened = mesh_positions(obj.data, buffer)
    assert widened.dtype == np.float64 and not np.shares_memory(widened, buffer)
    np.testing.assert_array_equal(widened, truth.astype(np.float64))
    # A buffer that cannot hold them (too small, float64, strided) is not written: a new array is made.
    for unusable in (np.zeros(len(truth), np.float32), np.zeros(len(truth) * 3, np.float64),
                     np.zeros(len(truth) * 6, np.float32)[::2]):
        got = stored_positions(obj.data, unusable)
        assert not np.shares_memory(got, unusable) and not unusable.any()
        np.testing.assert_array_equal(got, truth)


def test_spot_checks_give_blenders_float32_positions_of_the_posed_copy(bpy):
    """The checker's float32 positions are Blender's evaluation of a copy posed here by hand (Euler
    angles, where the checker sets quaternions: equal to float32 rounding)."""
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.core.audit.pose_sweep import SweepPose

    obj, arm = posed_chain(bpy)
    poses = [SweepPose(1, "x", 90.0, "test"), SweepPose(0, "z", -45.0, "test")]
    got = spot_checker(obj, obj.modifiers["Armature"])(poses)

    arm_copy, mesh_copy = arm.copy(), obj.copy()
    for o in (arm_copy, mesh_copy):
        bpy.context.scene.collection.objects.link(o)
    mesh_copy.modifiers["Armature"].object = arm_copy
    for pose, positions in zip(poses, got, strict=True):
        for pb in arm_copy.pose.bones:
            pb.rotation_mode = "XYZ"
            pb.rotation_euler = (0.0, 0.0, 0.0)
        pb = arm_copy.pose.bones[arm.data.bones[pose.bone].name]
        setattr(pb.rotation_euler, pose.axis, math.radians(pose.degrees))
        bpy.context.view_layer.update()
        blender = per_vertex_co(mesh_copy.evaluated_get(bpy.context.evaluated_depsgraph_get()).data)
        assert positions.dtype == np.float32
        assert np.abs(blender - per_vertex_co(obj.data)).max() > 0.05  # the pose really moves it
        np.testing.assert_allclose(positions, blender, rtol=0, atol=1e-6)


def test_a_sampled_spot_check_gives_the_sampled_vertices_of_the_whole_evaluation(bpy):
    """With a sample, Blender deforms only every stride-th vertex and the included ones (a Geometry
    Nodes cut before the Armature modifier): exactly the rows of the whole mesh's evaluation."""
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.core.audit.pose_sweep import SweepPose
    from skin_audit.core.audit.shape_checks import SpotSample

    obj, _ = posed_chain(bpy)
    # A modifier before the Armature modifier: the sample indexes the Armature modifier's input.
    bend = obj.modifiers.new("Bend", "SIMPLE_DEFORM")
    bend.deform_method, bend.angle = "TWIST", 0.4
    while obj.modifiers[0] != bend:
        obj.modifiers.move(len(obj.modifiers) - 1, 0)
    count = len(obj.data.vertices)
    poses = [SweepPose(1, "y", 180.0, "test"), SweepPose(0, "x", 90.0, "test")]
    check = spot_checker(obj, obj.modifiers["Armature"])
    whole = check(poses)
    sample = SpotSample(count, 7, (3, 50, 51))
    index = sample.indices()
    assert 0 in index and 3 in index and 50 in index and 51 in index and 1 not in index and len(index) < count // 5
    before = {kind: len(getattr(bpy.data, kind)) for kind in ("node_groups", "objects", "meshes", "scenes")}
    sampled = check(poses, sample)
    assert before == {kind: len(getattr(bpy.data, kind)) for kind in before}  # the sandbox removed its cut
    for full, part in zip(whole, sampled, strict=True):
        assert part.dtype == np.float32 and part.shape == (len(index), 3)
        np.testing.assert_array_equal(part, full[index])


def test_sandboxes_leave_the_users_evaluated_geometry_alone(bpy):
    """After extraction, the weight pass and spot checks, updating the user's depsgraph
    re-evaluates no geometry of the user's objects: nothing there was tagged."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.blender.read.weights import group_weights
    from skin_audit.blender.sandbox import sandbox
    from skin_audit.core.audit.pose_sweep import SweepPose

    obj, arm = posed_chain(bpy)
    scene = bpy.context.scene
    mod = obj.modifiers["Armature"]
    reevaluated: list[str] = []

    def report(updated_scene, depsgraph):
        if updated_scene == scene:
            reevaluated.extend(u.id.name for u in depsgraph.updates if u.is_updated_geometry
                               and isinstance(u.id, (bpy.types.Object, bpy.types.Mesh, bpy.types.Armature))
                               and u.id.name in (obj.name, obj.data.name, arm.name, arm.data.name))

    depsgraph = bpy.context.evaluated_depsgraph_get()
    bpy.app.handlers.depsgraph_update_post.append(report)
    try:
        def shared() -> None:  # the spot checks' copies made and posed in the extraction's sandbox
            with sandbox() as box:
                check = spot_checker(obj, mod, box)
                extract(obj, mod, depsgraph, box=box)
                check([SweepPose(1, "x", 90.0, "test")])

        for step in (lambda: extract(obj, mod, depsgraph),  # rest and cleared poses on copies
                     lambda: group_weights(obj, "dense"),
                     lambda: spot_checker(obj, mod)([SweepPose(1, "x", 90.0, "test")]),
                     shared):
            step()
            bpy.context.evaluated_depsgraph_get()
        assert reevaluated == []
        # The witness works: a real change to the user's mesh is reported.
        obj.data.update()
        bpy.context.evaluated_depsgraph_get()
        assert obj.name in reevaluated or obj.data.name in reevaluated
    finally:
        bpy.app.handlers.depsgraph_update_post.remove(report)


def test_spot_checks_made_in_the_extractions_sandbox_match_a_sandbox_of_their_own(bpy):
    """Given the extraction's sandbox, the spot checks' copies are made there and evaluated with the
    extraction's (the armature copy owning its data, its constraints off): the same positions as in
    a sandbox of their own, a sample still cut in a sandbox of its own, the same extraction, and
    nothing left once the sandbox closes."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.blender.sandbox import sandbox
    from skin_audit.core.audit.pose_sweep import SweepPose
    from skin_audit.core.audit.shape_checks import SpotSample

    obj, arm = posed_chain(bpy)
    limit = arm.pose.bones["Child"].constraints.new("LIMIT_ROTATION")  # the checks switch it off
    limit.use_limit_x, limit.min_x, limit.max_x, limit.owner_space = True, -0.1, 0.1, "LOCAL"
    bpy.context.view_layer.update()
    mod = obj.modifiers["Armature"]
    poses = [SweepPose(1, "x", 90.0, "test"), SweepPose(0, "z", -45.0, "test")]
    alone = spot_checker(obj, mod)(poses)
    reference = extract(obj, mod, bpy.context.evaluated_depsgraph_get())
    sample = SpotSample(len(obj.data.vertices), 5, (2,))
    kinds = ("objects", "meshes", "armatures", "scenes", "node_groups")
    before = {kind: len(getattr(bpy.data, kind)) for kind in kinds}
    with sandbox() as box:
        check = spot_checker(obj, mod, box)
        made = {kind: len(getattr(bpy.data, kind)) for kind in kinds}
        mesh = extract(obj, mod, bpy.context.evaluated_depsgraph_get(), box=box)
        # The bind pose is measured on the checks' copies, shown at Rest Position: the extraction
        # adds only the armature whose channels it clears (sharing the user's armature data).
        added = {kind: len(getattr(bpy.data, kind)) - made[kind] for kind in kinds}
        assert added == {"objects": 1, "meshes": 0, "armatures": 0, "scenes": 0, "node_groups": 0}
        shared = check(poses)
        sampled = check(poses, sample)
    assert before == {kind: len(getattr(bpy.data, kind)) for kind in kinds}
    assert np.abs(alone[0] - per_vertex_co(obj.data)).max() > 0.05  # the pose really moves it
    for own, made_there, part in zip(alone, shared, sampled, strict=True):
        np.testing.assert_array_equal(made_there, own)
        np.testing.assert_array_equal(part, own[sample.indices()])
    np.testing.assert_array_equal(mesh.blender_at_rest, reference.blender_at_rest)
    np.testing.assert_array_equal(mesh.cleared_channel, reference.cleared_channel)
    np.testing.assert_array_equal(mesh.rest, reference.rest)


@pytest.mark.parametrize("in_the_extractions_sandbox", [False, True])
def test_spot_checks_pose_a_rig_shown_at_rest_position(bpy, in_the_extractions_sandbox):
    """The test poses are poses whether the user shows the rig at Rest Position or not: the same
    positions either way, in a sandbox of their own or the extraction's, and the user's armature
    left at Rest Position."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.blender.sandbox import sandbox
    from skin_audit.core.audit.pose_sweep import SweepPose

    obj, arm = posed_chain(bpy)
    mod = obj.modifiers["Armature"]
    poses = [SweepPose(1, "x", 90.0, "test"), SweepPose(0, "z", -45.0, "test")]

    def check() -> list[np.ndarray]:
        if not in_the_extractions_sandbox:
            return list(spot_checker(obj, mod)(poses))
        with sandbox() as box:
            checker = spot_checker(obj, mod, box)
            extract(obj, mod, bpy.context.evaluated_depsgraph_get(), box=box)
            return list(checker(poses))

    posed = check()
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    at_rest = check()
    assert arm.data.pose_position == "REST"
    assert np.abs(posed[0] - per_vertex_co(obj.data)).max() > 0.05  # the pose really moves it
    for a, b in zip(posed, at_rest, strict=True):
        np.testing.assert_array_equal(a, b)


def keyed_bbone_chain(bpy):
    """A cylinder parented to a two-bone B-Bone chain whose Child bone's rotation, B-Bone curve and
    a custom property are keyed at frame 1, as is the armature object's location."""
    from tests.factories.blender_rigs import chain_rig

    obj, arm = chain_rig("Keyed", ("Root", "Child"), rings=9, segments=8)
    for bone in arm.data.bones:
        bone.bbone_segments = 4
    pb = arm.pose.bones["Child"]
    pb.rotation_mode = "XYZ"
    pb["ik_fk"] = 0.0
    pb.bbone_curveinx = 0.3
    for path in ("rotation_euler", "bbone_curveinx", '["ik_fk"]'):
        pb.keyframe_insert(path, frame=1)
    arm.keyframe_insert("location", frame=1)
    bpy.context.scene.frame_set(1)
    return obj, arm


def _tweak_then_audit(bpy, obj, arm) -> None:
    """Controls tweaked without a keyframe (a rotation, a B-Bone curve, a custom property, the
    armature's location), then audits with and without the shape checks: the tweaks must hold."""
    from skin_audit.blender.run.audit_scene import audit_meshes
    from skin_audit.core.audit.options import AuditOptions

    pb = arm.pose.bones["Child"]
    pb.rotation_euler = (0.5, 0.0, 0.2)
    pb.bbone_curveinx = 0.0
    pb["ik_fk"] = 1.0
    arm.location = (0.0, 0.25, 0.0)
    bpy.context.view_layer.update()
    for shape_checks in (True, False):
        audit_meshes(bpy.context, [obj], AuditOptions(shape_checks=shape_checks))
        assert tuple(pb.rotation_euler) == pytest.approx((0.5, 0.0, 0.2))
        assert (pb.bbone_curveinx, pb["ik_fk"]) == (0.0, 1.0)
        assert tuple(arm.location) == pytest.approx((0.0, 0.25, 0.0))


def test_an_audit_leaves_the_values_a_user_set_without_a_keyframe(bpy):
    """A sandbox's depsgraph writes its animation results back to the user's objects it pulls in
    (the rig the mesh copies are parented to): controls tweaked without a keyframe, as while
    posing, must still hold the tweak after an audit."""
    obj, arm = keyed_bbone_chain(bpy)
    _tweak_then_audit(bpy, obj, arm)


def play_from_a_meta_strip(bpy, obj) -> None:
    """Move ``obj``'s action into an NLA strip inside a meta strip; nothing else plays it."""
    ad = obj.animation_data
    action = ad.action
    track = ad.nla_tracks.new()
    strip = track.strips.new(action.name, int(action.frame_range[0]), action)
    ad.action = None
    track.select = strip.select = True
    window = bpy.context.window_manager.windows[0]
    area = window.screen.areas[0]
    kind = area.type
    area.type = "NLA_EDITOR"  # meta strips are made by the NLA editor's operator only
    try:
        region = next(r for r in area.regions if r.type == "WINDOW")
        with bpy.context.temp_override(window=window, area=area, region=region):
            assert bpy.ops.nla.meta_add() == {"FINISHED"}
    finally:
        area.type = kind
    assert [(s.type, [x.action for x in s.strips]) for s in track.strips] == [("META", [action])]


def test_an_audit_leaves_the_values_a_user_set_on_a_rig_animated_from_a_meta_strip(bpy):
    """The same when the keys play only from a strip inside an NLA meta strip: every value the
    sandbox's evaluation wrote is put back."""
    obj, arm = keyed_bbone_chain(bpy)
    play_from_a_meta_strip(bpy, arm)
    bpy.context.scene.frame_set(1)
    _tweak_then_audit(bpy, obj, arm)


@pytest.mark.parametrize("case", ["tweaked", "excluded"])
def test_the_bind_pose_is_measured_alike_with_and_without_the_spot_checks(bpy, case):
    """With the spot checks the bind pose is measured on their copies (animation cleared), without
    them on copies of its own: the same drift either way.  A rig the view layer evaluates shows the
    B-Bone curve the user set (no drift); a rig in an excluded collection, whose stored values are
    stale, plays its animation (the curve keyed at this frame bends the rest shape)."""
    from skin_audit.blender.run.audit_scene import audit_meshes
    from skin_audit.core.audit.options import AuditOptions
    from tests.factories.blender_rigs import exclude_from_view_layer

    obj, arm = keyed_bbone_chain(bpy)
    pb = arm.pose.bones["Child"]
    pb.bbone_curveinx = 0.0  # set without a keyframe: keyed 0.3 at this frame
    if case == "excluded":
        exclude_from_view_layer((obj, arm))
    bpy.context.view_layer.update()
    drift = [audit_meshes(bpy.context, [obj], AuditOptions(shape_checks=s))[0].metrics["max_bind_drift"]
             for s in (True, False)]
    assert drift[0] == pytest.approx(drift[1], abs=1e-6)
    if case == "tweaked":
        assert drift[0] < 1e-5
    else:
        assert drift[0] > 0.1
    assert pb.bbone_curveinx == 0.0


def test_a_mesh_with_an_earlier_armature_modifier_measures_its_bind_pose_on_copies_of_its_own(bpy):
    """The spot checks' mesh copy moves only the audited modifier's armature; the bind pose moves
    every Armature modifier's to the rest, so with another one earlier in the stack the
    extraction makes its own copies, and measures what it measures alone."""
    from skin_audit.blender.read.extract import extract
    from skin_audit.blender.read.pose_check import spot_checker
    from skin_audit.blender.sandbox import sandbox

    obj, arm = posed_chain(bpy)
    earlier = obj.modifiers.new("Earlier", "ARMATURE")
    earlier.object = arm
    bpy.ops.object.select_all(action="DESELECT")
    with bpy.context.temp_override(object=obj):
        bpy.ops.object.modifier_move_to_index(modifier="Earlier", index=0)
    bpy.context.view_layer.update()
    mod = obj.modifiers["Armature"]
    assert list(obj.modifiers).index(mod) == 1
    reference = extract(obj, mod, bpy.context.evaluated_depsgraph_get())
    with sandbox() as box:
        spot_checker(obj, mod, box)
        made = len(bpy.data.objects)
        mesh = extract(obj, mod, bpy.context.evaluated_depsgraph_get(), box=box)
        # The modifier's input (the stack before it), the armature at rest and its mesh, the cleared armature.
        assert len(bpy.data.objects) - made == 4
    assert mesh.blender_at_rest is not None
    np.testing.assert_array_equal(mesh.blender_at_rest, reference.blender_at_rest)
    # Both modifiers at rest: the mesh as modelled (each adds nothing at rest).
    np.testing.assert_allclose(mesh.blender_at_rest, per_vertex_co(obj.data), atol=1e-6)


def test_the_sandboxes_kept_open_for_the_spot_checks_are_removed_after_an_error_too(bpy, monkeypatch):
    """The audit keeps each small mesh's extraction sandbox open until its checks are done; an error
    in the checks still removes every datablock it made (and so does a finished audit)."""
    from skin_audit.blender.run import audit_scene
    from skin_audit.core.audit.options import AuditOptions

    obj, _ = posed_chain(bpy)
    kinds = ("objects", "meshes", "armatures", "scenes", "node_groups")
    before = {kind: len(getattr(bpy.data, kind)) for kind in kinds}
    made: list[int] = []

    def fail(*args, **kwargs):
        made.append(len(bpy.data.scenes))  # the sandbox is there while the checks run
        raise ZeroDivisionError("planted")

    with monkeypatch.context() as patch:
        patch.setattr(audit_scene, "audit_character", fail)
        with pytest.raises(ZeroDivisionError):
            audit_scene.audit_meshes(bpy.context, [obj], AuditOptions())
    assert made == [before["scenes"] + 1]
    assert before == {kind: len(getattr(bpy.data, kind)) for kind in kinds}
    audit_scene.audit_meshes(bpy.context, [obj], AuditOptions())
    assert before == {kind: len(getattr(bpy.data, kind)) for kind in kinds}
