# SPDX-License-Identifier: GPL-3.0-or-later
"""Core tier of the rig audit: the deform hierarchy an exporter writes, the near-linear
symmetry convention search against the plain all-pairs search it replaced, and the
mirror test's degenerate case (a bone along the mirror axis)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.audit.rig_audit import deform_parents
from skin_audit.core.audit.symmetry import (
    PairFrames,
    mirror_offset_angles,
    rotation_angle,
    shared_convention,
)
from tests.factories.numpy_rigs import rest_matrix


def test_deform_parents_skip_helper_bones():
    #        0 root(h)
    #        ├─ 1 DEF-spine ─ 2 ORG-shoulder(h) ─ 3 MCH(h) ─ 4 DEF-arm ─ 5 DEF-hand
    #        └─ 6 properties(h) ─ 7 DEF-tail
    parents = (-1, 0, 1, 2, 3, 4, 0, 6)
    deform = np.array([False, True, False, False, True, True, False, True])
    assert deform_parents(parents, deform).tolist() == [-1, -1, 1, 1, 1, 4, -1, -1]


def test_deform_parents_in_any_bone_order():
    """Children listed before their parents (imported rigs): each answer is still the nearest deform ancestor."""
    parents = (3, 0, 1, -1)  # 3 is the root, 0 its child, 1 under 0, 2 under 1
    deform = np.array([False, False, True, True])
    assert deform_parents(parents, deform).tolist() == [3, 3, 3, -1]


def _rot(axis: int, degrees: float) -> np.ndarray:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def _frames(offsets) -> list[PairFrames]:
    return [PairFrames(2 * k, 2 * k + 1, o, rotation_angle(o), 0.0) for k, o in enumerate(offsets)]


def _all_pairs(frames, tolerance):
    """The quadratic search the vectorised one replaced (symmetry.py before it was vectorised)."""
    best = (0, None)
    for f in frames:
        count = sum(rotation_angle(f.offset.T @ g.offset) <= tolerance for g in frames)
        if count > best[0]:
            best = (count, f.offset)
    count, offset = best
    if offset is None or rotation_angle(offset) <= tolerance:
        return None
    return offset if count >= 2 and 2 * count >= len(frames) else None


@pytest.mark.parametrize("case", ["blender", "turned", "stray", "split"])
def test_convention_search_agrees_with_all_pairs(case):
    rng = np.random.default_rng(7)
    turned = _rot(1, 180.0)
    noise = [_rot(int(rng.integers(3)), float(rng.uniform(-0.3, 0.3))) for _ in range(60)]
    if case == "blender":
        offsets = noise
    elif case == "turned":
        offsets = [turned @ n for n in noise]
    elif case == "stray":  # a turned majority and a few rolled pairs
        offsets = [turned @ n for n in noise[:50]] + [_rot(1, float(a)) for a in rng.uniform(10, 90, 10)]
    else:  # no majority: 3 groups of 20
        offsets = [turned @ n for n in noise[:20]] + [_rot(0, 90.0) @ n for n in noise[20:40]] + noise[40:]
    frames = _frames(offsets)
    fast, slow = shared_convention(frames, 1.0), _all_pairs(frames, 1.0)
    assert (fast is None) == (slow is None)
    if fast is not None:
        assert rotation_angle(fast.T @ slow) <= 1.0
    assert (fast is not None) == (case in ("turned", "stray"))


def test_a_bone_along_the_mirror_axis_has_two_mirror_images():
    """Left bone along +X; its Blender mirror along -X; the same turned half a turn about its own
    axis is a mirror image too (reflection leaves X and Z of such a bone in place); 30 degrees is not."""
    x_mirror = np.diag([-1.0, 1.0, 1.0, 1.0])
    left = rest_matrix((0.06, 0.05, 0.0), (0.14, 0.05, 0.0))
    blender_right = x_mirror @ left @ x_mirror
    rest = np.stack([left, blender_right, left, blender_right @ _h(_rot(1, 180.0)), left,
                     blender_right @ _h(_rot(1, 30.0))])
    # The offset each pair holds: from Blender's mirror image of the left bone to the right bone.
    frames = [PairFrames(a, a + 1, (x_mirror @ rest[a] @ x_mirror)[:3, :3].T @ rest[a + 1][:3, :3], 0.0, 0.0)
              for a in (0, 2, 4)]
    angles = mirror_offset_angles(rest, frames, np.array([1.0, 0.0, 0.0]), np.eye(3))
    assert angles[0] == pytest.approx(0.0, abs=1e-9)
    assert angles[1] == pytest.approx(0.0, abs=1e-9)
    assert angles[2] == pytest.approx(30.0, abs=1e-6)


def test_the_half_turn_is_excused_only_along_the_axis():
    """A bone across the axis (along Y) turned half a turn is a real mismatch."""
    x_mirror = np.diag([-1.0, 1.0, 1.0, 1.0])
    left = rest_matrix((0.1, 0.0, 0.0), (0.1, 0.3, 0.0))
    right = x_mirror @ left @ x_mirror @ _h(_rot(1, 180.0))
    offset = (x_mirror @ left @ x_mirror)[:3, :3].T @ right[:3, :3]
    angles = mirror_offset_angles(np.stack([left, right]), [PairFrames(0, 1, offset, 0.0, 0.0)],
                                  np.array([1.0, 0.0, 0.0]), np.eye(3))
    assert angles[0] == pytest.approx(180.0, abs=1e-6)


def _h(r: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = r
    return out
