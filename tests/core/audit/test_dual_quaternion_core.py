# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's mat4_to_dquat as the recomputation models it, by its defining properties
(core tier): the rigid part keeps the bone's Y axis, the scale part folded in at the vertex
restores the whole matrix, and a rigid channel has no scale part."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit.armature_modifier import _orthogonalize_keep_y, blender_dual_quaternion
from skin_audit.core.maths.quaternions import quaternion_multiply, quaternion_to_matrix
from tests.factories import numpy_rigs as nr

RNG_SEEDS = (1, 2, 3)


def random_affine(rng: np.random.Generator) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rng.normal(size=(3, 3)) * 0.3 + np.diag([1.2, 0.9, 1.1])
    m[:3, 3] = rng.normal(size=3)
    return m


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_orthogonalize_keeps_y_and_column_lengths(seed):
    m = random_affine(np.random.default_rng(seed))
    out = _orthogonalize_keep_y(m)
    cols, before = out[:3, :3], m[:3, :3]
    np.testing.assert_allclose(np.linalg.norm(cols, axis=0), np.linalg.norm(before, axis=0), rtol=1e-12)
    unit = cols / np.linalg.norm(cols, axis=0)
    np.testing.assert_allclose(unit.T @ unit, np.eye(3), atol=1e-12)  # orthogonal columns
    assert np.linalg.det(unit) == pytest.approx(1.0)  # right-handed
    y = before[:, 1] / np.linalg.norm(before[:, 1])
    np.testing.assert_allclose(unit[:, 1], y, atol=1e-12)  # Y keeps its direction
    # X stays in the plane of the old X and Y, on the same side.
    assert abs(np.dot(unit[:, 0], np.cross(before[:, 0], before[:, 1]))) < 1e-12
    assert np.dot(unit[:, 0], before[:, 0]) > 0
    np.testing.assert_array_equal(out[:, 3], m[:, 3])


def rigid_matrix(dq) -> np.ndarray:
    """(4, 4) of a unit dual quaternion: rotation of ``real``, translation 2 (trans real*)."""
    conj = dq.real * np.array([1.0, -1.0, -1.0, -1.0])
    m = np.eye(4)
    m[:3, :3] = quaternion_to_matrix(dq.real)
    m[:3, 3] = 2.0 * quaternion_multiply(dq.trans, conj)[1:]
    return m


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_scaled_channel_splits_into_rigid_times_scale(seed):
    rng = np.random.default_rng(seed)
    rest = nr.rest_matrix((0.1, 0.2, 0.3), tuple(rng.normal(size=3) + 2.0), roll=float(rng.normal()))
    channel = random_affine(rng)
    dq = blender_dual_quaternion(rest, channel)
    assert np.linalg.norm(dq.real) == pytest.approx(1.0)
    assert dq.scale is not None
    np.testing.assert_allclose(rigid_matrix(dq) @ dq.scale, channel, atol=1e-9)
    # The rigid part turns the bone's rest Y axis where the posed bone's Y points.
    posed_y = (channel @ rest)[:3, 1]
    turned = (rigid_matrix(dq) @ rest)[:3, 1]
    np.testing.assert_allclose(turned / np.linalg.norm(turned), posed_y / np.linalg.norm(posed_y), atol=1e-9)


def test_rigid_channel_has_no_scale_part():
    rest = nr.rest_matrix((0.0, 1.0, 0.0), (0.0, 2.0, 0.5), 0.4)
    channel = nr.rotation("x", 0.7) @ nr.rotation("z", -0.2)
    channel[:3, 3] = (0.3, -0.1, 0.2)
    dq = blender_dual_quaternion(rest, channel)
    assert dq.scale is None
    np.testing.assert_allclose(rigid_matrix(dq), channel, atol=1e-12)
