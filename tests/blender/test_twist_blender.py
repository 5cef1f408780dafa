# SPDX-License-Identifier: GPL-3.0-or-later
"""The twist experiment against the real Blender: the Armature modifier evaluated
through the depsgraph, the project's numpy recomputation, and closed forms
computed here from ``math``.

Truth in this file is independent of the code under test: positions and radii
come from the closed forms (LBS ``p' = (1 - w) p + w Rz(theta) p``, DQS a rigid
rotation by the blended quaternion's angle), and Blender's deformation is read
straight from ``obj.evaluated_get(depsgraph).data.vertices``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.tolerances import float32_tolerance

pytestmark = [pytest.mark.blender, pytest.mark.blender42, pytest.mark.usefixtures("empty_scene")]

ANGLES = (0.0, 90.0, 120.0, 180.0)
RINGS, SEGMENTS, HEIGHT = 9, 24, 2.0
#: The cylinder's bounding size (diameter 2, height 2) sets the float32 tolerance.
TOL32 = float32_tolerance(2.0)


# ---------------------------------------------------------------- own helpers


def own_vertices(mesh) -> np.ndarray:
    """(V, 3) float64 from ``mesh.vertices``, one ``co`` at a time (not the project's reader)."""
    return np.array([tuple(v.co) for v in mesh.vertices], dtype=np.float64)


def own_evaluated(bpy, obj) -> np.ndarray:
    """(V, 3) world positions after the modifier stack, read by hand from the depsgraph."""
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = obj.evaluated_get(depsgraph)
    world = np.array(evaluated.matrix_world, dtype=np.float64)
    local = own_vertices(evaluated.data)
    return local @ world[:3, :3].T + world[:3, 3]


def own_world_vertices(obj) -> np.ndarray:
    world = np.array(obj.matrix_world, dtype=np.float64)
    return own_vertices(obj.data) @ world[:3, :3].T + world[:3, 3]


def rotate_z(points: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    x, y = points[:, 0], points[:, 1]
    return np.column_stack([c * x - s * y, s * x + c * y, points[:, 2]])


def lbs_closed_form(bind: np.ndarray, theta: float) -> np.ndarray:
    """Root static, child Rz(theta), child weight z/2: ``(1 - w) p + w Rz(theta) p``."""
    w = (bind[:, 2] / HEIGHT)[:, None]
    return (1.0 - w) * bind + w * rotate_z(bind, theta)


def dqs_closed_form(bind: np.ndarray, theta: float) -> np.ndarray:
    """Blend of the identity and Rz(theta) as unit quaternions: Rz(2 atan2(w s, 1 - w + w c))."""
    w = bind[:, 2] / HEIGHT
    half = theta / 2.0
    return rotate_z(bind, 2.0 * np.arctan2(w * math.sin(half), 1.0 - w + w * math.cos(half)))


def radius(points: np.ndarray) -> np.ndarray:
    return np.hypot(points[:, 0], points[:, 1])


def mid_ring(bind: np.ndarray) -> np.ndarray:
    """Vertices at z = 1, where both bones weigh 1/2."""
    return np.flatnonzero(np.abs(bind[:, 2] - HEIGHT / 2.0) < 1e-6)


def degenerate_count(points: np.ndarray, triangles: np.ndarray, bind: np.ndarray) -> int:
    """Triangles whose area fell below 1e-6 of the mean bind area.

    Measured on this rig: at 180 degrees 48 triangles have area <= 1e-15 of the
    mean and the next smallest 0.35, so the threshold sits in a wide gap.
    """

    def areas(p):
        a, b, c = (p[triangles[:, k]] for k in range(3))
        return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)

    return int((areas(points) < 1e-6 * areas(bind).mean()).sum())


def set_child_twist(rig, degrees: float) -> None:
    """Rotate the child about its own Y axis (the cylinder axis), written out here."""
    pose_bone = rig.armature.pose.bones["Child"]
    pose_bone.rotation_mode = "QUATERNION"
    half = math.radians(degrees) / 2.0
    pose_bone.rotation_quaternion = (math.cos(half), 0.0, math.sin(half), 0.0)


# ------------------------------------------------------------------- fixtures


@pytest.fixture
def rig(bpy, empty_scene):
    from skin_audit.blender.build import twist_rig as demo_rig

    return demo_rig.build_demo_rig()


@pytest.fixture
def run(bpy, empty_scene):
    """The experiment at 0/90/120/180 degrees with both methods (its results are plain arrays)."""
    from skin_audit.blender.run.twist_run import run_twist_experiment

    return run_twist_experiment(ANGLES, ("lbs", "dqs"))


def poses_of(run, method: str):
    poses = [p for p in run.scene.poses if p.method == method]
    assert [p.angle_deg for p in poses] == list(ANGLES)
    return poses


# ---------------------------------------------------------------------- tests


def test_modifier_matches_numpy_recomputation(run):
    scene = run.scene
    assert {(p.method, p.angle_deg) for p in scene.poses} == {(m, a) for m in ("lbs", "dqs") for a in ANGLES}
    assert float(np.ptp(scene.bind_vertices, axis=0).max()) == pytest.approx(2.0, abs=1e-6)
    assert np.abs(scene.bind @ scene.bind_inverse - np.eye(4)).max() < 1e-6
    for pose in scene.poses:
        assert np.abs(pose.skin - pose.current @ scene.bind_inverse).max() < 1e-12  # C = G B^-1
        diff = np.abs(pose.numpy_positions - pose.blender_positions).max()
        assert diff <= TOL32, f"{pose.method} {pose.angle_deg}: numpy vs Blender {diff:.3g}"
        if pose.method == "lbs":
            # The project's numpy LBS against a plain sum over joints of w_j C_j p, from the same matrices.
            mine = np.zeros_like(scene.bind_vertices)
            for k in range(scene.indices.shape[1]):
                c = pose.skin[scene.indices[:, k]]  # (V, 4, 4)
                moved = np.einsum("vij,vj->vi", c[:, :3, :3], scene.bind_vertices) + c[:, :3, 3]
                mine += scene.weights[:, k, None] * moved
            assert np.abs(mine - pose.numpy_positions).max() < 1e-12


def test_lbs_mid_ring_follows_cos_half_theta(run):
    bind = run.scene.bind_vertices
    mid = mid_ring(bind)
    assert len(mid) == SEGMENTS
    for pose in poses_of(run, "lbs"):
        theta = math.radians(pose.angle_deg)
        expected = abs(math.cos(theta / 2.0))
        got = radius(pose.blender_positions[mid])
        assert np.abs(got - expected).max() <= TOL32, (pose.angle_deg, got.min(), got.max(), expected)
        assert np.abs(radius(pose.numpy_positions[mid]) - expected).max() <= TOL32
        # Every vertex, not only the mid ring, sits on the closed form.
        assert np.abs(pose.blender_positions - lbs_closed_form(bind, theta)).max() <= TOL32


def test_bind_pose_does_not_drift(run):
    assert {b.method for b in run.binds} == {"lbs", "dqs"}
    for b in run.binds:
        assert b.numpy_drift < 1e-12
        assert b.blender_drift <= TOL32
    bind = run.scene.bind_vertices
    for pose in run.scene.poses:
        if pose.angle_deg == 0.0:
            assert np.abs(pose.numpy_positions - bind).max() < 1e-12
            assert np.abs(pose.blender_positions - bind).max() <= TOL32


def test_lbs_180_collapses_48_triangles(run):
    scene = run.scene
    assert len(scene.triangles) == 384
    assert degenerate_count(scene.bind_vertices, scene.triangles, scene.bind_vertices) == 0
    expected = {0.0: 0, 90.0: 0, 120.0: 0, 180.0: 48}
    for pose in poses_of(run, "lbs"):
        want = expected[pose.angle_deg]
        assert degenerate_count(pose.blender_positions, scene.triangles, scene.bind_vertices) == want
        assert degenerate_count(pose.numpy_positions, scene.triangles, scene.bind_vertices) == want
    reported = {c.angle_deg: (c.degenerate_numpy, c.degenerate_blender)
                for c in run.checks if c.method == "lbs"}
    assert reported[180.0] == (48, 48)
    assert reported[90.0] == (0, 0)
    for pose in poses_of(run, "dqs"):
        assert degenerate_count(pose.blender_positions, scene.triangles, scene.bind_vertices) == 0


def test_dqs_keeps_the_radius(run):
    bind = run.scene.bind_vertices
    mid = mid_ring(bind)
    for pose in poses_of(run, "dqs"):
        theta = math.radians(pose.angle_deg)
        # r'/r: the bind radii themselves are float32 values (cos, sin of the ring angles).
        assert np.abs(radius(pose.numpy_positions[mid]) / radius(bind[mid]) - 1.0).max() < 1e-12
        assert np.abs(radius(pose.blender_positions[mid]) - 1.0).max() < 1e-6
        assert np.abs(radius(pose.blender_positions) - radius(bind)).max() < 1e-6
        assert np.abs(pose.numpy_positions - pose.blender_positions).max() <= TOL32
        if pose.angle_deg < 180.0:  # at exactly 180 the blend's direction is a tie
            assert np.abs(pose.blender_positions - dqs_closed_form(bind, theta)).max() <= TOL32


def test_demo_rig_structure(bpy, rig):
    mesh, arm = rig.mesh, rig.armature
    assert len(mesh.data.vertices) == RINGS * SEGMENTS == 216
    mesh.data.calc_loop_triangles()
    assert len(mesh.data.loop_triangles) == 384
    assert all(len(p.vertices) == 3 for p in mesh.data.polygons) and len(mesh.data.polygons) == 384

    bind = own_world_vertices(mesh)
    assert np.abs(radius(bind) - 1.0).max() < 1e-6
    heights = np.unique(np.round(bind[:, 2], 6))
    assert heights.tolist() == pytest.approx(np.linspace(0.0, HEIGHT, RINGS).tolist(), abs=1e-6)

    bones = arm.data.bones
    assert [b.name for b in bones] == ["Root", "Child"]
    assert bones["Root"].parent is None and bones["Child"].parent.name == "Root"
    for b in bones:  # both bones on the cylinder axis, root below child
        for point in (b.head_local, b.tail_local):
            assert math.hypot(point.x, point.y) < 1e-6
    assert bones["Root"].head_local.z < bones["Child"].head_local.z

    assert sorted(g.name for g in mesh.vertex_groups) == ["Child", "Root"]
    index = {g.index: g.name for g in mesh.vertex_groups}
    for v in mesh.data.vertices:
        weights = {index[g.group]: g.weight for g in v.groups}
        w = v.co.z / 2.0
        assert weights.get("Child", 0.0) == pytest.approx(w, abs=1e-7), v.index
        assert weights.get("Root", 0.0) == pytest.approx(1.0 - w, abs=1e-7), v.index

    mods = [m for m in mesh.modifiers if m.type == "ARMATURE"]
    assert len(mods) == 1
    assert mods[0].object == arm and mods[0].use_vertex_groups
    # In the rest pose the modifier leaves the mesh where it is.
    assert np.abs(own_evaluated(bpy, mesh) - bind).max() <= TOL32


def test_building_twice_leaves_one_rig(bpy):
    from skin_audit.blender.build import twist_rig as demo_rig

    demo_rig.build_demo_rig()
    rig = demo_rig.build_demo_rig()
    assert sorted(o.type for o in bpy.data.objects) == ["ARMATURE", "MESH"]
    assert len(bpy.data.meshes) == 1 and len(bpy.data.armatures) == 1
    assert rig.mesh.data == bpy.data.meshes[0] and rig.armature.data == bpy.data.armatures[0]
    for block in (*bpy.data.objects, *bpy.data.meshes, *bpy.data.armatures):
        assert ".0" not in block.name, f"duplicate left behind: {block.name}"
        assert block.users > 0, f"orphan left behind: {block.name}"
    assert demo_rig.find_demo_rig(bpy.context.scene) == rig


@pytest.mark.parametrize(
    ("rotation_mode", "pose_position", "preserve_volume"),
    [("QUATERNION", "POSE", True), ("XYZ", "REST", False)],
)
def test_run_restores_the_users_state(bpy, rig, rotation_mode, pose_position, preserve_volume):
    from skin_audit.blender.run.twist_run import run_twist_experiment

    child = rig.armature.pose.bones["Child"]
    child.rotation_mode = rotation_mode
    quaternion = (math.cos(0.3), 0.0, math.sin(0.3), 0.0)
    child.rotation_quaternion = quaternion
    child.rotation_euler = (0.1, 0.2, 0.3)
    rig.armature.data.pose_position = pose_position
    rig.modifier.use_deform_preserve_volume = preserve_volume
    before = own_evaluated(bpy, rig.mesh)

    run_twist_experiment(ANGLES, ("lbs", "dqs"), rig=rig)

    assert child.rotation_mode == rotation_mode
    assert tuple(child.rotation_quaternion) == pytest.approx(quaternion, abs=1e-7)
    assert tuple(child.rotation_euler) == pytest.approx((0.1, 0.2, 0.3), abs=1e-7)
    assert rig.armature.data.pose_position == pose_position
    assert rig.modifier.use_deform_preserve_volume is preserve_volume
    assert np.array_equal(own_evaluated(bpy, rig.mesh), before)


@pytest.mark.parametrize("preserve_volume", [False, True], ids=["lbs", "dqs"])
@pytest.mark.parametrize("degrees", ANGLES)
def test_control_blender_deformation_against_closed_form(bpy, rig, degrees, preserve_volume):
    """Pose and read Blender by hand; judge with the closed form and with Blender's own matrices."""
    rig.modifier.use_deform_preserve_volume = preserve_volume
    set_child_twist(rig, degrees)
    bind = own_world_vertices(rig.mesh)
    got = own_evaluated(bpy, rig.mesh)
    theta = math.radians(degrees)
    mid = mid_ring(bind)
    if preserve_volume:
        assert np.abs(radius(got) - radius(bind)).max() < 1e-6
        if degrees < 180.0:
            assert np.abs(got - dqs_closed_form(bind, theta)).max() <= TOL32
        return
    assert np.abs(got - lbs_closed_form(bind, theta)).max() <= TOL32
    assert np.abs(radius(got[mid]) - abs(math.cos(theta / 2.0))).max() <= TOL32
    assert np.abs(got[:, 2] - bind[:, 2]).max() <= TOL32

    # Blender's armature_deform.cc: co' = sum_j w_j C_j co with C_j = pose_bone.matrix @ bone.matrix_local^-1, from
    # Blender's own matrices (the mesh is parented to the armature; both at the origin).
    arm = rig.armature
    assert np.allclose(np.array(arm.matrix_world), np.eye(4))
    assert np.allclose(np.array(rig.mesh.matrix_world), np.eye(4))
    names = {g.index: g.name for g in rig.mesh.vertex_groups}
    skin = {
        pb.name: np.array(pb.matrix @ arm.data.bones[pb.name].matrix_local.inverted(), dtype=np.float64)
        for pb in arm.pose.bones
    }
    mine = np.zeros_like(bind)
    for v in rig.mesh.data.vertices:
        p = np.append(bind[v.index], 1.0)
        mine[v.index] = sum(g.weight * (skin[names[g.group]] @ p)[:3] for g in v.groups)
    assert np.abs(mine - got).max() <= TOL32


def test_read_armature_matches_pose_bone_matrix(bpy, rig):
    """foreach_get flattens matrices column by column; the reader must give np.array(matrix) back."""
    from mathutils import Euler, Matrix

    from skin_audit.blender.read import arrays as read

    arm = rig.armature
    arm.matrix_world = Matrix.Translation((0.5, -1.0, 2.0)) @ Euler((0.3, -0.2, 0.7)).to_matrix().to_4x4()
    root = arm.pose.bones["Root"]
    root.location = (0.1, 0.2, -0.3)
    root.rotation_mode = "XYZ"
    root.rotation_euler = (0.4, 0.1, -0.5)
    set_child_twist(rig, 120.0)
    bpy.context.view_layer.update()

    state = read.read_armature(arm)
    world = np.array(arm.matrix_world, dtype=np.float64)
    assert np.abs(state.object_world - world).max() < 1e-6
    assert state.names == ("Root", "Child") and state.parents == (-1, 0)
    assert state.use_deform.tolist() == [True, True]
    for j, name in enumerate(state.names):
        pose = np.array(arm.pose.bones[name].matrix, dtype=np.float64)
        rest = np.array(arm.data.bones[name].matrix_local, dtype=np.float64)
        # Non-symmetric matrices, so a missing or extra transpose cannot pass.
        assert np.abs(pose - pose.T).max() > 0.1 and np.abs(rest - rest.T).max() > 0.1
        assert np.abs(state.current[j] - world @ pose).max() < 1e-6, name
        assert np.abs(state.bind[j] - world @ rest).max() < 1e-6, name
