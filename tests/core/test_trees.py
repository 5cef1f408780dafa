# SPDX-License-Identifier: GPL-3.0-or-later
"""``trees.depth_first`` against ancestors found by walking up parent links (no bpy)."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.maths.trees import depth_first


def _ancestors_or_self(parents: list[int], j: int) -> set[int]:
    out = set()
    while j >= 0:
        out.add(j)
        j = parents[j]
    return out


@pytest.mark.parametrize("seed, count, max_back", [(0, 80, 80), (1, 60, 1), (2, 50, 3)])
def test_every_subtree_is_the_slice_of_its_nodes(seed, count, max_back):
    rng = np.random.default_rng(seed)
    # Several roots; a parent may come after its child (rigs are not always listed parents first).
    parents = [-1 if rng.random() < 0.1 else int(rng.integers(max(0, j - max_back), j)) if j else -1
               for j in range(count)]
    perm = rng.permutation(count)
    inverse = np.argsort(perm)
    parents = [-1 if parents[perm[k]] < 0 else int(inverse[parents[perm[k]]]) for k in range(count)]
    order, tin, tout = depth_first(parents)
    assert sorted(order.tolist()) == list(range(count))  # every node once
    assert np.array_equal(order[tin], np.arange(count))
    for a in range(count):
        below = {b for b in range(count) if a in _ancestors_or_self(parents, b)}
        sub = order[tin[a]:tout[a]].tolist()
        assert sub[0] == a and set(sub) == below and len(sub) == len(below)
        for b in range(count):
            assert (tin[a] <= tin[b] < tout[a]) == (b in below)
