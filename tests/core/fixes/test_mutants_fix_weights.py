# SPDX-License-Identifier: GPL-3.0-or-later
"""Weight fixes on hand-sized arrays: the cells they report changed and the cells they refuse."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.errors import ShapeError
from skin_audit.core.fixes.weights import remove_below, remove_cells


def test_remove_below_reports_exactly_the_cells_it_changed():
    # Vertex 0: 0.9 / 0.05 / 0.05 -> the two 0.05 go, 0.9 becomes 1. Vertex 1: 0.5 / 0.5, untouched.
    w = np.array([[0.9, 0.5], [0.05, 0.5], [0.05, 0.0]], dtype=np.float32)
    fix = remove_below(w, [True, True, True], [False, False, False], 0.1)
    assert sorted(map(tuple, fix.changed.tolist())) == [(0, 0), (1, 0), (2, 0)]
    np.testing.assert_allclose(fix.weights[:, 0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(fix.weights[:, 1], [0.5, 0.5, 0.0])


@pytest.mark.parametrize("cells", [[[-1, 0]], [[0, -1]], [[2, 0]], [[0, 2]]])
def test_remove_cells_refuses_a_cell_outside_the_array(cells):
    # Negative indices too: numpy would wrap them round to the last group or vertex.
    w = np.array([[0.5, 1.0], [0.5, 0.0]], dtype=np.float32)
    with pytest.raises(ShapeError):
        remove_cells(w, [True, True], [False, False], cells)
