# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed forms of the joint measures: the winding number of a closed cube (1 inside, 0 outside,
-1 with its faces flipped), and the roll between two bones of known rest frames."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit.joints import relative_roll, transport, winding_number
from tests.factories.numpy_rigs import BoneRow, bones_table

CUBE = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
FACES = np.array([(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6),
                  (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)])


@pytest.mark.parametrize(("point", "expected"), [((0.5, 0.5, 0.5), 1.0), ((0.1, 0.9, 0.2), 1.0),
                                                 ((2.0, 0.5, 0.5), 0.0), ((0.5, -3.0, 7.0), 0.0)])
def test_winding_number_of_a_cube(point, expected):
    corners = CUBE[FACES]
    assert abs(winding_number(np.array(point), corners)) == pytest.approx(expected, abs=1e-12)
    flipped = CUBE[FACES[:, ::-1]]
    assert winding_number(np.array(point), flipped) == pytest.approx(-winding_number(np.array(point), corners))


def test_transport_takes_a_to_b_and_keeps_what_is_perpendicular_to_both():
    a, b = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])
    assert np.allclose(transport(a, a, b), b)
    assert np.allclose(transport(np.array([0.0, 0.0, 1.0]), a, b), [0.0, 0.0, 1.0])


@pytest.mark.parametrize("roll", [0.0, 30.0, 90.0, -150.0])
@pytest.mark.parametrize("tail", [(0.0, 2.0, 0.0), (0.7, 1.9, 0.3)])  # straight, and bent at the joint
def test_relative_roll_is_the_roll_set_on_a_child_of_the_same_frame(roll, tail):
    """The child's frame is Blender's frame of its own direction turned by its roll about it: the
    roll between the bones is the roll set."""
    rows = [BoneRow("A", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)), BoneRow("B", (0.0, 1.0, 0.0), tail, "A")]
    base = relative_roll(bones_table(rows), 0, 1)
    rows[1] = BoneRow("B", (0.0, 1.0, 0.0), tail, "A", np.radians(roll))
    got = relative_roll(bones_table(rows), 0, 1)
    assert (got - base + 180.0) % 360.0 - 180.0 == pytest.approx(roll, abs=1e-9)
    # The parent lies along world Y at roll 0, and Blender's roll-0 frame of a direction is world Y's
    # frame turned the shortest way onto it: the carried frame itself, bent or not.
    assert base == pytest.approx(0.0, abs=1e-9)
