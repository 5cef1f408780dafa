# SPDX-License-Identifier: GPL-3.0-or-later
"""The hand control (docs/twist-experiment.md) that catches matrix-order mistakes the cylinder cannot."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.factories.hand_control import EXPECTED, POINT, run_hand_control

# The hand control of docs/twist-experiment.md, written out: B_1 = Ty(1), G_1 = Ty(1) Rz(90), C_0 = I, p = (1, 1, 0).
TY1 = np.array([[1.0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]])
TY1_INV = np.array([[1.0, 0, 0, 0], [0, 1, 0, -1], [0, 0, 1, 0], [0, 0, 0, 1]])
RZ90 = np.array([[0.0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def blend_by_hand(c1: np.ndarray) -> np.ndarray:
    p = np.array([1.0, 1.0, 0.0, 1.0])
    return (0.5 * p + 0.5 * (c1 @ p))[:3]


def test_hand_computation_reproduces_the_spec_table():
    g1 = TY1 @ RZ90
    np.testing.assert_array_equal(blend_by_hand(g1 @ TY1_INV), [0.5, 1.5, 0.0])
    np.testing.assert_array_equal(blend_by_hand(g1), [0.0, 1.5, 0.0])
    np.testing.assert_array_equal(blend_by_hand(TY1_INV @ g1), [0.0, 1.0, 0.0])


def test_correct_order_gives_0p5_1p5_0():
    hc = run_hand_control()
    assert POINT == (1.0, 1.0, 0.0) and EXPECTED == (0.5, 1.5, 0.0)
    np.testing.assert_allclose(hc.correct, (0.5, 1.5, 0.0), rtol=0, atol=1e-15)


def test_forgotten_inverse_bind_gives_0_1p5_0_error_half():
    hc = run_hand_control()
    np.testing.assert_allclose(hc.inverse_bind_forgotten, (0.0, 1.5, 0.0), rtol=0, atol=1e-15)
    assert hc.forgotten_error == pytest.approx(0.5, abs=1e-15)


def test_reversed_order_gives_0_1_0_error_root_half():
    hc = run_hand_control()
    np.testing.assert_allclose(hc.order_reversed, (0.0, 1.0, 0.0), rtol=0, atol=1e-15)
    assert hc.reversed_error == pytest.approx(0.70710678, abs=1e-8)
    assert hc.reversed_error == pytest.approx(math.sqrt(0.5), abs=1e-15)


def test_results_are_plain_float_triples():
    hc = run_hand_control()
    for v in (hc.correct, hc.inverse_bind_forgotten, hc.order_reversed):
        assert isinstance(v, tuple) and len(v) == 3 and all(type(c) is float for c in v)
    # The errors are the distances between the wrong and the right positions.
    assert hc.forgotten_error == pytest.approx(math.dist(hc.inverse_bind_forgotten, hc.correct), abs=1e-15)
    assert hc.reversed_error == pytest.approx(math.dist(hc.order_reversed, hc.correct), abs=1e-15)
