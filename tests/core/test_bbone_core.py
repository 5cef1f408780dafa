# SPDX-License-Identifier: GPL-3.0-or-later
"""B-Bone maths without Blender: cases whose answer is known by hand.

A straight B-Bone without handles is cut into equal segments; with no shape it moves
every point exactly as a plain bone; segment scale spaces the joints geometrically;
scale and roll in/out interpolate linearly along the joints; a point on a joint's
plane maps to that joint; dual quaternions of identical rigid joints give the rigid
transform (what LBS gives).  The Blender tier (tests/blender/test_bbone.py) checks
the same functions against Blender itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.errors import ShapeError
from skin_audit.core.maths import bbone as bb
from tests.factories import bbone_reference as ref

RNG = np.random.default_rng(7)


def rigid(angle: float, axis, offset) -> np.ndarray:
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    m = np.eye(4)
    m[:3, :3] = np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k
    m[:3, 3] = offset
    return m


REST = rigid(0.7, (1, 2, 3), (0.5, -1.0, 2.0))
LENGTH = 2.0


def apply(m, p):
    return p @ m[:3, :3].T + m[:3, 3]


def to_bone(p):
    return apply(np.linalg.inv(REST), p)


@pytest.mark.parametrize("segments", [2, 4, 7, 16])
def test_straight_bone_is_a_uniform_subdivision(segments):
    rest, pose = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments))
    expected = np.tile(np.eye(4), (segments + 1, 1, 1))
    expected[:, 1, 3] = LENGTH * np.arange(segments + 1) / segments
    np.testing.assert_allclose(rest, expected, atol=1e-12)
    np.testing.assert_allclose(pose, expected, atol=1e-12)


@pytest.mark.parametrize("segments", [1, 5])
def test_unshaped_bbone_moves_points_as_the_plain_bone(segments):
    """segments = 1 (Blender then uses the plain bone), and any S without handles or shape."""
    bone = bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments)
    channel = rigid(1.1, (0.3, -1, 0.2), (0.1, 0.4, -0.3))
    pose = channel @ REST
    rest_seg, pose_seg = ref.bbone_segment_matrices(bone, pose)
    deform = bb.bbone_deform_matrices(REST, channel, rest_seg, pose_seg)
    np.testing.assert_allclose(deform, np.broadcast_to(channel, deform.shape), atol=1e-12)
    points = apply(REST, RNG.uniform(-1, 3, (50, 3)))
    idx, blend = bb.segment_index_and_blend(to_bone(points), LENGTH, rest_seg)
    m = bb.blended_segment_matrices(idx, blend, deform)
    np.testing.assert_allclose(np.einsum("vij,vj->vi", m[:, :3, :3], points) + m[:, :3, 3],
                               apply(channel, points), atol=1e-12)


@pytest.mark.parametrize("mode", [bb.STRAIGHT, bb.CURVED])
def test_point_on_a_joint_maps_to_that_joint(mode):
    segments = 4
    rest_seg, _ = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments))
    ys = LENGTH * np.arange(segments + 1) / segments
    co = np.column_stack([np.zeros(segments + 1), ys, np.zeros(segments + 1)])
    idx, blend = bb.segment_index_and_blend(co, LENGTH, rest_seg, mode)
    # On joint k: index k with no blend, except the tail, the last segment's far end.
    np.testing.assert_array_equal(idx, [0, 1, 2, 3, 3])
    np.testing.assert_allclose(blend, [0, 0, 0, 0, 1], atol=1e-12)
    # Beyond the ends the mapping clamps to the end joints.
    idx, blend = bb.segment_index_and_blend(np.array([[0, -1.0, 0], [0, 5.0, 0]]), LENGTH, rest_seg, mode)
    np.testing.assert_array_equal(idx, [0, 3])
    np.testing.assert_allclose(blend, [0, 1])


def test_straight_mapping_is_linear_along_the_bone():
    rest_seg, _ = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=8))
    co = np.array([[0.3, 0.35, -0.2]])  # 0.35 / 2 * 8 = 1.4 -> segment 1, blend 0.4
    idx, blend = bb.segment_index_and_blend(co, LENGTH, rest_seg)
    assert idx[0] == 1 and blend[0] == pytest.approx(0.4)


def test_segment_scale_spaces_joints_geometrically():
    """scale_in.y = 1, scale_out.y = 4: segment i's length ~ exp(lerp(log 4, log 1, i / (S - 1)))."""
    segments = 4
    shape = bb.BBoneShape(scale_out=(1.0, 4.0, 1.0))
    rest, _ = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments, shape=shape))
    fac = np.arange(segments) / (segments - 1)
    weights = np.exp(fac * math.log(4.0))
    expected = LENGTH * np.concatenate([[0], np.cumsum(weights)]) / weights.sum()
    np.testing.assert_allclose(rest[:, 1, 3], expected, atol=1e-12)


def test_scale_and_roll_interpolate_along_the_joints():
    segments = 5
    shape = bb.BBoneShape(scale_in=(2.0, 1.0, 0.5), scale_out=(1.0, 1.0, 3.0), roll_in=0.2, roll_out=-0.6)
    rest, _ = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments, shape=shape))
    for a in range(segments + 1):
        f = a / segments
        sx, sz = f * 1.0 + (1 - f) * 2.0, f * 3.0 + (1 - f) * 0.5
        roll = f * -0.6 + (1 - f) * 0.2
        c, s = math.cos(roll), math.sin(roll)
        # A roll about Y: x -> (c, 0, -s), z -> (s, 0, c).
        np.testing.assert_allclose(rest[a, :3, 0], sx * np.array([c, 0, -s]), atol=1e-12)
        np.testing.assert_allclose(rest[a, :3, 2], sz * np.array([s, 0, c]), atol=1e-12)


def test_dual_quaternions_of_identical_rigid_joints_equal_lbs():
    segments = 6
    rest_seg, _ = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments))
    channel = rigid(2.0, (1, 1, -0.5), (1.0, 0.0, 0.5))
    deform = np.broadcast_to(channel, (segments + 1, 4, 4)).copy()
    quats = bb.segment_dual_quaternions(REST, rest_seg, deform)
    assert not quats.scaled.any()
    points = apply(REST, RNG.uniform(-0.5, 2.5, (40, 3)))
    weight = RNG.uniform(0.2, 1.0, 40)
    idx, blend = bb.segment_index_and_blend(to_bone(points), LENGTH, rest_seg)
    real, dual = bb.accumulate_bbone_dual(np.zeros((40, 4)), np.zeros((40, 4)), points, weight, idx, blend, quats)
    dqs = ref.dual_transform(points, real, dual, weight)
    m = bb.blended_segment_matrices(idx, blend, deform)
    lbs = np.einsum("vij,vj->vi", m[:, :3, :3], points) + m[:, :3, 3]
    np.testing.assert_allclose(dqs, lbs, atol=1e-12)
    np.testing.assert_allclose(dqs, apply(channel, points), atol=1e-12)


def test_scaled_joint_keeps_its_scale_under_dual_quaternions():
    """A uniformly scaled joint (scale about the bone's head) is reproduced exactly by the pivot term."""
    segments = 3
    rest_seg, _ = ref.bbone_segment_matrices(bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments))
    scale = REST @ np.diag([1.5, 1.5, 1.5, 1.0]) @ np.linalg.inv(REST)
    deform = np.broadcast_to(scale, (segments + 1, 4, 4)).copy()
    quats = bb.segment_dual_quaternions(REST, rest_seg, deform)
    assert quats.scaled.all()
    points = apply(REST, RNG.uniform(0, 2, (10, 3)))
    idx, blend = bb.segment_index_and_blend(to_bone(points), LENGTH, rest_seg)
    real, dual = bb.accumulate_bbone_dual(np.zeros((10, 4)), np.zeros((10, 4)), points, np.ones(10), idx, blend,
                                          quats)
    np.testing.assert_allclose(ref.dual_transform(points, real, dual, np.ones(10)), apply(scale, points), atol=1e-12)


def test_bad_shapes_are_reported():
    with pytest.raises(ShapeError, match="co_bone"):
        bb.segment_index_and_blend(np.zeros((3, 2)), 1.0, np.tile(np.eye(4), (3, 1, 1)))
    with pytest.raises(ShapeError, match="mapping_mode"):
        bb.segment_index_and_blend(np.zeros((3, 3)), 1.0, np.tile(np.eye(4), (3, 1, 1)), "BENT")
    with pytest.raises(ShapeError, match="rest_segments"):
        bb.bbone_deform_matrices(np.eye(4), np.eye(4), np.eye(4), np.eye(4))


def test_vertex_matrices_follow_the_handles_in_numpy():
    """A chain's middle B-Bone: moving the end handle bends it; vertex_matrices of the
    reposed spline move a point on the bone's axis onto the bent curve's joint."""
    segments = 4
    nxt_rest = REST @ rigid(0.0, (0, 0, 1), (0, LENGTH, 0))
    handle = bb.BBoneHandle(rest=nxt_rest, pose=nxt_rest, length=1.0, segments=1)
    bone = bb.BBoneSpline(rest=REST, length=LENGTH, segments=segments, next=handle)
    rest_seg, _ = ref.bbone_segment_matrices(bone)
    # The handle bone swings 90 degrees about the bone's local X at the tail.
    swung = nxt_rest @ rigid(math.pi / 2, (1, 0, 0), (0, 0, 0))
    moved = ref.posed_spline(bone, None, swung)
    _, pose_seg = ref.bbone_segment_matrices(moved, REST)
    joint = LENGTH / 2  # on joint 2
    co = apply(REST, np.array([[0.0, joint, 0.0]]))
    m = ref.vertex_matrices(co, moved, np.eye(4), rest_seg, pose_seg)
    expected = apply(REST, pose_seg[2, :3, 3][None])
    np.testing.assert_allclose(apply(m[0], co), expected, atol=1e-12)
    assert np.linalg.norm(expected - co) > 1e-3  # the handle really bent the bone
