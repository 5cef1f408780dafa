# SPDX-License-Identifier: GPL-3.0-or-later
"""The blend grouped by bone against a plain loop over vertices and slots, and the engine
layout against the per-vertex engine blend (NaN weights, joints out of range, stay rule)."""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.engines.weights import (
    PreparedInfluences,
    deform_layout,
    deform_prepared,
    layout_prepared,
)
from skin_audit.core.maths.bone_runs import blend_runs, blend_runs_many, gather_points, runs_from_table


def _table(rng: np.random.Generator, v: int, k: int, j: int) -> tuple[np.ndarray, np.ndarray]:
    bones = rng.integers(0, j, size=(v, k))
    weights = rng.random((v, k))
    weights[rng.random((v, k)) < 0.3] = 0.0  # unused slots
    weights[: v // 10] = 0.0  # unweighted vertices
    return bones, weights


def _loop(points: np.ndarray, bones: np.ndarray, weights: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """The hand-written control: every vertex, every slot with a weight."""
    out = np.zeros((len(points), 3))
    for v in range(len(points)):
        for b, w in zip(bones[v], weights[v], strict=True):
            if w != 0.0:
                out[v] += w * (matrices[b, :3, :3] @ points[v] + matrices[b, :3, 3])
    return out


@pytest.mark.parametrize("k", [1, 2, 5])
def test_blend_runs_matches_a_loop_over_vertices(k: int) -> None:
    rng = np.random.default_rng(k)
    points = rng.normal(size=(300, 3))
    bones, weights = _table(rng, 300, k, 7)
    matrices = rng.normal(size=(7, 4, 4))
    runs = runs_from_table(bones, weights)
    assert np.all(np.diff(runs.bone) > 0)  # one run per bone, bones ascending
    got = blend_runs(runs, gather_points(runs, points), matrices)
    np.testing.assert_allclose(got.T, _loop(points, bones, weights, matrices), rtol=0, atol=1e-12)


def test_folded_weights_and_non_finite_matrices_reach_only_their_vertices() -> None:
    rng = np.random.default_rng(3)
    points = rng.normal(size=(200, 3))
    bones, weights = _table(rng, 200, 3, 5)
    matrices = rng.normal(size=(5, 4, 4))
    matrices[4, 0, 0] = np.nan
    runs = runs_from_table(bones, weights)
    factor = rng.random(200)
    got = blend_runs(runs, gather_points(runs, points), matrices, runs.weight * factor[runs.vertex]).T
    nan_rows = np.any((bones == 4) & (weights != 0.0), axis=1)
    assert np.isnan(got[nan_rows]).any(axis=1).all()
    want = _loop(points, bones, weights, matrices) * factor[:, None]
    np.testing.assert_allclose(got[~nan_rows], want[~nan_rows], rtol=0, atol=1e-12)


def test_engine_layout_draws_what_the_per_vertex_engine_blend_draws() -> None:
    rng = np.random.default_rng(5)
    points = rng.normal(size=(400, 3))
    joints, weights = _table(rng, 400, 4, 9)
    joints[100, 0], weights[100, 0] = 12, 0.5  # a used slot past the last joint: NaN
    joints[101, 1], weights[101, 1] = 15, 0.0  # an unused slot past the last joint: harmless
    weights[102, 2] = np.nan  # a NaN weight poisons its vertex
    stay = np.zeros(400, dtype=bool)
    stay[:40] = True  # the runtime's zero-weight rule (and more): drawn at rest
    prepared = PreparedInfluences(joints, weights, stay)
    layout = layout_prepared(points, prepared, 9)
    for _ in range(3):
        matrices = rng.normal(size=(9, 4, 4))
        got = deform_layout(layout, matrices)
        want = deform_prepared(points, prepared, matrices)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=0, atol=1e-12)
        assert np.isnan(got[100]).all() and np.isnan(got[102]).all() and np.isfinite(got[101]).all()


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_the_blend_split_across_threads_is_the_same_blend(monkeypatch: pytest.MonkeyPatch, threads: str) -> None:
    """Forced to split (any size), on 1 to 3 threads: bit for bit the result of one thread, and the loop's."""
    import skin_audit.core.maths.bone_runs as bone_runs

    rng = np.random.default_rng(11)
    points = rng.normal(size=(500, 3))
    bones, weights = _table(rng, 500, 4, 13)
    matrices = rng.normal(size=(13, 4, 4))
    runs = runs_from_table(bones, weights)
    gathered = gather_points(runs, points)
    serial = blend_runs(runs, gathered, matrices)  # 2,000 weights: below PARALLEL_FROM
    # A blend at other matrices next: numpy may hand its freed buffer to the next blend, so a
    # block the split leaves unwritten would show these values instead of passing unseen.
    blend_runs(runs, gathered, np.full((13, 4, 4), 7.0))
    monkeypatch.setattr(bone_runs, "PARALLEL_FROM", 0)
    monkeypatch.setenv("SKIN_AUDIT_THREADS", threads)
    np.testing.assert_array_equal(gather_points(runs, points), gathered)
    split = blend_runs(runs, gathered, matrices)
    np.testing.assert_array_equal(split, serial)
    np.testing.assert_allclose(split.T, _loop(points, bones, weights, matrices), rtol=0, atol=1e-12)
    # Added in place to a (V, 3) array: the same sums, added column by column, that array returned.
    base = rng.normal(size=(500, 3))
    added = base.copy()
    assert blend_runs(runs, gathered, matrices, add_to=added) is added
    np.testing.assert_array_equal(added, base + serial.T)


def test_a_pose_moving_few_bones_blends_only_theirs_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """recompute_blender at a pose turning one bone of a chain: the moving runs alone (as the audit's
    spot checks do) give what blending every run gives (the others add P^-1 I P - I, zero up to
    rounding), and the loop's result."""
    import skin_audit.core.tolerances as tolerances
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from tests.factories import numpy_rigs as nr

    rig = nr.chain_tube(("Root", "Mid", "Tip"), rings=13)
    mesh = nr.skinned_mesh(rig, blender=None, mesh_to_armature=nr.rotation("z", 0.3))
    channel = nr.channels(rig.rows, {"Tip": nr.rotation("x", 1.1)})  # Root and Mid stay at rest
    runs = mesh.blend_layout.runs
    moving = np.isin(runs.bone, [rig.group_names.index("Tip")])
    assert 0 < np.diff(runs.starts)[moving].sum() < 0.7 * len(runs.vertex)  # the selection path runs
    selected = recompute_blender(mesh, mesh.read_pose.at(channel)).positions
    monkeypatch.setattr(tolerances, "BLEND_MOVING_SHARE", 0.0)  # every run blended
    every = recompute_blender(mesh, mesh.read_pose.at(channel)).positions
    np.testing.assert_allclose(every, selected, rtol=0, atol=1e-14)
    w = rig.weight_array().astype(np.float64)
    own = nr.blender_positions(rig.rest, rig.group_names, w, rig.rows, channel, nr.rotation("z", 0.3),
                               float32=False)
    np.testing.assert_allclose(selected, own, rtol=0, atol=1e-12)


def test_a_nan_weight_reaches_its_vertex_whichever_bones_move() -> None:
    """A NaN weight on a bone at rest poisons its vertex at a one-bone pose too (the moving runs
    alone would have left it out)."""
    from skin_audit.core.audit.armature_modifier import recompute_blender
    from tests.factories import numpy_rigs as nr

    rig = nr.chain_tube(("Root", "Mid", "Tip"), rings=13)
    weights = rig.weight_array()
    root = rig.group_names.index("Root")
    vertex = int(np.flatnonzero(weights[root] > 0)[0])
    weights[root, vertex] = np.nan
    mesh = nr.skinned_mesh(rig, blender=None, weights=weights)
    channel = nr.channels(rig.rows, {"Tip": nr.rotation("x", 1.1)})  # Root stays at rest
    positions = recompute_blender(mesh, mesh.read_pose.at(channel)).positions
    assert np.isnan(positions[vertex]).all()
    assert np.isfinite(np.delete(positions, vertex, axis=0)).all()


def test_run_all_finishes_every_task_before_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from skin_audit.core.maths.parallel import run_all

    monkeypatch.setenv("SKIN_AUDIT_THREADS", "2")
    finished = threading.Event()

    def fails() -> None:
        raise ValueError("first task")

    def slow() -> None:
        time.sleep(0.2)
        finished.set()

    with pytest.raises(ValueError, match="first task"):
        run_all([fails, slow])
    assert finished.is_set()

    def fails_later() -> None:
        time.sleep(0.05)
        raise KeyError("pool task")

    with pytest.raises(KeyError, match="pool task"):
        run_all([lambda: None, fails_later])


@pytest.mark.parametrize("threads", ["1", "2"])
def test_several_poses_blended_together_are_each_pose_blended_alone(monkeypatch: pytest.MonkeyPatch,
                                                                    threads: str) -> None:
    """``blend_runs_many``: five poses' products in one, cut to OpenBLAS's one-thread size (runs
    longer than a cut), split across threads; each pose against the loop, added in place too."""
    import skin_audit.core.maths.bone_runs as bone_runs

    rng = np.random.default_rng(12)
    points = rng.normal(size=(3000, 3))
    bones, weights = _table(rng, 3000, 3, 4)  # few bones: runs of about 2,000 weights
    runs = runs_from_table(bones, weights)
    gathered = gather_points(runs, points)
    matrices = rng.normal(size=(5, 4, 4, 4))
    monkeypatch.setattr(bone_runs, "GEMM_SIZE", 12 * 5 * 700)  # products of 700 columns
    monkeypatch.setattr(bone_runs, "PARALLEL_FROM", 0)
    monkeypatch.setenv("SKIN_AUDIT_THREADS", threads)
    together = blend_runs_many(runs, gathered, matrices)
    assert len(together) == 5
    for k in range(5):
        np.testing.assert_allclose(together[k].T, _loop(points, bones, weights, matrices[k]), rtol=0, atol=1e-12)
    base = [rng.normal(size=(3000, 3)) for _ in range(5)]
    added = blend_runs_many(runs, gathered, matrices[:, :, :3, :], add_to=[b.copy() for b in base])
    for k in range(5):
        np.testing.assert_allclose(added[k], base[k] + together[k].T, rtol=0, atol=1e-12)
