# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape checks' numpy building blocks against independent truth (no bpy).

- The collapse measures against the closed form of the two-bone twist:
  ``sigma_min((1 - w) I + w R(theta)) = sqrt(1 - 4 w (1 - w) sin^2(theta / 2))``
  and ``det = sigma_min^2`` (the axis keeps length 1, the plane across it is a
  scaled rotation), for any rotation axis and any common frame.
- Dual quaternion measures: a rotation, so 1 and 1.
- Bone name sides, graph components, nearest neighbours and point-segment
  distances against hand-written answers and brute force.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from skin_audit.core.audit.stray_weights import segment_distance
from skin_audit.core.audit.symmetry import mirror_frames, pair_bones, side_and_mirror, side_key
from skin_audit.core.maths.mesh_graph import component_labels, nearest_within
from tests.factories.collapse import blended_linear, dqs_rotation_measures, squash_measures

#: float64 work on unit-sized matrices: a few ulps of 1.
EXACT = 1e-12
#: A singular value from sqrt(eigenvalue of A^T A): absolute error ~ sqrt(eps) ~ 1.5e-8 near 0.
SQRT_EPS_BOUND = 3e-8


# ---------------------------------------------------------------- own truth


def axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """(3, 3) Rodrigues rotation about ``axis`` (normalised here) by ``angle`` radians."""
    k = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1.0 - np.cos(angle)) * cross @ cross


def closed_form_ratio(w: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """docs/twist-experiment.md: ``r'/r = sqrt(1 - 4 w (1 - w) sin^2(theta / 2))``."""
    return np.sqrt(np.maximum(1.0 - 4.0 * w * (1.0 - w) * np.sin(theta / 2.0) ** 2, 0.0))


def homogeneous(r3: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = r3
    if t is not None:
        m[:3, 3] = t
    return m


def random_unit_quaternions(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """(3, 3) rotation of a unit quaternion (w, x, y, z), written out independently."""
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


# A grid of child weights in [0, 1] and twist angles in [-2 pi, 2 pi], one vertex per pair.
W_GRID, THETA_GRID = (a.ravel() for a in np.meshgrid(np.linspace(0.0, 1.0, 41),
                                                     np.linspace(-2.0 * np.pi, 2.0 * np.pi, 97)))


# ---------------------------------------------------------------- collapse measures


def test_two_bone_twist_identity_through_blended_linear():
    """One vertex per (w, theta); the root (bone 0) stays, child bone 1 + k turns by Rz(theta_k)."""
    v = len(W_GRID)
    idx = np.arange(v)
    thetas, which = np.unique(THETA_GRID, return_inverse=True)
    channel = np.broadcast_to(np.eye(4), (len(thetas) + 1, 4, 4)).copy()
    channel[1:] = [homogeneous(axis_rotation(np.array([0.0, 0.0, 1.0]), t)) for t in thetas]
    columns = [(0, idx, 1.0 - W_GRID)] + [(1 + k, idx[which == k], W_GRID[which == k]) for k in range(len(thetas))]
    linear, contrib = blended_linear(columns, channel, v)
    assert np.allclose(contrib, 1.0, rtol=0, atol=EXACT)
    smallest, det = squash_measures(linear, contrib)
    expected = closed_form_ratio(W_GRID, THETA_GRID)
    assert np.abs(smallest - expected).max() <= EXACT
    assert np.abs(det - expected**2).max() <= EXACT
    # The cylinder's own figures (docs/twist-experiment.md): mid ring at 0 / 90 / 180 degrees, theta 120 at w 1/2, 1/4.
    for w, deg, ratio in ((0.5, 0.0, 1.0), (0.5, 90.0, 0.707106781186548), (0.5, 180.0, 0.0),
                          (0.5, 120.0, 0.5), (0.25, 120.0, np.sqrt(7.0) / 4.0)):
        a = (1.0 - w) * np.eye(3) + w * axis_rotation(np.array([0.0, 0.0, 1.0]), np.radians(deg))
        s, d = squash_measures(a[None], np.ones(1))
        assert s[0] == pytest.approx(ratio, abs=EXACT)
        assert d[0] == pytest.approx(ratio**2, abs=EXACT)


def test_blended_linear_ignores_translation_and_divides_by_weight_sum():
    """Translations never enter the 3x3; unnormalised weights are divided out as Blender does."""
    rz = axis_rotation(np.array([0.0, 0.0, 1.0]), np.radians(120.0))
    channel = np.stack([homogeneous(np.eye(3), np.array([5.0, -2.0, 7.0])),
                        homogeneous(rz, np.array([-3.0, 11.0, 0.5]))])
    idx = np.array([0])
    # Weights 0.3 and 0.3 (sum 0.6): Blender blends them as 0.5 / 0.5.
    linear, contrib = blended_linear([(0, idx, np.array([0.3])), (1, idx, np.array([0.3]))], channel, 1)
    assert contrib[0] == pytest.approx(0.6, abs=EXACT)
    assert np.allclose(linear[0], 0.3 * np.eye(3) + 0.3 * rz, atol=EXACT)
    smallest, det = squash_measures(linear, contrib)
    assert smallest[0] == pytest.approx(0.5, abs=EXACT)
    assert det[0] == pytest.approx(0.25, abs=EXACT)


def test_vertices_blender_leaves_alone_keep_their_shape():
    """A weight sum at or below 1e-4 does not move the vertex in Blender: measures (1, 1)."""
    linear = np.zeros((2, 3, 3))
    linear[1] = 5e-5 * np.diag([1.0, 0.0, 0.0])
    smallest, det = squash_measures(linear, np.array([0.0, 5e-5]))
    assert np.array_equal(smallest, [1.0, 1.0])
    assert np.array_equal(det, [1.0, 1.0])


def test_identity_holds_for_any_axis_and_any_common_frame():
    """sigma_min((1 - w) Q + w Q R) with R about a random axis equals the closed form: the measure
    is a property of the relative rotation only (singular values ignore a common rotation Q)."""
    rng = np.random.default_rng(5)
    n = 2000
    w = rng.uniform(0.0, 1.0, n)
    w[:50] = 0.5  # the worst case, where the closed form reaches 0 at theta = pi
    theta = rng.uniform(-2.0 * np.pi, 2.0 * np.pi, n)
    theta[:10] = np.pi
    axes = rng.normal(size=(n, 3))
    frames = random_unit_quaternions(rng, n)
    blended = np.stack([
        (1.0 - wk) * quaternion_matrix(q) + wk * quaternion_matrix(q) @ axis_rotation(a, t)
        for wk, t, a, q in zip(w, theta, axes, frames, strict=True)
    ])
    smallest, det = squash_measures(blended, np.ones(n))
    expected = closed_form_ratio(w, theta)
    # squash_measures takes sqrt(eigenvalue of A^T A): near a collapse that costs half the digits
    # (measured 6e-9 where the true value is 0), so allow a few sqrt(float64 eps).
    assert np.abs(smallest - expected).max() <= SQRT_EPS_BOUND
    assert np.abs(det - expected**2).max() <= EXACT
    # numpy's SVD, a different algorithm, meets the closed form at full precision.
    assert np.abs(np.linalg.svd(blended, compute_uv=False)[:, -1] - expected).max() <= EXACT


def test_scale_shows_in_both_measures():
    """A bone scaled by s everywhere (no rotation): sigma_min = s and det = s^3."""
    for s in (0.25, 0.5, 2.0):
        smallest, det = squash_measures((s * np.eye(3))[None], np.ones(1))
        assert smallest[0] == pytest.approx(s, abs=EXACT)
        assert det[0] == pytest.approx(s**3, abs=EXACT)


def test_dual_quaternion_measures_are_one_for_rigid_blends():
    """Any (unnormalised) blend of rotation quaternions is a rotation: (1, 1) up to rounding."""
    rng = np.random.default_rng(11)
    unit = random_unit_quaternions(rng, 500)
    s, d = dqs_rotation_measures(unit)
    assert np.abs(s - 1.0).max() <= EXACT
    assert np.abs(d - 1.0).max() <= EXACT
    # Weighted sums of two or three unit quaternions (signs aligned, as DQS does), never normalised here.
    parts = random_unit_quaternions(rng, 1500).reshape(500, 3, 4)
    parts *= np.where(np.einsum("vc,vkc->vk", parts[:, 0], parts) < 0, -1.0, 1.0)[..., None]  # align signs
    weights = rng.dirichlet(np.ones(3), 500)
    blend = np.einsum("vk,vkc->vc", weights, parts)  # vk,vkc->vc: weighted sum per vertex
    s, d = dqs_rotation_measures(blend)
    assert np.abs(s - 1.0).max() <= EXACT
    assert np.abs(d - 1.0).max() <= EXACT
    # The two-bone twist at 180 degrees, mid ring: LBS collapses (0), DQS keeps the ring (1).
    mid = 0.5 * np.array([1.0, 0.0, 0.0, 0.0]) + 0.5 * np.array([0.0, 0.0, 0.0, 1.0])
    s, d = dqs_rotation_measures(mid[None])
    assert s[0] == pytest.approx(1.0, abs=EXACT)
    assert d[0] == pytest.approx(1.0, abs=EXACT)


# ---------------------------------------------------------------- bone name sides


@pytest.mark.parametrize(("name", "expected"), [
    ("Arm.L", ("L", "Arm.R")),
    ("Arm.R", ("R", "Arm.L")),
    ("arm_r", ("R", "arm_l")),
    ("arm_l", ("L", "arm_r")),
    ("thigh-L", ("L", "thigh-R")),
    ("L_hand", ("L", "R_hand")),
    ("r_hand", ("R", "l_hand")),
    ("LeftFoot", ("L", "RightFoot")),
    ("RIGHTFOOT", ("R", "LEFTFOOT")),
    ("foot_left", ("L", "foot_right")),
    ("mixamorig:RightArm", ("R", "mixamorig:LeftArm")),
    ("mixamorig:LeftHandThumb1", ("L", "mixamorig:RightHandThumb1")),
    ("hand.R.001", ("R", "hand.L.001")),
    ("DEF-upper_arm.L.001", ("L", "DEF-upper_arm.R.001")),
    ("upperarm_l", ("L", "upperarm_r")),
    ("Bone", None),
    ("Lower", None),
    ("center", None),
    ("Root", None),
    ("Spine.001", None),
    ("leg", None),
    ("Hair_long", None),
])
def test_side_and_mirror(name, expected):
    assert side_and_mirror(name) == expected


@pytest.mark.parametrize(("name", "expected"), [
    # A side letter followed by a joint number (RiggedFigure, CesiumMan in tests/assets).
    ("arm_joint_L_1", ("L", "arm_joint_R_1")),
    ("leg_joint_R_5", ("R", "leg_joint_L_5")),
    ("Skeleton_arm_joint_L__4_", ("L", "Skeleton_arm_joint_R__4_")),
    # 3ds Max Biped and twist-bone conventions: the side token in the middle.
    ("Bip01 L Thigh", ("L", "Bip01 R Thigh")),
    ("thigh_l_twist", ("L", "thigh_r_twist")),
    # glTF node indices after a Left/Right word (Fox).
    ("b_LeftUpperArm_09", ("L", "b_RightUpperArm_09")),
])
def test_side_token_in_the_middle(name, expected):
    assert side_and_mirror(name) == expected


@pytest.mark.parametrize("name", ["Cleft_chin", "Eyebright", "Upright", "Bright_light", "Lrg_bone", "Rib"])
def test_left_right_inside_a_word_is_no_side(name):
    assert side_and_mirror(name) is None


@pytest.mark.parametrize(("left", "right"), [
    ("b_LeftUpperArm_09", "b_RightUpperArm_06"),  # Fox: the node index differs per side
    ("Skeleton_arm_joint_L__4_", "Skeleton_arm_joint_R"),  # CesiumMan
    ("hand.L.001", "hand.R.001"),
    ("Arm.L", "Arm.R"),
])
def test_side_key_is_shared_by_both_sides(left, right):
    kl, kr = side_key(left), side_key(right)
    assert kl is not None and kr is not None
    assert (kl[0], kr[0]) == ("L", "R") and kl[1] == kr[1]
    assert side_key("Leg.R")[1] != side_key("Arm.L")[1]


def test_mirror_of_mirror_is_the_name():
    for name in ("Arm.L", "arm_r", "L_hand", "LeftFoot", "mixamorig:RightArm", "hand.R.001", "foot_left"):
        side, other = side_and_mirror(name)
        back = side_and_mirror(other)
        assert back is not None and back[1] == name and back[0] != side


def test_pairs_plane_and_mirror_frames_of_a_turned_rig():
    """Left frames at random, right frames their Blender mirror ``H B diag(-1, 1, 1)`` across x = 0.25
    (what Symmetrize makes), then the whole rig turned and moved: the pairs, the plane and a zero
    mismatch survive the turn; rolling one right bone about its own Y shows as that angle."""
    rng = np.random.default_rng(7)
    c = 0.25
    h = np.diag([-1.0, 1.0, 1.0, 1.0])
    h[0, 3] = 2.0 * c  # reflection across x = c
    flip_x = np.diag([-1.0, 1.0, 1.0, 1.0])
    left = [homogeneous(quaternion_matrix(q), t)
            for q, t in zip(random_unit_quaternions(rng, 3), ([0.6, 0.1, 1.0], [1.2, -0.1, 1.1], [0.4, 0.2, 1.5]),
                            strict=True)]
    names = ("Spine", "Arm.L", "Arm.R", "Hand.L", "Hand.R", "Ear.L")
    rest = np.stack([homogeneous(np.eye(3), np.array([c, 0.0, 0.0])),
                     left[0], h @ left[0] @ flip_x, left[1], h @ left[1] @ flip_x, left[2]])
    turn = homogeneous(quaternion_matrix(random_unit_quaternions(rng, 1)[0]), np.array([3.0, -1.0, 0.5]))
    turned = turn @ rest
    pairs = pair_bones(names, turned[:, :3, 3])
    assert pairs.pairs == ((1, 2), (3, 4)) and pairs.unpaired == (5,)
    # The plane: normal along the turned X axis, through the turned (c, 0, 0).
    assert abs(float(pairs.normal @ turn[:3, 0])) == pytest.approx(1.0, abs=EXACT)
    assert float(pairs.normal @ turned[0, :3, 3]) == pytest.approx(pairs.offset, abs=EXACT)
    for f in mirror_frames(turned, pairs):
        assert f.angle <= 1e-4 and f.head_distance <= EXACT
    for roll in (180.0, 30.0):
        rolled = turned.copy()
        rolled[2] = rolled[2] @ homogeneous(axis_rotation(np.array([0.0, 1.0, 0.0]), np.radians(roll)))
        first, second = mirror_frames(rolled, pairs)
        assert (first.left, first.right) == (1, 2)
        assert first.angle == pytest.approx(roll, abs=1e-4) and first.head_distance <= EXACT
        assert second.angle <= 1e-4


# ---------------------------------------------------------------- graph helpers


def bfs_labels(vertex_count: int, edges: np.ndarray) -> np.ndarray:
    """Connected pieces by breadth-first search, labelled by their smallest vertex."""
    neighbours: list[list[int]] = [[] for _ in range(vertex_count)]
    for a, b in edges.tolist():
        neighbours[a].append(b)
        neighbours[b].append(a)
    label = np.full(vertex_count, -1, dtype=np.intp)
    for start in range(vertex_count):
        if label[start] >= 0:
            continue
        label[start] = start
        queue = deque([start])
        while queue:
            v = queue.popleft()
            for u in neighbours[v]:
                if label[u] < 0:
                    label[u] = start
                    queue.append(u)
    return label


@pytest.mark.parametrize("seed", range(12))
def test_component_labels_match_breadth_first_search(seed):
    rng = np.random.default_rng(seed)
    v = int(rng.integers(1, 400))
    e = int(rng.integers(0, 2 * v))
    edges = rng.integers(0, v, size=(e, 2)).astype(np.intp)
    assert np.array_equal(component_labels(v, edges), bfs_labels(v, edges))


def test_component_labels_long_chain_in_reverse_order():
    """A path whose edges are listed from the far end: labels must still all reach vertex 0."""
    v = 3000
    edges = np.column_stack([np.arange(v - 1, 0, -1), np.arange(v - 2, -1, -1)]).astype(np.intp)
    assert np.array_equal(component_labels(v, edges), np.zeros(v, dtype=np.intp))
    assert np.array_equal(component_labels(4, np.zeros((0, 2), dtype=np.intp)), np.arange(4))


def brute_nearest(points: np.ndarray, queries: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    d = np.linalg.norm(queries[:, None, :] - points[None, :, :], axis=2)
    best = d.argmin(axis=1)
    dist = d[np.arange(len(queries)), best]
    return np.where(dist <= radius, best, -1), dist


@pytest.mark.parametrize(("seed", "radius"), [(0, 0.05), (1, 0.2), (2, 0.01), (3, 1.5), (4, 0.1)])
def test_nearest_within_matches_brute_force(seed, radius):
    rng = np.random.default_rng(seed)
    points = rng.uniform(-1.0, 1.0, size=(300, 3))
    queries = np.vstack([rng.uniform(-1.2, 1.2, size=(200, 3)),
                         points[:50] + rng.normal(scale=radius / 4, size=(50, 3))])
    got = nearest_within(points, queries, radius)
    expected, dist = brute_nearest(points, queries, radius)
    # Same answer where the nearest point is unique (random data: always); found means within radius.
    assert np.array_equal(got, expected)
    found = got >= 0
    assert np.all(np.linalg.norm(points[got[found]] - queries[found], axis=1) <= radius)
    assert np.all(dist[~found] > radius)


def test_nearest_within_negative_coordinates_and_cell_edges():
    """Points straddling cell boundaries (floor of negatives) and a mirrored copy of a grid."""
    g = np.linspace(-1.0, 1.0, 9)
    points = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    mirrored = points * np.array([-1.0, 1.0, 1.0])
    partner = nearest_within(points, mirrored, 1e-6)
    assert np.all(partner >= 0)
    assert np.allclose(points[partner], mirrored, atol=1e-12)
    assert np.array_equal(nearest_within(points, np.array([[5.0, 5.0, 5.0]]), 0.1), [-1])
    assert nearest_within(np.zeros((0, 3)), points[:3], 0.1).tolist() == [-1, -1, -1]


# ---------------------------------------------------------------- point to bone segment


def test_segment_distance_hand_cases():
    head, tail = np.array([0.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])
    points = np.array([
        [1.0, 1.0, 0.0],  # beside the middle: perpendicular distance 1
        [0.0, -3.0, 0.0],  # behind the head: 3 to the head
        [0.0, 5.0, 4.0],  # past the tail: (0, 3, 4) from the tail, 5
        [0.0, 2.0, 0.0],  # on the tail
        [3.0, 0.5, 4.0],  # beside: 5
    ])
    assert np.allclose(segment_distance(points, head, tail), [1.0, 3.0, 5.0, 0.0, 5.0], atol=EXACT)
    # A zero-length bone: distance to its head.
    assert np.allclose(segment_distance(points, head, head), np.linalg.norm(points, axis=1), atol=EXACT)
    # A slanted bone: (1, 1, 1) direction, point (1, 0, 0) projects to t = 1/3.
    d = segment_distance(np.array([[1.0, 0.0, 0.0]]), np.zeros(3), np.ones(3))
    assert d[0] == pytest.approx(np.sqrt(2.0 / 3.0), abs=EXACT)
