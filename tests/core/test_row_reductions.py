# SPDX-License-Identifier: GPL-3.0-or-later
"""Row sums and row tests by columns give numpy's own results (bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.maths.influences import row_sums, rows_with


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 7, 8, 12])
def test_row_sums_and_row_tests_equal_numpys(k: int) -> None:
    rng = np.random.default_rng(k)
    table = rng.normal(size=(257, k)) * 10.0 ** rng.integers(-8, 8, size=(257, k))
    table[rng.random((257, k)) < 0.4] = 0.0
    np.testing.assert_array_equal(row_sums(table), table.sum(axis=1))
    np.testing.assert_array_equal(rows_with(table != 0.0), (table != 0.0).any(axis=1))
