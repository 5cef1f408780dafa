# SPDX-License-Identifier: GPL-3.0-or-later
"""The standard stress poses turn the bones they are asked to, by hand on a two-bone chain."""

from __future__ import annotations

import numpy as np

from skin_audit.core.audit.stress_poses import standard_poses
from tests.factories import numpy_rigs as nr

# Root from (0, 0, 0) to (0, 1, 0), Child from (0, 1, 0) to (0, 2, 0): both rest frames are the
# armature's axes (a bone along +Y, roll 0).
RX90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def _about_head(r3: np.ndarray, head: tuple[float, float, float]) -> np.ndarray:
    """T(head) R T(-head)."""
    m = np.eye(4)
    m[:3, :3] = r3
    m[:3, 3] = np.asarray(head) - r3 @ np.asarray(head)
    return m


def test_only_the_masked_bones_turn():
    bones = nr.skinned_mesh(nr.chain_tube(("Root", "Child")), blender=None).bones
    np.testing.assert_allclose(bones.rest[1][:3, 3], [0.0, 1.0, 0.0], atol=1e-12)
    bend_x = standard_poses(bones, 90.0, only=np.array([False, True]))[0]
    assert bend_x.name == "bend-x 90"
    np.testing.assert_allclose(bend_x.channel[0], np.eye(4), atol=1e-12)
    np.testing.assert_allclose(bend_x.channel[1], _about_head(RX90, (0.0, 1.0, 0.0)), atol=1e-12)


def test_without_a_mask_every_deform_bone_turns():
    bones = nr.skinned_mesh(nr.chain_tube(("Root", "Child")), blender=None).bones
    bend_x = standard_poses(bones, 90.0)[0]
    np.testing.assert_allclose(bend_x.channel[0], _about_head(RX90, (0.0, 0.0, 0.0)), atol=1e-12)
    # Child turns on top of Root: its own quarter turn about its rest head, then Root's about the
    # origin (which carries Child's head to (0, 0, 1)): half a turn in all.
    rx180 = RX90 @ RX90
    expected = _about_head(RX90, (0.0, 0.0, 0.0)) @ _about_head(RX90, (0.0, 1.0, 0.0))
    np.testing.assert_allclose(bend_x.channel[1], expected, atol=1e-12)
    np.testing.assert_allclose(bend_x.channel[1][:3, :3], rx180, atol=1e-12)
    np.testing.assert_allclose(bend_x.channel[1] @ [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0], atol=1e-12)
