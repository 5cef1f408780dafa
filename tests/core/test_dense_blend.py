# SPDX-License-Identifier: GPL-3.0-or-later
"""One pose by one dense product (``core/maths/dense_blend``) against a loop over vertices and
groups written from Blender's formula, and against the layout of runs; which path a
recomputation takes where the dense product cannot serve."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit.armature_modifier import recompute_blender
from skin_audit.core.audit.skinned_mesh import ArmatureModifierSettings
from skin_audit.core.maths import dense_blend
from skin_audit.core.maths.dense_blend import blend_dense
from tests.factories import numpy_rigs as nr


def _loop(weights: np.ndarray, rows: np.ndarray, displacement: np.ndarray, points: np.ndarray,
          mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hand-written control: every vertex, every deform group with a non-zero weight."""
    out = points.copy()
    contrib = np.zeros(len(points))
    count = np.zeros(len(points), dtype=np.intp)
    for v in range(len(points)):
        acc = np.zeros(3)
        for k, g in enumerate(rows):
            w = float(weights[g, v])
            if w != 0.0:
                acc += w * (displacement[k, :, :3] @ points[v] + displacement[k, :, 3])
                contrib[v] += w
                count[v] += 1
        if contrib[v] > 1e-4:
            out[v] = points[v] + mask[v] * acc / contrib[v]
    return out, contrib, count


def _weights(rng: np.random.Generator, groups: int, v: int) -> np.ndarray:
    w = np.zeros((groups, v), dtype=np.float32)
    # Two to three groups a vertex, neighbours in a slowly changing band (as modelled meshes are
    # stored), some vertices unweighted, some with a tiny sum, a few negative weights.
    band = (np.arange(v) * (groups - 2)) // max(v, 1)
    for k in range(3):
        w[np.minimum(band + k, groups - 1), np.arange(v)] = rng.random(v).astype(np.float32) * (k < 2 or 0.5)
    w[:, : v // 20] = 0.0
    w[:, v // 20: v // 10] *= np.float32(1e-5)
    w[0, rng.choice(v, 5, replace=False)] = -0.25
    return w


@pytest.mark.parametrize("v", [257, dense_blend.PARALLEL_FROM + 3 * dense_blend.BLOCK + 11])
def test_blend_dense_matches_a_loop_over_vertices_and_groups(v: int) -> None:
    """Rows not contiguous (a group in the middle does not deform), a mask, blocks and threads."""
    rng = np.random.default_rng(v)
    weights = _weights(rng, 9, v)
    rows = np.array([0, 1, 2, 4, 5, 6, 7, 8])
    displacement = rng.normal(size=(len(rows), 3, 4))
    points = rng.normal(size=(v, 3))
    mask = rng.random(v)
    got = blend_dense(weights, rows, displacement, points, mask, 1e-4)
    check = slice(None) if v < 1000 else np.r_[0:300, dense_blend.BLOCK - 50:dense_blend.BLOCK + 50, v - 300:v]
    want = _loop(weights[:, check], rows, displacement, points[check], mask[check])
    np.testing.assert_allclose(got[0][check], want[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got[1][check], want[1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got[2][check], want[2])


def _random_mesh(v: int, groups: int = 6, seed: int = 0, weights: np.ndarray | None = None, **fields: object):
    rng = np.random.default_rng(seed)
    names = [f"B{k}" for k in range(groups)]
    rows = nr.chain(names)
    rest = np.column_stack([rng.normal(size=v) * 0.3, np.linspace(0.0, 2.0, v), rng.normal(size=v) * 0.3])
    rig = nr.Rig(tuple(rows), rest, {n: np.zeros(v) for n in names})
    channel = np.array([nr.rotation("z", 0.3 * (k + 1)) for k in range(groups)])
    channel[:, :3, 3] = rng.normal(size=(groups, 3)) * 0.1
    w = _weights(rng, groups, v) if weights is None else weights
    return nr.skinned_mesh(rig, blender=None, weights=w, channel=channel,
                           mesh_to_armature=nr.rotation("x", 0.4) @ np.diag([1.0, 2.0, 1.0, 1.0]), **fields)


def test_a_first_pose_takes_the_dense_product_and_equals_the_layout() -> None:
    v = dense_blend.PARALLEL_FROM + 5000
    dense_mesh, runs_mesh = _random_mesh(v), _random_mesh(v)
    dense = recompute_blender(dense_mesh, dense_mesh.read_pose)
    runs = recompute_blender(runs_mesh, runs_mesh.read_pose, build_layout=True)
    assert not dense_mesh.has_blend_layout() and runs_mesh.has_blend_layout()
    np.testing.assert_allclose(dense.positions, runs.positions, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dense.contrib, runs.contrib, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(dense.influences, runs.influences)
    # Once the layout is built, the next pose uses it.
    recompute_blender(runs_mesh, runs_mesh.read_pose)
    assert runs_mesh.has_blend_layout()


def test_non_finite_weights_reach_only_their_vertices_as_in_the_layout() -> None:
    mesh = _random_mesh(3000, seed=1)
    mesh.weights[1, 2000] = np.nan
    mesh.weights[2, 2100] = np.inf
    dense = recompute_blender(mesh, mesh.read_pose)
    assert not mesh.has_blend_layout()
    runs_too = _random_mesh(3000, seed=1, weights=mesh.weights)
    runs = recompute_blender(runs_too, runs_too.read_pose, build_layout=True)
    bad = ~np.isfinite(runs.positions).all(axis=1)
    assert bad[[2000, 2100]].all() and bad.sum() == 2
    np.testing.assert_array_equal(~np.isfinite(dense.positions).all(axis=1), bad)
    np.testing.assert_allclose(dense.positions[~bad], runs.positions[~bad], rtol=0, atol=1e-12)


def test_where_the_dense_product_cannot_serve_the_layout_is_built() -> None:
    # A non-finite deform matrix: the product would spread it to every vertex.
    mesh = _random_mesh(500)
    channel = mesh.read_pose.channel.copy()
    channel[3, 0, 0] = np.nan
    rec = recompute_blender(mesh, mesh.read_pose.at(channel))
    assert mesh.has_blend_layout()
    weighted = mesh.weights[3] != 0
    np.testing.assert_array_equal(~np.isfinite(rec.positions).all(axis=1), weighted)
    # More deform groups than the product pays for.
    many = _random_mesh(500, groups=dense_blend.MAX_GROUPS + 1)
    recompute_blender(many, many.read_pose)
    assert many.has_blend_layout()
    # Preserve Volume blends dual quaternions; a modifier without vertex groups moves nothing.
    dual = _random_mesh(500, modifier=ArmatureModifierSettings("Armature", preserve_volume=True))
    plain = _random_mesh(500)
    assert not np.allclose(recompute_blender(dual, dual.read_pose).positions,
                           recompute_blender(plain, plain.read_pose).positions)
    fewer = _random_mesh(dense_blend.MAX_GROUPS)
    recompute_blender(fewer, fewer.read_pose)
    assert not fewer.has_blend_layout()
