# SPDX-License-Identifier: GPL-3.0-or-later
"""The seed's twist experiment in float64 (docs/twist-experiment.md): every figure of its table,
the rig behind it, and the closed forms checked against hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.maths.lbs import linear_blend_skinning
from skin_audit.core.twist.closed_form import radius_ratio, twisted_positions
from skin_audit.core.twist.cylinder import MID_RING, build_cylinder, linear_height_weights
from skin_audit.core.twist.seed import seed_figures, seed_rig, seed_skin

THETA_120 = 2.0 * np.pi / 3.0


def hand_rz(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s, 0.0, 0.0], [s, c, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])


@pytest.fixture(scope="module")
def figures():
    return seed_figures()


def test_bind_pose_does_not_move_any_of_the_216_vertices(figures):
    assert figures.position_count == 3 * 216
    assert figures.bind_drift < 1e-12


def test_mid_ring_radius_at_0_90_180_degrees(figures):
    assert figures.angles_deg == (0.0, 90.0, 180.0)
    r0, r90, r180 = figures.mid_ring_radius
    assert abs(r0 - 1.0) < 1e-15
    assert abs(r90 - 0.707106781186548) < 1e-15
    assert abs(r90 - math.sqrt(0.5)) < 1e-15
    assert 0.0 <= r180 < 1e-15  # |cos 90 deg| in float64 is 6.12e-17, not 0


def test_27_ring_radii_and_heights_match_the_formula(figures):
    assert figures.ring_count == 27
    assert figures.ring_radius_max_error < 1e-15
    assert figures.height_max_error < 1e-15


def test_648_positions_match_the_closed_form(figures):
    assert figures.position_count == 648
    assert figures.position_max_error < 1e-15


def test_end_rings_match_a_quaternion_rotation(figures):
    assert figures.end_ring_vs_quaternion < 1e-15


def test_seed_figures_are_measured_from_the_geometry():
    # A radius-2 cylinder must report radius-2 rings: the figures are measurements, not constants.
    f = seed_figures((90.0,), build_cylinder(radius=2.0))
    assert f.mid_ring_radius[0] == pytest.approx(2.0 * math.sqrt(0.5), abs=1e-14)
    assert f.ring_count == 9 and f.position_count == 216
    assert f.ring_radius_max_error < 1e-15


def test_ring_radii_recomputed_here_against_the_formula():
    cyl = build_cylinder()
    idx, w = linear_height_weights(cyl.vertices)
    ring = cyl.ring_of()
    for deg in (0.0, 90.0, 180.0):
        theta = math.radians(deg)
        out = linear_blend_skinning(cyl.vertices, idx, w, seed_skin(theta))
        for i in range(9):
            wc = i * 0.25 / 2.0  # child weight z/2 of ring i
            r = np.hypot(out[ring == i, 0], out[ring == i, 1])
            expected = math.sqrt(max(0.0, 1.0 - 4.0 * wc * (1.0 - wc) * math.sin(theta / 2.0) ** 2))
            np.testing.assert_allclose(r, expected, rtol=0, atol=1e-15)
        mid = np.hypot(out[ring == MID_RING, 0], out[ring == MID_RING, 1])
        np.testing.assert_allclose(mid, abs(math.cos(theta / 2.0)), rtol=0, atol=1e-15)


@pytest.mark.parametrize("theta", [0.0, 0.4, np.pi / 2.0, THETA_120, np.pi, -2.5])
def test_seed_skin_is_identity_and_rz_for_a_joint_on_the_axis(theta):
    skin = seed_skin(theta)
    np.testing.assert_allclose(skin[0], np.eye(4), atol=1e-15)
    np.testing.assert_allclose(skin[1], hand_rz(theta), atol=1e-15)


def test_seed_rig_hierarchy_by_hand():
    bind, current = seed_rig(0.7)
    np.testing.assert_array_equal(bind[0], np.eye(4))
    np.testing.assert_array_equal(bind[1], [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]])
    expected = bind[1] @ hand_rz(0.7)  # G_1 = G_0 L_1 = I Tz(1) Rz
    np.testing.assert_allclose(current[1], expected, atol=1e-15)


def test_theta_120_radius_ratio_formula():
    assert radius_ratio(0.5, THETA_120) == pytest.approx(0.5, abs=1e-15)
    assert radius_ratio(0.25, THETA_120) == pytest.approx(math.sqrt(7.0) / 4.0, abs=1e-15)
    assert math.sqrt(7.0) / 4.0 == pytest.approx(0.661438, abs=1e-6)


@pytest.mark.parametrize("w_child, expected", [(0.5, 0.5), (0.25, math.sqrt(7.0) / 4.0)])
def test_theta_120_radius_by_actual_lbs_of_a_point(w_child, expected):
    # (r, 0, z) blended: (1-w) (1, 0) + w (cos 120, sin 120) = (1 - 1.5 w, w sqrt(3)/2), by hand.
    by_hand = math.hypot(1.0 - 1.5 * w_child, w_child * math.sqrt(3.0) / 2.0)
    assert by_hand == pytest.approx(expected, abs=1e-15)
    p = np.array([[1.0, 0.0, 2.0 * w_child], [3.0, 0.0, 2.0 * w_child]])
    out = linear_blend_skinning(p, [[0, 1], [0, 1]], [[1.0 - w_child, w_child]] * 2, seed_skin(THETA_120))
    np.testing.assert_allclose(np.hypot(out[:, 0], out[:, 1]) / [1.0, 3.0], expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out[:, 2], p[:, 2], rtol=0, atol=0)


def test_mid_ring_ratio_is_abs_cos_half_theta():
    for theta in (0.0, 1.0, np.pi, 4.0, -1.3):
        assert radius_ratio(0.5, theta) == pytest.approx(abs(math.cos(theta / 2.0)), abs=1e-15)


def test_twisted_positions_by_hand():
    # w = 1/2, theta = 90 deg: (1, 0) -> ((1 + 0)/2, (0 + 1)/2) = (0.5, 0.5).
    out = twisted_positions([[1.0, 0.0, 1.0], [0.0, 2.0, 0.3]], [0.5, 1.0], np.pi / 2.0)
    np.testing.assert_allclose(out, [[0.5, 0.5, 1.0], [-2.0, 0.0, 0.3]], atol=1e-15)


def test_radius_ratio_never_exceeds_one_and_endpoints_are_rigid():
    w = np.linspace(0.0, 1.0, 101)
    for theta in np.linspace(-np.pi, 2 * np.pi, 13):
        r = radius_ratio(w, theta)
        assert np.all(r <= 1.0 + 1e-15) and np.all(r >= 0.0)
        assert r[0] == 1.0 and r[-1] == 1.0
