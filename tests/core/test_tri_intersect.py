# SPDX-License-Identifier: GPL-3.0-or-later
"""The exact triangle-triangle test and its grid against an independent reference: a pure-Python
edge-through-triangle test (two triangles not in one plane meet exactly when an edge of one
crosses the other), pair by pair, over every pair."""

from __future__ import annotations

import numpy as np

from skin_audit.core.maths.tri_intersect import candidate_pairs, triangles_intersect
from tests.factories.contact_reference import intersecting_pairs


def _edge_crosses(p, q, tri) -> bool:
    a, b, c = tri
    n = np.cross(b - a, c - a)
    dp, dq = float(np.dot(p - a, n)), float(np.dot(q - a, n))
    if dp * dq > 0 or (dp == 0 and dq == 0):
        return False
    x = p + (q - p) * (dp / (dp - dq))
    return all(np.dot(np.cross(v - u, x - u), n) >= -1e-12 * np.dot(n, n) for u, v in ((a, b), (b, c), (c, a)))


def reference(t1, t2) -> bool:
    return any(_edge_crosses(t1[i], t1[(i + 1) % 3], t2) for i in range(3)) or \
        any(_edge_crosses(t2[i], t2[(i + 1) % 3], t1) for i in range(3))


def test_random_pairs_agree_with_the_edge_reference():
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(2000, 3, 3)), rng.normal(size=(2000, 3, 3))
    got = triangles_intersect(a, b)
    want = np.array([reference(x, y) for x, y in zip(a, b, strict=True)])
    assert 0 < want.sum() < len(want)  # both kinds present
    assert np.array_equal(got, want)


def test_hand_cases():
    base = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    through = np.array([[0.2, 0.2, -1], [0.2, 0.2, 1], [0.3, 0.25, 1]])  # pierces base
    above = through + [0, 0, 2.5]
    beside = through + [3, 0, 0]
    got = triangles_intersect(np.stack([base] * 3), np.stack([through, above, beside]))
    assert got.tolist() == [True, False, False]


#: Pairs of triangles tested together by the all-pairs reference.
PAIRS = 50_000


def test_grid_finds_exactly_the_all_pairs_intersections():
    rng = np.random.default_rng(3)
    centres = rng.uniform(0, 10, size=(1500, 1, 3))
    points = (centres + rng.normal(scale=0.4, size=(1500, 3, 3))).reshape(-1, 3)
    tris = np.arange(len(points)).reshape(-1, 3)
    i, j = intersecting_pairs(points, tris)
    ai, aj = np.triu_indices(len(tris), 1)
    corners = points[tris]
    # Every pair, a block at a time (the 1.1 million pairs at once are 160 MB of corners).
    hit = np.concatenate([triangles_intersect(corners[ai[s:s + PAIRS]], corners[aj[s:s + PAIRS]])
                          for s in range(0, len(ai), PAIRS)])
    assert len(i) > 50
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == set(zip(ai[hit].tolist(), aj[hit].tolist(), strict=True))


def _sheet(n: int):
    """An n x n grid of unit boxes (a flat sheet of triangles' boxes)."""
    x, y = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float))
    lo = np.column_stack([x.ravel(), y.ravel(), np.zeros(n * n)])
    return lo, lo + 1.0


def test_candidate_pairs_grow_linearly_not_quadratically():
    small = len(candidate_pairs(*_sheet(40))[0])
    large = len(candidate_pairs(*_sheet(160))[0])  # 16x the boxes
    assert large < 20 * small  # all pairs would be 256x


def test_sides_keep_only_pairs_across():
    lo = np.array([[0.0, 0, 0], [0.5, 0, 0], [0.2, 0, 0]])
    hi = lo + 1.0
    i, j = candidate_pairs(lo, hi, np.array([0, 0, 1], dtype=np.int8))
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == {(0, 2), (1, 2)}
