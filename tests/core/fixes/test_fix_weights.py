# SPDX-License-Identifier: GPL-3.0-or-later
"""The numpy fixes against hand-computed weights: what changes, what never does."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.errors import InputError
from skin_audit.core.fixes.weights import (
    limit_and_normalize,
    merge_rows,
    normalize,
    remove_below,
    remove_cells,
    transfer_from_neighbours,
)

F32 = np.float32


def cells(fix):
    return {tuple(c) for c in fix.changed.tolist()}


def test_normalize_scales_unlocked_deform_rows_only():
    # groups: A, B deform; C non-deform; D deform locked
    w = np.array([[0.2, 0.5, 0.0],
                  [0.2, 0.5, 0.0],
                  [0.7, 0.0, 0.9],
                  [0.2, 0.0, 0.0]], dtype=F32)
    deform = [True, True, False, True]
    locked = [False, False, False, True]
    fix = normalize(w, deform, locked)
    # vertex 0: locked 0.2, free 0.4 -> each 0.4 (0.8 / 2); vertex 1 already sums to 1; vertex 2 has no deform weight
    assert fix.weights[:, 0].tolist() == pytest.approx([0.4, 0.4, 0.7, 0.2], abs=1e-7)
    assert cells(fix) == {(0, 0), (1, 0)}
    assert np.array_equal(fix.weights[:, 1:], w[:, 1:])
    assert np.array_equal(fix.weights[2:], w[2:])  # non-deform and locked rows untouched
    assert fix.skipped.tolist() == []


def test_normalize_locked_over_one_empties_the_free_groups_and_skips_zero_vertices():
    w = np.array([[0.3, 0.0], [1.0, 0.0], [0.0, 0.5]], dtype=F32)
    fix = normalize(w, [True, True, True], [False, True, True], vertices=[0, 1])
    assert fix.weights[:, 0].tolist() == [0.0, 1.0, 0.0]
    assert fix.skipped.tolist() == [1]  # vertex 1: its only weight is locked
    assert cells(fix) == {(0, 0)}


def test_limit_and_normalize_by_hand():
    # vertex 0: 5 deform weights .4 .3 .1 .1 .1 (sum 1) -> n=3 keeps .4 .3 and the FIRST .1 (ties: earlier group)
    w = np.array([[0.4, 0.5], [0.3, 0.5], [0.1, 0.0], [0.1, 0.0], [0.1, 0.0], [0.6, 0.6]], dtype=F32)
    deform = [True] * 5 + [False]
    fix = limit_and_normalize(w, deform, [False] * 6, 3)
    s = 0.4 + 0.3 + 0.1
    assert fix.weights[:5, 0] == pytest.approx([0.4 / s, 0.3 / s, 0.1 / s, 0.0, 0.0], abs=1e-7)
    assert cells(fix) == {(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)}
    assert np.array_equal(fix.weights[:, 1], w[:, 1])  # under the limit: untouched
    assert fix.weights[5, 0] == w[5, 0]  # non-deform row


def test_limit_keeps_locked_weights():
    # the smallest weight is locked: it stays, the next smallest unlocked goes
    w = np.array([[0.5], [0.3], [0.15], [0.05]], dtype=F32)
    fix = limit_and_normalize(w, [True] * 4, [False, False, False, True], 3)
    assert fix.weights[3, 0] == w[3, 0]
    assert fix.weights[2, 0] == 0.0
    assert fix.weights[:2, 0] == pytest.approx(np.array([0.5, 0.3]) * 0.95 / 0.8, abs=1e-7)


def test_remove_below_and_keep_last_weights():
    w = np.array([[0.98, 0.005], [0.02, 0.004], [0.5, 0.0]], dtype=F32)
    fix = remove_below(w, [True, True, False], [False, False, False], 0.03)
    assert fix.weights[:, 0].tolist() == [1.0, 0.0, 0.5]
    assert np.array_equal(fix.weights[:, 1], w[:, 1])  # all its weights are small: kept, reported
    assert fix.skipped.tolist() == [1]


def test_remove_cells_refuses_locked_and_renormalises():
    w = np.array([[0.5, 1.0], [0.5, 0.0]], dtype=F32)
    fix = remove_cells(w, [True, True], [False, False], [[1, 0]])
    assert fix.weights[:, 0].tolist() == [1.0, 0.0]
    assert cells(fix) == {(0, 0), (1, 0)}
    with pytest.raises(InputError, match="locked"):
        remove_cells(w, [True, True], [False, True], [[1, 0]])
    # vertex 1's only weight is the stray one: removing it would leave it unweighted
    kept = remove_cells(w, [True, True], [False, False], [[1, 0], [0, 1]])
    assert kept.weights[:, 1].tolist() == [1.0, 0.0] and kept.skipped.tolist() == [1]
    assert cells(kept) == {(0, 0), (1, 0)}


def test_merge_rows_moves_clips_and_renormalises():
    # rows: A deform, Ghost (non-deform), C deform
    w = np.array([[0.25, 0.0, 0.9], [0.75, 1.0, 0.0], [0.5, 0.5, 0.1]], dtype=F32)
    fix = merge_rows(w, [True, False, True], [False, False, False], source=1, target=0)
    # vertex 0: A 0.25 + 0.75 = 1.0, C 0.5 -> sum 1.5 -> A 2/3, C 1/3
    assert fix.weights[:, 0] == pytest.approx([2 / 3, 0.0, 1 / 3], abs=1e-7)
    # vertex 1: A 1.0, C 0.5 -> 2/3, 1/3; vertex 2 received nothing: untouched
    assert fix.weights[:, 1] == pytest.approx([2 / 3, 0.0, 1 / 3], abs=1e-7)
    assert np.array_equal(fix.weights[:, 2], w[:, 2])
    plain = merge_rows(w, [True, False, True], [False, False, False], source=1, target=0, renormalize=False)
    assert plain.weights[:, 0].tolist() == [1.0, 0.0, 0.5]  # clipped at 1, as Blender stores it
    assert cells(plain) == {(0, 0), (1, 0), (0, 1), (1, 1)}
    with pytest.raises(InputError, match="locked"):
        merge_rows(w, [True, False, True], [True, False, False], source=1, target=0)


def test_transfer_walks_rings_along_edges():
    # a path 0-1-2-3-4; vertex 0 is all A, vertex 4 all B; 1..3 unweighted; a lone vertex 5
    w = np.zeros((2, 6), dtype=F32)
    w[0, 0] = 1.0
    w[1, 4] = 1.0
    edges = [[0, 1], [1, 2], [2, 3], [3, 4]]
    fix = transfer_from_neighbours(w, [True, True], [False, False], edges, [1, 2, 3, 5])
    # ring 1: vertex 1 <- vertex 0 (A), vertex 3 <- vertex 4 (B); ring 2: vertex 2 <- mean of 1 and 3
    assert fix.weights[:, 1].tolist() == [1.0, 0.0]
    assert fix.weights[:, 3].tolist() == [0.0, 1.0]
    assert fix.weights[:, 2].tolist() == [0.5, 0.5]
    assert fix.skipped.tolist() == [5]
    assert {v for _, v in cells(fix)} == {1, 2, 3}


def test_bad_shapes_and_nan_are_refused():
    from skin_audit.core.errors import ShapeError

    with pytest.raises(ShapeError, match=r"\(2,\)"):
        normalize(np.zeros((2, 3), F32), [True], [False, False])
    with pytest.raises(InputError, match="non-finite"):
        normalize(np.full((1, 1), np.nan, F32), [True], [False])


def test_mirror_side_by_hand():
    # vertices: 0 left, 1 right (partners), 2 on the plane (its own partner), 3 right without partner
    # groups: Arm.L, Arm.R (mirrors), Spine (own mirror), Mask (non-deform, mirror of itself)
    w = np.array([[0.6, 0.0, 0.3, 0.0],
                  [0.0, 0.2, 0.1, 0.5],
                  [0.4, 0.8, 0.6, 0.5],
                  [0.9, 0.1, 0.0, 0.0]], dtype=F32)
    from skin_audit.core.fixes.weights import mirror_side

    fix = mirror_side(w, [True, True, True, False], [False] * 4, partner=[1, 0, 2, -1],
                      mirror_group=[1, 0, 2, 3], destination=[False, True, False, True],
                      centre=[False, False, True, False])
    # vertex 1 <- vertex 0 through the mirror: Arm.R = Arm.L(0) = 0.6, Arm.L = Arm.R(0) = 0, Spine 0.4
    assert fix.weights[:, 1].tolist() == [0.0, pytest.approx(0.6), pytest.approx(0.4), pytest.approx(0.1)]
    # vertex 2 on the plane: Arm.L / Arm.R evened to 0.2 each, Spine kept
    assert fix.weights[:, 2] == pytest.approx([0.2, 0.2, 0.6, 0.0])
    assert np.array_equal(fix.weights[:, [0, 3]], w[:, [0, 3]])  # the source side and the unmatched vertex
    assert fix.skipped.tolist() == [3]
    assert fix.weights[3, 1] == w[3, 1]  # non-deform Mask never changes
    locked = mirror_side(w, [True, True, True, False], [False, True, False, False], [1, 0, 2, -1],
                         [1, 0, 2, 3], [False, True, False, True])
    assert np.array_equal(locked.weights[1], w[1])  # a locked group is not written
