# SPDX-License-Identifier: GPL-3.0-or-later
"""``mirror_weights`` (every group at once, over blocks of vertices) against the loop over groups
it replaced, written out here: the same largest difference and the same first group reaching it,
bit for bit, with NaN weights, groups without a mirror and unmatched vertices (no bpy)."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit import symmetry
from skin_audit.core.audit.symmetry import BonePairs, mirror_weights


def _reference(points, weights, mirror_group, pairs, radius):
    partner = symmetry.nearest_within(points, symmetry.reflect_points(points, pairs), radius)
    diff = np.zeros(len(points))
    worst = np.full(len(points), -1, dtype=np.intp)
    src = np.flatnonzero(partner >= 0)
    for g, other in enumerate(mirror_group):
        mine = weights[g, src].astype(np.float64)
        theirs = weights[other, partner[src]].astype(np.float64) if other >= 0 else np.zeros(len(src))
        d = np.abs(mine - theirs)
        bigger = d > diff[src]  # (NaN is never bigger)
        diff[src[bigger]] = d[bigger]
        worst[src[bigger]] = g
    return partner, diff, worst


@pytest.mark.parametrize("block", [7, 8192])
def test_every_group_at_once_is_the_loop_over_groups(monkeypatch, block):
    monkeypatch.setattr(symmetry, "_MIRROR_BLOCK", block)
    monkeypatch.setattr(symmetry, "_MIRROR_CELLS", 0 if block < 100 else symmetry._MIRROR_CELLS)
    rng = np.random.default_rng(3)
    pairs = BonePairs((), (), np.array([1.0, 0.0, 0.0]), 0.0)
    for trial in range(25):
        v, g = int(rng.integers(1, 3000)), int(rng.integers(1, 20))
        points = rng.normal(size=(v, 3))
        points[v // 2:] = points[:v - v // 2] * [-1.0, 1.0, 1.0]  # half the mesh mirrors the other half
        points[rng.random(v) < 0.1] += 5.0  # some vertices have no partner
        weights = (rng.random((g, v)) * (rng.random((g, v)) < 0.3)).astype(np.float32)
        weights[rng.random((g, v)) < 0.01] = np.nan
        weights[:, rng.random(v) < 0.05] = 0.5  # equal weights: ties go to the first group
        mirror_group = rng.integers(-1, g, g)
        partner, diff, worst = _reference(points, weights, mirror_group, pairs, 1e-6)
        got = mirror_weights(points, weights, mirror_group, pairs, 1e-6)
        assert np.array_equal(got.partner, partner) and (partner >= 0).any(), trial
        assert np.array_equal(got.difference, diff), trial
        assert np.array_equal(got.worst_group, worst), trial
