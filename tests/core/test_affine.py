# SPDX-License-Identifier: GPL-3.0-or-later
"""4x4 affine helpers against hand-written matrices: rotations, inverses, hierarchy, C = G B^-1."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.errors import (
    HierarchyError,
    MatrixMagnitudeError,
    NonAffineMatrixError,
    NonFiniteMatrixError,
    NotRigidError,
    ShapeError,
    UnsupportedInverseError,
)
from skin_audit.core.maths.affine import (
    affine_inverse,
    as_matrices,
    evaluate_hierarchy,
    local_from_world,
    rigid_inverse,
    rotation,
    skinning_matrices,
    translation,
    translation_only_inverse,
    validate_affine,
)

RNG = np.random.default_rng(20240601)


def rodrigues(axis: np.ndarray, angle: float) -> np.ndarray:
    """3x3 rotation by Rodrigues' formula R = I + sin(a) K + (1 - cos(a)) K^2, written here."""
    x, y, z = axis / np.linalg.norm(axis)
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def random_rigid(n: int, include_half_turns: bool = True) -> np.ndarray:
    """(n, 4, 4) rotations about random axes (some by exactly 180 degrees) plus random translations."""
    m = np.tile(np.eye(4), (n, 1, 1))
    for i in range(n):
        angle = np.pi if include_half_turns and i % 4 == 0 else RNG.uniform(-np.pi, np.pi)
        m[i, :3, :3] = rodrigues(RNG.normal(size=3), angle)
        m[i, :3, 3] = RNG.uniform(-5.0, 5.0, size=3)
    return m


def hand_tz(z: float) -> np.ndarray:
    return np.array([[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, z], [0, 0, 0, 1]])


def test_rotations_are_right_handed_about_each_axis():
    quarter = np.pi / 2.0
    # Right hand: x -> y about z, y -> z about x, z -> x about y.
    np.testing.assert_allclose(rotation("z", quarter) @ [1, 0, 0, 1], [0, 1, 0, 1], atol=1e-15)
    np.testing.assert_allclose(rotation("x", quarter) @ [0, 1, 0, 1], [0, 0, 1, 1], atol=1e-15)
    np.testing.assert_allclose(rotation("y", quarter) @ [0, 0, 1, 1], [1, 0, 0, 1], atol=1e-15)
    for axis, unit in (("x", [1, 0, 0]), ("y", [0, 1, 0]), ("z", [0, 0, 1])):
        np.testing.assert_allclose(rotation(axis, 0.7)[:3, :3], rodrigues(np.array(unit, float), 0.7),
                                   atol=1e-15)


def test_translation_moves_points_and_not_directions():
    t = translation(1.0, -2.0, 3.5)
    np.testing.assert_array_equal(t @ [1.0, 1.0, 1.0, 1.0], [2.0, -1.0, 4.5, 1.0])
    np.testing.assert_array_equal(t @ [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0])


def test_translation_only_inverse_undoes_pure_translations():
    t = RNG.uniform(-100.0, 100.0, size=(7, 3))
    m = np.tile(np.eye(4), (7, 1, 1))
    m[:, :3, 3] = t
    inv = translation_only_inverse(m)
    np.testing.assert_array_equal(inv[:, :3, 3], -t)
    np.testing.assert_array_equal(inv[:, :3, :3], np.tile(np.eye(3), (7, 1, 1)))
    np.testing.assert_allclose(m @ inv, np.tile(np.eye(4), (7, 1, 1)), atol=1e-13)
    np.testing.assert_allclose(inv @ m, np.tile(np.eye(4), (7, 1, 1)), atol=1e-13)


@pytest.mark.parametrize(
    "linear",
    [rotation("z", 0.3), rotation("x", 1e-6), rotation("z", np.pi), rotation("y", np.pi)],
    ids=["z-0.3rad", "x-1e-6rad", "z-half-turn", "y-half-turn"],
)
def test_translation_only_inverse_refuses_rotation_and_says_rotation(linear):
    # Joint 1 of three carries the rotation; the message must say which, and what it is.
    m = np.stack([translation(0, 0, 1), translation(1, 2, 3) @ linear, np.eye(4)])
    with pytest.raises(UnsupportedInverseError, match=r"bind matrix\[1\] contains rotation \(") as err:
        translation_only_inverse(m)
    assert "scale" not in str(err.value)


@pytest.mark.parametrize("diag", [(2.0, 1.0, 1.0), (1.001, 1.001, 1.001), (1.0, 0.5, 3.0)])
def test_translation_only_inverse_refuses_scale_and_says_scale(diag):
    m = np.stack([np.eye(4), np.eye(4), np.diag([*diag, 1.0])])
    with pytest.raises(UnsupportedInverseError, match=r"bind matrix\[2\] contains scale \(") as err:
        translation_only_inverse(m)
    assert "rotation" not in str(err.value).split("refuses")[0]


def test_translation_only_inverse_names_rotation_and_scale_together():
    with pytest.raises(UnsupportedInverseError, match="rotation and scale"):
        translation_only_inverse(rotation("z", 0.5) @ np.diag([2.0, 1.0, 1.0, 1.0]))


def test_rigid_inverse_is_the_inverse_of_random_rigid_transforms():
    m = random_rigid(40)
    inv = rigid_inverse(m)
    eye = np.tile(np.eye(4), (40, 1, 1))
    np.testing.assert_allclose(inv @ m, eye, atol=1e-13)
    np.testing.assert_allclose(m @ inv, eye, atol=1e-13)
    np.testing.assert_allclose(inv, np.linalg.inv(m), atol=1e-13)


@pytest.mark.parametrize(
    "linear",
    [
        np.diag([1.0, 1.0, 1.01]),
        np.array([[1.0, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
        np.diag([-1.0, 1.0, 1.0]),
        -np.eye(3),
    ],
    ids=["scale", "shear", "reflection", "point-reflection"],
)
def test_rigid_inverse_refuses_scale_shear_and_reflection(linear):
    m = np.tile(np.eye(4), (3, 1, 1))
    m[1, :3, :3] = linear
    with pytest.raises(NotRigidError, match=r"bone\[1\] is not a rigid transform"):
        rigid_inverse(m, "bone")


def test_rigid_inverse_tolerance_accepts_float32_rounded_rotations_only_when_asked():
    m32 = random_rigid(5, include_half_turns=False).astype(np.float32).astype(np.float64)
    with pytest.raises(NotRigidError):
        rigid_inverse(m32)  # float64 tolerance 1e-9 is tighter than float32 rounding (~1e-7)
    np.testing.assert_allclose(rigid_inverse(m32, tolerance=1e-5) @ m32, np.tile(np.eye(4), (5, 1, 1)),
                               atol=1e-5)


def test_hierarchy_three_chain_is_parent_times_local():
    local = random_rigid(3)
    local[2] = local[2] @ np.diag([1.0, 2.0, 1.0, 1.0])  # any affine local works, not only rigid
    world = evaluate_hierarchy(local, [-1, 0, 1])
    np.testing.assert_array_equal(world[0], local[0])
    np.testing.assert_allclose(world[1], local[0] @ local[1], atol=1e-12)
    np.testing.assert_allclose(world[2], local[0] @ local[1] @ local[2], atol=1e-12)
    # Order matters: L_child G_parent is a different matrix.
    assert np.abs(world[2] - local[2] @ local[1] @ local[0]).max() > 1e-3


def test_affine_inverse_undoes_affine_and_3x3_stacks():
    """Cofactors against the definition (M M^-1 = I) and LAPACK, on rigid, scaled and sheared
    matrices far from the origin; a singular matrix gives non-finite entries, not an exception."""
    m = random_rigid(50)
    m[:, :3, :3] = m[:, :3, :3] @ (np.eye(3) + 0.3 * RNG.normal(size=(50, 3, 3)))
    m[:, :3, 3] *= 100.0
    inv = affine_inverse(m)
    np.testing.assert_allclose(m @ inv, np.broadcast_to(np.eye(4), m.shape), atol=1e-10)
    np.testing.assert_allclose(inv, np.linalg.inv(m), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(inv[:, 3], np.broadcast_to([0.0, 0.0, 0.0, 1.0], (50, 4)))
    np.testing.assert_allclose(affine_inverse(m[:, :3, :3]), np.linalg.inv(m[:, :3, :3]), rtol=1e-10, atol=1e-10)
    singular = np.eye(4)
    singular[0, 0] = 0.0
    assert not np.isfinite(affine_inverse(singular)).all()


def test_local_from_world_undoes_the_hierarchy_walk():
    local = random_rigid(4)
    local[3] = local[3] @ np.diag([1.0, 2.0, 0.5, 1.0])
    parents = [-1, 0, 1, 0]
    np.testing.assert_allclose(local_from_world(evaluate_hierarchy(local, parents), parents), local, atol=1e-12)


def test_hierarchy_with_two_roots_and_a_branch():
    local = np.stack([hand_tz(1.0), hand_tz(2.0), hand_tz(4.0), hand_tz(8.0)])
    world = evaluate_hierarchy(local, [-1, 0, 0, -1])
    np.testing.assert_array_equal(world[:, 2, 3], [1.0, 3.0, 5.0, 8.0])


@pytest.mark.parametrize("parents, joint", [([-1, 2, 0], 1), ([-1, 1, 0], 1), ([0, -1], 0)])
def test_hierarchy_rejects_a_parent_after_its_child(parents, joint):
    local = np.tile(np.eye(4), (len(parents), 1, 1))
    with pytest.raises(HierarchyError, match=rf"joint {joint} has parent {parents[joint]}"):
        evaluate_hierarchy(local, parents)


def test_hierarchy_shape_errors():
    with pytest.raises(ShapeError, match="expected 2 entries, got 3"):
        evaluate_hierarchy(np.tile(np.eye(4), (2, 1, 1)), [-1, 0, 1])
    with pytest.raises(ShapeError, match=r"\(4, 4\)"):
        evaluate_hierarchy(np.eye(4), [-1])


def test_skinning_matrix_is_current_times_inverse_bind_not_the_reverse():
    bind, current = random_rigid(4), random_rigid(4)
    skin = skinning_matrices(current, rigid_inverse(bind))
    np.testing.assert_allclose(skin, current @ np.linalg.inv(bind), atol=1e-12)
    assert np.abs(skin - np.linalg.inv(bind) @ current).max() > 1e-3
    # At the bind pose every skinning matrix is the identity.
    np.testing.assert_allclose(skinning_matrices(bind, rigid_inverse(bind)), np.tile(np.eye(4), (4, 1, 1)),
                               atol=1e-13)


def test_skinning_matrices_shape_mismatch():
    with pytest.raises(ShapeError, match=r"\(2, 4, 4\).*\(3, 4, 4\)"):
        skinning_matrices(np.tile(np.eye(4), (2, 1, 1)), np.tile(np.eye(4), (3, 1, 1)))


def test_validate_affine_names_the_bad_matrix():
    good = np.tile(np.eye(4), (3, 1, 1))
    bad = good.copy()
    bad[2, 3, 0] = 0.5
    with pytest.raises(NonAffineMatrixError, match=r"bind matrix\[2\] is not affine"):
        validate_affine(bad, "bind matrix")
    bad = good.copy()
    bad[1, 0, 3] = np.nan
    with pytest.raises(NonFiniteMatrixError, match=r"bind matrix\[1\] has a NaN"):
        validate_affine(bad, "bind matrix")
    bad = good.copy()
    bad[0, 1, 3] = 2e6
    with pytest.raises(MatrixMagnitudeError, match=r"bind matrix\[0\].*2e\+06"):
        validate_affine(bad, "bind matrix")
    bad[0, 1, 3] = 1e6  # the bound itself is accepted
    validate_affine(bad)


def test_as_matrices_reports_the_observed_shape():
    with pytest.raises(ShapeError, match=r"\(2, 3, 3\)"):
        as_matrices(np.zeros((2, 3, 3)))
