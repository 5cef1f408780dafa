# SPDX-License-Identifier: GPL-3.0-or-later
"""The scale fix's arithmetic against closed forms: for a uniform scale ``s`` (with or without a
mirror) every bone's map is ``s diag(+-1, 1, 1)``; the new frame is a proper rotation along the
scaled bone; factors, paths and still-scaled world matrices by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skin_audit.core.fixes.scale import BoneMap, blender_scale, bone_maps, new_frame, pose_path, still_scaled


def rotation(axis, angle) -> np.ndarray:
    """(3, 3) Rodrigues' rotation."""
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


FRAMES = {"Root": rotation((0.3, 0.2, 1.0), 0.7), "Child": rotation((1.0, -0.4, 0.2), 1.9)}
PARENTS = {"Root": None, "Child": "Root"}


@pytest.mark.parametrize("s", [(2.0, 2.0, 2.0), (-1.25, 1.25, 1.25), (0.5, -0.5, 0.5)])
def test_a_uniform_scale_maps_every_bone_by_s_times_the_mirror(s):
    s = np.array(s)
    k = abs(s[0])
    mirror = float(np.sign(np.prod(s)))
    maps = bone_maps(FRAMES, PARENTS, {"Root": True, "Child": False}, s)
    for name, frame in FRAMES.items():
        np.testing.assert_allclose(maps[name].matrix, k * np.diag([mirror, 1.0, 1.0]), atol=1e-12)
        assert maps[name].mirror == mirror
        new = new_frame(frame, s)
        np.testing.assert_allclose(new.T @ new, np.eye(3), atol=1e-12)
        assert np.linalg.det(new) == pytest.approx(1.0)
        y = s * frame[:, 1]
        np.testing.assert_allclose(new[:, 1], y / np.linalg.norm(y), atol=1e-12)
    # Local Location off: the child's location lives in its parent's frame; on, in its own.
    np.testing.assert_array_equal(maps["Child"].location, maps["Root"].matrix)
    np.testing.assert_array_equal(maps["Root"].location, maps["Root"].matrix)
    m = maps["Child"]
    assert [m.factor("location", i) for i in range(3)] == pytest.approx([k * mirror, k, k])
    assert [m.factor("rotation_quaternion", i) for i in range(4)] == [1.0, 1.0, mirror, mirror]
    assert [m.factor("rotation_euler", i) for i in range(3)] == [1.0, mirror, mirror]
    assert m.factor("bbone_rollin", 0) == mirror
    assert m.factor("bbone_curveinx", 0) == pytest.approx(k * mirror)
    assert m.factor("bbone_curveoutz", 0) == pytest.approx(k)
    assert m.factor("scale", 1) == 1.0


def test_a_root_without_local_location_moves_along_the_armature_axes():
    s = np.array([1.0, 2.0, 3.0])
    maps = bone_maps(FRAMES, PARENTS, {"Root": False, "Child": True}, s)
    np.testing.assert_array_equal(maps["Root"].location, np.diag(s))
    assert [maps["Root"].factor("location", i) for i in range(3)] == [1.0, 2.0, 3.0]
    # A rotated bone under a non-uniform scale: its own location axes mix, no per-axis factor.
    assert maps["Child"].factor("location", 0) is None
    with pytest.raises(AssertionError):
        maps["Child"].axis_factor("location", 0)
    assert maps["Child"].axis_factor("rotation_euler", 2) == 1.0


def test_aligned_is_diagonal_within_the_tolerance():
    m = BoneMap(np.eye(3), np.eye(3), 1.0)
    assert m.aligned(np.diag([1.0, 2.0, 3.0]))
    assert not m.aligned(np.array([[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))


def test_blender_scale_is_the_length_of_the_mapped_unit_diagonal():
    assert blender_scale(np.array([2.0, 2.0, 2.0])) == pytest.approx(2.0)
    assert blender_scale(np.array([-1.0, 1.0, 1.0])) == pytest.approx(1.0)
    assert blender_scale(np.array([1.0, 2.0, 2.0])) == pytest.approx(math.sqrt(3.0))


def test_pose_paths_name_the_bone_and_the_property():
    assert pose_path('pose.bones["Arm.L"].location') == ("Arm.L", "location")
    assert pose_path('pose.bones["say \\"hi\\""].rotation_euler') == ('say "hi"', "rotation_euler")
    assert pose_path("location") is None
    assert pose_path('pose.bones["x"]["prop"]') is None


def test_still_scaled_names_a_mirror_and_a_non_uniform_scale():
    assert still_scaled(np.eye(4)) == ""
    assert still_scaled(np.diag([3.0, 3.0, 3.0, 1.0])) == ""
    assert still_scaled(np.diag([-1.0, 1.0, 1.0, 1.0])) == "mirrored"
    assert still_scaled(np.diag([1.0, 2.0, 1.0, 1.0])) == "scaled [1.0, 2.0, 1.0]"
