# SPDX-License-Identifier: GPL-3.0-or-later
"""The strict LBS core: a naive per-vertex loop as truth, slot invariance, no silent
normalisation, and the catalogue of bad inputs, each with its own error."""

from __future__ import annotations

import re

import numpy as np
import pytest

from skin_audit.core import errors
from skin_audit.core.maths.affine import rigid_inverse, translation_only_inverse
from skin_audit.core.maths.dqs import dual_quaternion_skinning
from skin_audit.core.maths.influences import as_points, validate_influences
from skin_audit.core.maths.lbs import linear_blend_skinning

RNG = np.random.default_rng(7)


def random_affine(n: int) -> np.ndarray:
    """(n, 4, 4) general affine matrices (rotation, scale and shear all allowed in LBS)."""
    m = np.tile(np.eye(4), (n, 1, 1))
    m[:, :3, :] = RNG.uniform(-2.0, 2.0, size=(n, 3, 4))
    return m


def random_rigid(n: int) -> np.ndarray:
    q = RNG.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    m = np.tile(np.eye(4), (n, 1, 1))
    # Unit quaternion to matrix, written out here (independent of the core's dqs module).
    m[:, 0, :3] = np.column_stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)])
    m[:, 1, :3] = np.column_stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)])
    m[:, 2, :3] = np.column_stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])
    m[:, :3, 3] = RNG.uniform(-3.0, 3.0, size=(n, 3))
    return m


def random_influences(v: int, k: int, j: int) -> tuple[np.ndarray, np.ndarray]:
    """(V, K) indices and weights summing to exactly 1 in float64 (last slot takes the remainder)."""
    idx = RNG.integers(0, j, size=(v, k))
    w = RNG.uniform(0.05, 1.0, size=(v, k))
    w /= w.sum(axis=1, keepdims=True)
    w[:, -1] = 1.0 - w[:, :-1].sum(axis=1)
    assert (w >= 0).all() and np.abs(w.sum(axis=1) - 1.0).max() <= 1e-15
    return idx, w


def naive_lbs(points, idx, weights, skin) -> np.ndarray:
    """Seed formula p' = sum_j w_j C_j p~, one vertex and one influence at a time."""
    out = np.zeros((len(points), 3))
    for v in range(len(points)):
        acc = np.zeros(4)
        for k in range(idx.shape[1]):
            acc += weights[v, k] * (skin[idx[v, k]] @ np.append(points[v], 1.0))
        assert abs(acc[3] - 1.0) < 1e-12
        out[v] = acc[:3]
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_lbs_matches_naive_loop_with_k_random_influences(k):
    points = RNG.uniform(-2.0, 2.0, size=(60, 3))
    skin = random_affine(6)
    idx, w = random_influences(60, k, 6)
    np.testing.assert_allclose(linear_blend_skinning(points, idx, w, skin), naive_lbs(points, idx, w, skin),
                               rtol=0, atol=1e-13)


def test_lbs_identity_skin_leaves_points_exactly_in_place():
    points = RNG.uniform(-2.0, 2.0, size=(30, 3))
    idx, w = random_influences(30, 3, 4)
    out = linear_blend_skinning(points, idx, w, np.tile(np.eye(4), (4, 1, 1)))
    np.testing.assert_allclose(out, points, rtol=0, atol=1e-15)


@pytest.mark.parametrize("skin_fn", [linear_blend_skinning, dual_quaternion_skinning])
def test_swapping_two_slots_gives_identical_result(skin_fn):
    points = RNG.uniform(-2.0, 2.0, size=(50, 3))
    skin = random_rigid(5)
    idx, w = random_influences(50, 2, 5)
    a = skin_fn(points, idx, w, skin)
    b = skin_fn(points, idx[:, ::-1], w[:, ::-1], skin)
    np.testing.assert_array_equal(a, b)  # a two-term sum is commutative, bit for bit


@pytest.mark.parametrize("skin_fn", [linear_blend_skinning, dual_quaternion_skinning])
def test_any_slot_permutation_of_four_influences_changes_only_rounding(skin_fn):
    points = RNG.uniform(-2.0, 2.0, size=(50, 3))
    skin = random_rigid(6)
    idx, w = random_influences(50, 4, 6)
    a = skin_fn(points, idx, w, skin)
    for perm in ([1, 0, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):
        np.testing.assert_allclose(skin_fn(points, idx[:, perm], w[:, perm], skin), a, rtol=0, atol=1e-14)


def test_zero_weight_slot_does_not_read_its_matrix():
    points = RNG.uniform(-1.0, 1.0, size=(10, 3))
    idx = np.tile([0, 1], (10, 1))
    w = np.tile([1.0, 0.0], (10, 1))
    skin = random_affine(2)
    other = skin.copy()
    other[1] = random_affine(1)[0]
    np.testing.assert_array_equal(linear_blend_skinning(points, idx, w, skin),
                                  linear_blend_skinning(points, idx, w, other))


def test_weights_0p4_0p4_at_bind_pose_are_rejected_and_would_give_0p8_p():
    p = np.array([[1.0, 2.0, 3.0]])
    idx, w = np.array([[0, 1]]), np.array([[0.4, 0.4]])
    bind_pose_skin = np.tile(np.eye(4), (2, 1, 1))  # C_j = B_j B_j^-1 = I
    with pytest.raises(errors.WeightSumError, match=r"vertex 0: weights sum to 0\.8"):
        linear_blend_skinning(p, idx, w, bind_pose_skin)
    # By hand, without the check: sum_j w_j C_j p~ = 0.8 p~, i.e. 0.8 p with homogeneous w 0.8.
    homo = sum(w[0, k] * (bind_pose_skin[idx[0, k]] @ np.append(p[0], 1.0)) for k in range(2))
    np.testing.assert_allclose(homo, [0.8, 1.6, 2.4, 0.8], rtol=0, atol=1e-15)


def test_weight_sum_tolerance_is_1e_12_and_nothing_is_normalised():
    idx = np.array([[0, 1]])
    validate_influences(idx, [[0.5, 0.5 + 5e-13]], 2)
    with pytest.raises(errors.WeightSumError):
        validate_influences(idx, [[0.5, 0.5 + 5e-12]], 2)
    _, w = validate_influences(idx, [[0.25, 0.75]], 2)
    np.testing.assert_array_equal(w, [[0.25, 0.75]])


# The catalogue of bad inputs (docs/twist-experiment.md, strict core): each is a separate error type or message,
# and each message names where the problem is.
P = np.zeros((4, 3))
IDX = np.array([[0, 1], [0, 1], [1, 0], [0, 1]])
W = np.array([[1.0, 0.0], [0.5, 0.5], [0.25, 0.75], [0.0, 1.0]])
SKIN = np.tile(np.eye(4), (2, 1, 1))


def _with(array: np.ndarray, where: tuple[int, ...], value) -> np.ndarray:
    out = array.copy()
    out[where] = value
    return out


def _skin_with(where: tuple[int, ...], value) -> np.ndarray:
    return _with(SKIN, where, value)


BAD_INPUTS = {
    "joint index out of range": (
        lambda: linear_blend_skinning(P, _with(IDX, (2, 1), 2), W, SKIN),
        errors.JointIndexError, r"vertex 2, slot 1: joint index 2 is outside 0\.\.1 \(weight 0\.75"),
    "joint index out of range in a zero-weight slot": (
        lambda: linear_blend_skinning(P, _with(IDX, (0, 1), 9), W, SKIN),
        errors.JointIndexError,
        r"vertex 0, slot 1: joint index 9 .*weight 0;.*even where the weight is zero"),
    "negative joint index": (
        lambda: linear_blend_skinning(P, _with(IDX, (3, 0), -1), W, SKIN),
        errors.JointIndexError, r"vertex 3, slot 0: joint index -1"),
    "negative weight": (
        lambda: linear_blend_skinning(P, IDX, _with(W, (1, 0), -0.5) + _with(0 * W, (1, 1), 1.0), SKIN),
        errors.NegativeWeightError, r"vertex 1, slot 0: weight -0\.5 is negative"),
    "weight sum not one": (
        lambda: linear_blend_skinning(P, IDX, _with(W, (3, 1), 0.9), SKIN),
        errors.WeightSumError, r"vertex 3: weights sum to 0\.9.*does not normalise"),
    "NaN weight": (
        lambda: linear_blend_skinning(P, IDX, _with(W, (2, 0), np.nan), SKIN),
        errors.NonFiniteWeightError, r"vertex 2, slot 0: weight is NaN"),
    "infinite weight": (
        lambda: linear_blend_skinning(P, IDX, _with(W, (1, 1), np.inf), SKIN),
        errors.NonFiniteWeightError, r"vertex 1, slot 1: weight is infinite"),
    "non-finite point": (
        lambda: linear_blend_skinning(_with(P, (3, 2), np.inf), IDX, W, SKIN),
        errors.NonFinitePointError, r"vertex 3 is \[0\.0, 0\.0, inf\]"),
    "non-affine matrix": (
        lambda: linear_blend_skinning(P, IDX, W, _skin_with((1, 3, 2), 1.0)),
        errors.NonAffineMatrixError,
        r"skinning matrix\[1\] is not affine: last row is \[0\.0, 0\.0, 1\.0, 1\.0\]"),
    "non-finite matrix": (
        lambda: linear_blend_skinning(P, IDX, W, _skin_with((0, 0, 3), np.nan)),
        errors.NonFiniteMatrixError, r"skinning matrix\[0\] has a NaN or infinite entry"),
    "matrix magnitude too large": (
        lambda: linear_blend_skinning(P, IDX, W, _skin_with((1, 2, 3), 1e9)),
        errors.MatrixMagnitudeError, r"skinning matrix\[1\] has an entry of magnitude 1e\+09"),
    "translation-only inverse given a rotation": (
        lambda: translation_only_inverse(np.stack([np.eye(4), np.diag([1.0, -1.0, -1.0, 1.0])])),
        errors.UnsupportedInverseError, r"bind matrix\[1\] contains rotation"),
    "translation-only inverse given a scale": (
        lambda: translation_only_inverse(np.stack([np.diag([0.01, 0.01, 0.01, 1.0])])),
        errors.UnsupportedInverseError, r"bind matrix\[0\] contains scale"),
    "rigid inverse given a shear": (
        lambda: rigid_inverse(np.stack([np.eye(4), _with(np.eye(4), (0, 2), 0.3)]), "bind matrix"),
        errors.NotRigidError, r"bind matrix\[1\] is not a rigid transform"),
    "points of the wrong shape": (
        lambda: linear_blend_skinning(np.zeros((4, 2)), IDX, W, SKIN),
        errors.ShapeError, r"points: expected shape \(V, 3\), got \(4, 2\)"),
    "indices and weights of different shapes": (
        lambda: linear_blend_skinning(P, IDX[:, :1], W, SKIN),
        errors.ShapeError, r"indices \(4, 1\) and weights \(4, 2\)"),
    "influence rows do not match the vertices": (
        lambda: linear_blend_skinning(P[:3], IDX, W, SKIN),
        errors.ShapeError, r"4 rows for 3 vertices"),
    "skinning matrices of the wrong shape": (
        lambda: linear_blend_skinning(P, IDX, W, np.eye(4)),
        errors.ShapeError, r"expected shape \(J, 4, 4\), got \(4, 4\)"),
    "non-integer joint indices": (
        lambda: linear_blend_skinning(P, IDX.astype(float), W, SKIN),
        errors.ShapeError, r"joint indices must be integers, got dtype float64"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_raises_its_own_error_naming_where(case):
    call, error_type, message = BAD_INPUTS[case]
    with pytest.raises(error_type, match=message) as err:
        call()
    assert isinstance(err.value, errors.SkinAuditError)
    assert err.value.code == error_type.code


def test_bad_input_catalogue_has_at_least_the_seeds_eleven_distinct_errors():
    seen = set()
    for call, error_type, _ in BAD_INPUTS.values():
        with pytest.raises(error_type) as err:
            call()
        # A message differs in its wording, not only in its numbers.
        seen.add((type(err.value), re.sub(r"[-\d.e+]+|\[.*?\]", "#", str(err.value))))
    assert len(seen) >= 11
    assert len({t for t, _ in seen}) >= 10


def test_the_good_catalogue_input_itself_is_accepted():
    # Proves every bad case above fails because of its one change, not a broken base.
    out = linear_blend_skinning(P + [[1.0, 2.0, 3.0]], IDX, W, SKIN)
    np.testing.assert_array_equal(out, np.tile([1.0, 2.0, 3.0], (4, 1)))


def test_as_points_counts_every_non_finite_vertex():
    p = np.zeros((5, 3))
    p[1, 0], p[4, 1] = np.nan, -np.inf
    with pytest.raises(errors.NonFinitePointError, match=r"vertex 1 .*2 non-finite vertices"):
        as_points(p)
