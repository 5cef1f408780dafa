# SPDX-License-Identifier: GPL-3.0-or-later
"""The three.js and Babylon.js weight rules on hand-computed values (core tier, no engine run).

The joints are pure translations, so every drawn position is a weighted sum of offsets
that can be written down by hand.  tests/engines runs the engines themselves on the same
rules (three.js r187, Babylon's CPU path).
"""

from __future__ import annotations

import numpy as np

from skin_audit.core.engines import babylon
from skin_audit.core.engines.targets import BABYLON, THREEJS
from skin_audit.core.engines.weights import deform, engine_weights

#: Joint k moves a point by OFFSETS[k]: (1, 0, 0), (0, 2, 0), (0, 0, 4), nothing.
OFFSETS = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 4.0], [0.0, 0.0, 0.0]])
REST = np.array([[0.5, 0.25, 0.125]])


def translations() -> np.ndarray:
    mats = np.tile(np.eye(4), (len(OFFSETS), 1, 1))
    mats[:, :3, 3] = OFFSETS
    return mats


# --- three.js: SkinnedMesh.normalizeSkinWeights divides by manhattanLength (|w| summed) ----------


def test_threejs_divides_a_negative_weight_by_the_sum_of_absolute_values():
    joints = np.array([[0, 1, 2, 3]])
    weights = np.array([[1.0, -0.5, 0.5, 0.0]])  # plain sum 1.0, absolute sum 2.0
    _, w = engine_weights(joints, weights, THREEJS)
    np.testing.assert_array_equal(w, [[0.5, -0.25, 0.25, 0.0]])  # 1/2, -0.5/2, 0.5/2: not unchanged (sum = 1)
    # Drawn: rest + 0.5 * (1, 0, 0) - 0.25 * (0, 2, 0) + 0.25 * (0, 0, 4), scaled by the weights' sum 0.5
    # (LBS with weights summing to 0.5 keeps half the point): 0.5 * rest + (0.5, -0.5, 1.0).
    drawn = deform(REST, joints, weights, translations(), THREEJS)
    np.testing.assert_allclose(drawn, 0.5 * REST + [[0.5, -0.5, 1.0]], rtol=0, atol=1e-15)


def test_threejs_negative_weights_whose_absolute_sum_is_one_stay_as_stored():
    joints = np.array([[0, 1, 2, 3]])
    weights = np.array([[0.75, -0.125, 0.125, 0.0]])  # |w| sums to 1; the plain sum 0.75 would scale by 4/3
    _, w = engine_weights(joints, weights, THREEJS)
    np.testing.assert_array_equal(w, weights)


# --- Babylon: the drawn position (target) and the CPU path (Mesh.applySkeleton) ------------------


def test_babylon_target_draws_no_vertex_whose_weight_sum_is_zero_or_below():
    joints = np.array([[0, 1, 0, 0]] * 4)
    weights = np.array([
        [0.5, 0.5, 0.0, 0.0],    # sum 1: drawn
        [0.0, 0.0, 0.0, 0.0],    # sum 0: no position
        [0.5, -1.0, 0.0, 0.0],   # sum -0.5: the shader's clip w < 0, clipped away
        [-0.25, 0.0, 0.0, 0.0],  # sum -0.25: the same
    ])
    rest = np.repeat(REST, 4, axis=0)
    drawn = deform(rest, joints, weights, translations(), BABYLON)
    np.testing.assert_allclose(drawn[0], REST[0] + [0.5, 1.0, 0.0], rtol=0, atol=1e-15)
    assert np.isnan(drawn[1:]).all(), drawn
    # The shader model says the same.
    gpu = babylon.deform_gpu(rest, [joints], [weights], translations())
    np.testing.assert_allclose(gpu[0], drawn[0], rtol=0, atol=1e-15)
    assert np.isnan(gpu[1:]).all(), gpu


def test_babylon_cpu_path_skips_weights_not_above_zero_and_divides_by_the_rest():
    joints = np.array([[0, 1, 2, 0], [0, 1, 2, 0], [0, 1, 0, 0], [1, 0, 0, 0]])
    weights = np.array([
        [0.25, 0.25, 0.0, 0.0],  # sum 0.5: divided, (p + 0.5 (1, 0, 0) + 0.5 (0, 2, 0))
        [0.5, -1.0, 0.5, 0.0],   # the -1 is skipped: (0.5 C0 + 0.5 C2) p / 1
        [0.0, 0.0, 0.0, 0.0],    # no positive weight: 0 * (1 / 0) is NaN
        [-1.0, 0.0, 0.0, 0.0],   # the same
    ])
    rest = np.repeat(REST, 4, axis=0)
    cpu = babylon.deform_cpu(rest, [joints], [weights], translations())
    np.testing.assert_allclose(cpu[0], REST[0] + [0.5, 1.0, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(cpu[1], REST[0] + [0.5, 0.0, 2.0], rtol=0, atol=1e-15)
    assert np.isnan(cpu[2:]).all(), cpu
    # The shader keeps the -1 (sum 0: no screen position), so CPU and GPU differ on vertex 1.
    assert np.isnan(babylon.deform_gpu(rest, [joints], [weights], translations())[1]).all()
    # The undivided shader position: xyz = sum_k w_k (p + t_k), w = sum_k w_k.
    world = babylon.gpu_world_positions(rest[:1], [joints[:1]], [weights[:1]], translations())
    np.testing.assert_allclose(world[0], [*(0.5 * REST[0] + [0.25, 0.5, 0.0]), 0.5], rtol=0, atol=1e-15)


def test_babylon_reads_a_second_set_and_no_third():
    joints = [np.array([[0, 0, 0, 0]]), np.array([[1, 0, 0, 0]]), np.array([[2, 0, 0, 0]])]
    weights = [np.array([[0.5, 0, 0, 0]]), np.array([[0.5, 0, 0, 0]]), np.array([[0.5, 0, 0, 0]])]
    j, w = babylon.babylon_influences(joints, weights)
    assert j.shape == w.shape == (1, 8)
    cpu = babylon.deform_cpu(REST, joints, weights, translations())
    np.testing.assert_allclose(cpu[0], REST[0] + [0.5, 1.0, 0.0], rtol=0, atol=1e-15)  # JOINTS_2 ignored
