# SPDX-License-Identifier: GPL-3.0-or-later
"""Dual quaternion skinning (Kavan et al. 2007): quaternion conversions, antipodality,
rigidity, agreement with LBS where it must agree, and the twisted cylinder's radius."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.errors import NotRigidError
from skin_audit.core.maths.dqs import (
    apply_dual_quaternions,
    blend_dual_quaternions,
    dual_quaternion_skinning,
    matrix_to_dual_quaternion,
    matrix_to_quaternion,
    quaternion_multiply,
    quaternion_to_matrix,
)
from skin_audit.core.maths.lbs import linear_blend_skinning
from skin_audit.core.twist.checks import dqs_twist_positions
from skin_audit.core.twist.cylinder import build_cylinder, linear_height_weights
from skin_audit.core.twist.seed import seed_skin

RNG = np.random.default_rng(2007)


def rodrigues(axis, angle: float) -> np.ndarray:
    """3x3 rotation by Rodrigues' formula, written here as independent truth."""
    x, y, z = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def axis_angle_quaternion(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2.0)], np.sin(angle / 2.0) * a])


def rotations_with_half_turns() -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) axes and (N,) angles: random ones, 180-degree turns about random and principal
    axes (where w = 0 and the trace is -1), tiny ones and the identity."""
    axes = [RNG.normal(size=3) for _ in range(40)] + [np.eye(3)[i] for i in range(3)]
    axes += [np.array([1.0, 1.0, 0.0]), np.array([1.0, -2.0, 3.0]), np.array([0.0, 0.0, 1.0])]
    angles = list(RNG.uniform(-np.pi, np.pi, size=40)) + [np.pi] * 5 + [0.0]
    axes += [RNG.normal(size=3) for _ in range(6)]
    angles += [np.pi, np.pi, -np.pi, 1e-9, np.pi - 1e-9, 3.0]
    return np.array(axes), np.array(angles)


def rigid(rot3: np.ndarray, t) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rot3, t
    return m


def test_quaternion_to_matrix_matches_rodrigues():
    axes, angles = rotations_with_half_turns()
    q = np.array([axis_angle_quaternion(a, t) for a, t in zip(axes, angles, strict=True)])
    expected = np.array([rodrigues(a, t) for a, t in zip(axes, angles, strict=True)])
    np.testing.assert_allclose(quaternion_to_matrix(q), expected, rtol=0, atol=1e-14)


def test_matrix_to_quaternion_round_trip_including_half_turns():
    axes, angles = rotations_with_half_turns()
    mats = np.array([rodrigues(a, t) for a, t in zip(axes, angles, strict=True)])
    q = matrix_to_quaternion(mats)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, rtol=0, atol=1e-15)
    assert (q[:, 0] >= 0).all()
    # q and -q are the same rotation: compare with the hand-built quaternion up to sign.
    truth = np.array([axis_angle_quaternion(a, t) for a, t in zip(axes, angles, strict=True)])
    sign = np.where(np.sum(q * truth, axis=1) < 0, -1.0, 1.0)[:, None]
    np.testing.assert_allclose(q, sign * truth, rtol=0, atol=1e-12)
    np.testing.assert_allclose(quaternion_to_matrix(q), mats, rtol=0, atol=1e-14)


def test_matrix_to_quaternion_of_rz_by_hand():
    for theta in (0.0, 0.5, np.pi / 2.0, np.pi):
        q = matrix_to_quaternion(rodrigues([0, 0, 1], theta))
        np.testing.assert_allclose(q, [np.cos(theta / 2), 0.0, 0.0, np.sin(theta / 2)], atol=1e-15)


def test_quaternion_multiply_composes_rotations():
    a, b = axis_angle_quaternion([1, 2, 3], 0.7), axis_angle_quaternion([-1, 0, 2], 2.9)
    np.testing.assert_allclose(quaternion_to_matrix(quaternion_multiply(a, b)),
                               rodrigues([1, 2, 3], 0.7) @ rodrigues([-1, 0, 2], 2.9), atol=1e-14)
    # i j = k, j i = -k: the Hamilton convention.
    i, j = np.array([0.0, 1, 0, 0]), np.array([0.0, 0, 1, 0])
    np.testing.assert_array_equal(quaternion_multiply(i, j), [0, 0, 0, 1])
    np.testing.assert_array_equal(quaternion_multiply(j, i), [0, 0, 0, -1])


def test_dual_quaternion_of_a_rigid_matrix_moves_points_like_the_matrix():
    axes, angles = rotations_with_half_turns()
    mats = np.array([rigid(rodrigues(a, t), RNG.uniform(-4, 4, 3))
                     for a, t in zip(axes, angles, strict=True)])
    dq = matrix_to_dual_quaternion(mats)
    np.testing.assert_allclose(np.linalg.norm(dq[:, :4], axis=1), 1.0, atol=1e-15)
    # Unit dual quaternion: real part orthogonal to dual part.
    np.testing.assert_allclose(np.sum(dq[:, :4] * dq[:, 4:], axis=1), 0.0, atol=1e-14)
    p = RNG.uniform(-2, 2, size=(len(mats), 3))
    expected = np.einsum("nij,nj->ni", mats[:, :3, :3], p) + mats[:, :3, 3]
    np.testing.assert_allclose(apply_dual_quaternions(dq, p), expected, rtol=0, atol=1e-13)


def test_single_influence_vertices_follow_their_matrix_exactly():
    skin = np.array([rigid(rodrigues(RNG.normal(size=3), a), RNG.uniform(-3, 3, 3))
                     for a in (0.3, np.pi, -2.0, 1.0)])
    points = RNG.uniform(-2, 2, size=(40, 3))
    joint = RNG.integers(0, 4, size=40)
    # Second slot with weight 0 pointing at another joint: it must not matter.
    idx = np.column_stack([joint, (joint + 1) % 4])
    w = np.tile([1.0, 0.0], (40, 1))
    expected = np.einsum("vij,vj->vi", skin[joint, :3, :3], points) + skin[joint, :3, 3]
    np.testing.assert_allclose(dual_quaternion_skinning(points, idx, w, skin), expected, rtol=0, atol=1e-13)


def test_dqs_equals_lbs_when_all_influences_share_one_rigid_transform():
    m = rigid(rodrigues([0.3, -1.0, 0.5], 2.2), [1.0, -2.0, 0.5])
    skin = np.stack([m, m, m])
    points = RNG.uniform(-2, 2, size=(30, 3))
    idx = RNG.integers(0, 3, size=(30, 3))
    w = RNG.dirichlet(np.ones(3), size=30)
    w[:, -1] = 1.0 - w[:, :-1].sum(axis=1)
    np.testing.assert_allclose(dual_quaternion_skinning(points, idx, w, skin),
                               linear_blend_skinning(points, idx, w, skin), rtol=0, atol=1e-13)


def test_antipodal_representation_of_a_joint_gives_the_same_result():
    skin = np.stack([np.eye(4), rigid(rodrigues([0, 0, 1], 2.5), [0.5, 0.0, 1.0]),
                     rigid(rodrigues([1, 1, 0], np.pi), [0.0, 1.0, 0.0])])
    dual = matrix_to_dual_quaternion(skin)
    points = RNG.uniform(-1, 1, size=(20, 3))
    idx = np.tile([0, 1, 2], (20, 1))
    w = RNG.dirichlet(np.ones(3), size=20)
    w[:, -1] = 1.0 - w[:, :-1].sum(axis=1)
    reference = apply_dual_quaternions(blend_dual_quaternions(idx, w, dual), points)
    for j in range(3):
        flipped = dual.copy()
        flipped[j] *= -1.0  # -q~ is the same rigid transform as q~
        out = apply_dual_quaternions(blend_dual_quaternions(idx, w, flipped), points)
        np.testing.assert_allclose(out, reference, rtol=0, atol=1e-14)


def test_without_sign_correction_antipodal_joints_would_cancel():
    # Shows the previous test can fail: a naive blend of q and -q (weights 1/2) is zero.
    dual = matrix_to_dual_quaternion(np.stack([np.eye(4), np.eye(4)]))
    dual[1] *= -1.0
    naive = 0.5 * dual[0] + 0.5 * dual[1]
    np.testing.assert_array_equal(naive, np.zeros(8))
    blended = blend_dual_quaternions(np.array([[0, 1]]), np.array([[0.5, 0.5]]), dual)
    np.testing.assert_allclose(np.abs(blended[0]), [1, 0, 0, 0, 0, 0, 0, 0], atol=1e-15)


def test_blended_dual_quaternions_are_unit():
    skin = np.array([rigid(rodrigues(RNG.normal(size=3), a), RNG.uniform(-3, 3, 3))
                     for a in (0.1, 3.0, -2.0)])
    idx = RNG.integers(0, 3, size=(25, 3))
    w = RNG.dirichlet(np.ones(3), size=25)
    b = blend_dual_quaternions(idx, w, matrix_to_dual_quaternion(skin))
    np.testing.assert_allclose(np.linalg.norm(b[:, :4], axis=1), 1.0, atol=1e-15)


def test_dqs_keeps_the_mid_ring_radius_at_180_degrees():
    cyl = build_cylinder()
    idx, w = linear_height_weights(cyl.vertices)
    for deg in (90.0, 180.0):
        out = dual_quaternion_skinning(cyl.vertices, idx, w, seed_skin(np.radians(deg)))
        np.testing.assert_allclose(np.hypot(out[:, 0], out[:, 1]), 1.0, rtol=0, atol=1e-15)
        np.testing.assert_allclose(out[:, 2], cyl.vertices[:, 2], rtol=0, atol=1e-15)
    # Hand value: the mid ring (w = 1/2) turns by half of 180 degrees, so (1, 0, 1) -> (0, 1, 1).
    mid = np.flatnonzero(np.all(np.isclose(cyl.vertices, [1.0, 0.0, 1.0]), axis=1))
    assert mid.size == 1
    np.testing.assert_allclose(out[mid[0]], [0.0, 1.0, 1.0], atol=1e-15)


@pytest.mark.parametrize("deg", [0.0, 45.0, 90.0, 120.0, 180.0, 270.0])
def test_dqs_on_the_cylinder_matches_the_closed_form_rotation(deg):
    cyl = build_cylinder()
    idx, w = linear_height_weights(cyl.vertices)
    theta = np.radians(deg)
    out = dual_quaternion_skinning(cyl.vertices, idx, w, seed_skin(theta))
    np.testing.assert_allclose(out, dqs_twist_positions(cyl.vertices, w[:, 1], theta), rtol=0, atol=1e-15)


def test_dqs_twist_closed_form_by_hand_at_a_quarter_weight():
    # w = 1/4, theta = 120 deg: blended quaternion (3/4 + 1/4 cos 60, 0, 0, 1/4 sin 60), angle = 2 atan2.
    expected = 2.0 * np.arctan2(0.25 * np.sqrt(3) / 2, 0.75 + 0.25 * 0.5)
    out = dqs_twist_positions(np.array([[2.0, 0.0, 0.5]]), np.array([0.25]), np.radians(120.0))
    np.testing.assert_allclose(out, [[2 * np.cos(expected), 2 * np.sin(expected), 0.5]], atol=1e-15)


def test_non_rigid_skin_is_rejected_naming_the_joint():
    skin = np.stack([np.eye(4), np.diag([1.0, 1.0, 1.5, 1.0]), np.eye(4)])
    p = np.zeros((2, 3))
    with pytest.raises(NotRigidError, match=r"skinning matrix\[1\] is not a rigid transform"):
        dual_quaternion_skinning(p, [[0, 2], [1, 2]], [[0.5, 0.5], [0.5, 0.5]], skin)
    with pytest.raises(NotRigidError, match=r"det R = -1"):
        dual_quaternion_skinning(p, [[0, 2], [1, 2]], [[0.5, 0.5], [0.5, 0.5]],
                                 np.stack([np.eye(4), np.eye(4), np.diag([-1.0, 1.0, 1.0, 1.0])]))
