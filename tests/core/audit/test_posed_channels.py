# SPDX-License-Identifier: GPL-3.0-or-later
"""The hierarchy walk behind every test pose: the batched walk (one product per depth level),
the joint-by-joint walk and the subtree walk the sweep uses agree with a plain loop of
``G_child = G_parent L_child R_child`` written out here."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit.stress_poses import posed_channels, turned_channels
from skin_audit.core.maths import affine
from tests.factories.numpy_rigs import BoneRow, bones_table, rotation


def _tree(seed: int, count: int, max_back: int) -> list[BoneRow]:
    """A random tree, parents first, bones pointing every way, some not inheriting rotation."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(count):
        head = tuple(rng.normal(size=3))
        tail = tuple(np.add(head, rng.normal(size=3) + 0.1))
        parent = None if j == 0 else f"b{int(rng.integers(max(0, j - max_back), j))}"
        rows.append(BoneRow(f"b{j}", head, tail, parent=parent, roll=float(rng.normal()),
                            inherit_rotation=bool(j == 0 or rng.random() > 0.2)))
    return rows


#: The rest matrices last inverted (a copy) and their inverses: the references of one table reuse them.
_INVERTED: list[tuple[np.ndarray, np.ndarray]] = []


def _rest_inverse(rest: np.ndarray) -> np.ndarray:
    """``np.linalg.inv(rest)``, once per table (the same solve per matrix each time; every solve
    wakes OpenBLAS's threads, core/maths/parallel, so a test walking one table at many poses
    would keep them spinning)."""
    if not _INVERTED or not np.array_equal(_INVERTED[0][0], rest):
        _INVERTED[:] = [(rest.copy(), np.linalg.inv(rest))]
    return _INVERTED[0][1]


def _reference(bones, local_rotations):
    """The walk written out: parents first by index (bones_table lists parents first)."""
    rest_inv = _rest_inverse(bones.rest)
    world = np.empty_like(bones.rest)
    for j, p in enumerate(bones.parents):
        local = bones.rest[j] if p < 0 else rest_inv[p] @ bones.rest[j]
        world[j] = (np.eye(4) if p < 0 else world[p]) @ local @ local_rotations[j]
        if p >= 0 and not bones.inherit_rotation[j]:
            world[j][:3, :3] = (bones.rest[j] @ local_rotations[j])[:3, :3]
    return world @ rest_inv


@pytest.mark.parametrize("count, max_back", [(300, 300), (60, 1)])  # bushy (batched by level), a chain
def test_every_walk_equals_the_written_out_loop(count, max_back):
    bones = bones_table(_tree(7, count, max_back))
    deep = len(bones.walk.levels) * affine.SEQUENTIAL_DEPTH_RATIO > count
    assert deep == (max_back == 1)  # both ways of walking are exercised
    rng = np.random.default_rng(1)
    turns = np.array([rotation("xyz"[k % 3], float(a)) for k, a in enumerate(rng.normal(size=count))])
    np.testing.assert_allclose(posed_channels(bones, turns), _reference(bones, turns), atol=1e-12)
    for bone in (0, 5, count - 1):  # the sweep: one bone turned, only its subtree walked
        one = np.broadcast_to(np.eye(4), turns.shape).copy()
        one[bone] = turns[bone]
        full = _reference(bones, one)
        sub = turned_channels(bones, bone, turns[bone][None])[0]
        np.testing.assert_allclose(sub, full, atol=1e-12)
        untouched = np.abs(full - np.eye(4)).max(axis=(1, 2)) < 1e-12
        assert untouched.sum() >= (0 if bone == 0 else 5)  # bones outside the subtree
        assert (sub[untouched] == np.eye(4)).all()  # exactly rest, no rounding


def test_a_parent_after_its_child_is_refused_by_every_walk():
    with pytest.raises(affine.HierarchyError, match="joint 1 has parent 2"):
        affine.hierarchy_levels([-1, 2, 0])
