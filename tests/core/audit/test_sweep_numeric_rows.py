# SPDX-License-Identifier: GPL-3.0-or-later
"""A numeric sweep bone's rows found from the inherit forest give the scan's bits (no bpy).

A bone whose poses bend a B-Bone is evaluated numerically over the vertices blending two
classes of bones (same linear part at every pose) or sitting on the bent B-Bone.  When the
classes are the bones its turn turns and the others, ``_two_class_rows`` lists those vertices
from the inherit forest and sums each one's weight per class from the influence table;
``_class_rows`` scans every weight.  Both must give the same vertices and the same bits, and
so must the whole sweep with the forest's rows and with the scan alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from skin_audit.core.audit import pose_sweep
from skin_audit.core.maths import bbone as bb
from tests.core.audit.test_sweep_threads import _bbone_chain_mesh, assert_same_sweep, with_middle_bbone
from tests.factories import bbone_reference as ref
from tests.factories.numpy_rigs import BoneRow, Rig, skinned_mesh


def _fork_mesh(vertices: int = 2500, seed: int = 11):
    """A B-Bone between the root and one branch, a second branch off the root beside it, and
    noisy weights over all four bones (vertices blend up to four)."""
    rows = (BoneRow("Root", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
            BoneRow("Bend", (0.0, 1.0, 0.0), (0.2, 2.0, 0.1), "Root", 0.3, bbone_segments=5),
            BoneRow("TipA", (0.2, 2.0, 0.1), (0.4, 2.9, 0.0), "Bend"),
            BoneRow("TipB", (0.0, 1.0, 0.0), (-0.9, 1.4, 0.0), "Root"))
    rng = np.random.default_rng(seed)
    co = rng.uniform((-1.0, 0.0, -0.3), (0.5, 3.0, 0.3), size=(vertices, 3))
    centres = np.array([[0.0, 0.5, 0.0], [0.1, 1.5, 0.0], [0.3, 2.5, 0.0], [-0.5, 1.2, 0.0]])
    w = np.exp(-np.sum((co[None] - centres[:, None]) ** 2, axis=2) / 0.3)
    w[rng.random(w.shape) < 0.3] = 0.0  # some vertices blend fewer bones
    rig = Rig(rows, co, {r.name: w[j] for j, r in enumerate(rows)})
    return with_middle_bbone(skinned_mesh(rig, blender=None), rows, bb.BBoneShape(ease_in=1.1))


def _sweep_inputs(mesh):
    """What ``run_sweep`` builds before its bones: the test-pose mesh, its poses, each bone's
    pose indices, the inherit forest and the B-Bone ends."""
    # (the sweep poses start from rest, B-Bone pose properties included)
    poses = pose_sweep.sweep_poses(mesh, (90.0, 180.0))
    by_bone: dict[int, list[int]] = {}
    for k, p in enumerate(poses):
        by_bone.setdefault(p.bone, []).append(k)
    forest = pose_sweep._InheritForest(mesh, mesh.influence_table.weights != 0)
    return mesh, poses, by_bone, forest, pose_sweep._BBoneEnds(mesh)


def _numeric_cases(mesh):
    """Per numeric bone of ``mesh``'s sweep: the arguments both row finders take."""
    mesh, poses, by_bone, forest, ends = _sweep_inputs(mesh)
    shared = pose_sweep._Shared(mesh)
    for bone, pose_ids in by_bone.items():
        plan = pose_sweep._plan_bone(mesh, poses, bone, pose_ids, ends, forest)
        if not plan.numeric:
            continue
        channels = pose_sweep._bone_channels(mesh, [poses[k] for k in pose_ids])
        class_of, used, _ = pose_sweep._bone_classes(channels[:, :, :3, :3], mesh.flat_columns.bones)
        yield mesh, bone, class_of, used, plan, forest, shared


@pytest.mark.parametrize("build", [_bbone_chain_mesh, _fork_mesh])
def test_forest_rows_are_the_scanned_rows_bit_for_bit(build):
    compared = 0
    for mesh, bone, class_of, used, plan, forest, shared in _numeric_cases(build()):
        is_bent = np.zeros(len(class_of), dtype=bool)
        is_bent[list(plan.bent)] = True
        fast = pose_sweep._two_class_rows(mesh, bone, class_of, used, plan.turned, forest, is_bent, shared)
        index, per_class = pose_sweep._class_rows(mesh, class_of, int(class_of.max()) + 1, is_bent, shared)
        assert fast is not None  # (two classes on these rigs: the forest applies)
        assert np.array_equal(fast[0], index)
        assert fast[1].dtype == per_class.dtype and np.array_equal(fast[1], per_class)
        assert index.size > 0
        compared += 1
    assert compared >= 2


def test_forest_rows_refuse_classes_that_are_not_the_turned_bones():
    mesh, bone, class_of, used, plan, forest, shared = next(_numeric_cases(_fork_mesh()))
    is_bent = np.zeros(len(class_of), dtype=bool)
    is_bent[list(plan.bent)] = True
    wrong = plan.turned.copy()
    wrong[np.flatnonzero(~wrong)[0]] = True  # a bone the turn does not turn
    assert pose_sweep._two_class_rows(mesh, bone, class_of, used, wrong, forest, is_bent, shared) is None
    three = class_of.copy()
    three[used[-1]] = 2  # a third class
    assert pose_sweep._two_class_rows(mesh, bone, three, used, plan.turned, forest, is_bent, shared) is None


def _sweep_before_and_after(monkeypatch, build, name: str, value) -> tuple:
    """The sweep of ``build()``, then again with ``pose_sweep.<name>`` set to ``value`` (each run
    computes its B-Bone curves afresh)."""
    before = pose_sweep.run_sweep(_afresh(build()))
    monkeypatch.setattr(pose_sweep, name, value)
    return before, pose_sweep.run_sweep(_afresh(build()))


def _afresh(mesh):
    """The mesh, its B-Bone records' memos of posed curves emptied."""
    ref.forget_curves(*mesh.bones.bbones)
    return mesh


@pytest.mark.parametrize("build", [_bbone_chain_mesh, _fork_mesh])
def test_the_sweep_gives_the_same_bits_with_the_scan_alone(monkeypatch, build):
    with_forest, scanned = _sweep_before_and_after(monkeypatch, build, "_two_class_rows", lambda *args: None)
    assert_same_sweep(with_forest, scanned)
    assert with_forest.smallest.min() < 0.95  # the B-Bone bends: vertices squash


@pytest.mark.parametrize("build", [_bbone_chain_mesh, _fork_mesh])
def test_curves_computed_ahead_give_the_same_bits_one_bone_at_a_time(monkeypatch, build):
    # The numeric bones' B-Bone curves are computed together, a chunk of bones ahead; with a
    # budget of one bone per chunk each bone's curves are computed alone, as before batching.
    together, alone = _sweep_before_and_after(monkeypatch, build, "_AHEAD_NUMBERS", 1)
    assert_same_sweep(together, alone)
    assert len(list(_numeric_cases(build()))) >= 2  # (several numeric bones: the chunks differ)


def _plans(mesh, channels: bool):
    """Every sweep bone's plan, from the inherit forest or (``channels``) from each bone's first
    pose computed and compared bone by bone, the classification the forest replaced."""
    mesh, poses, by_bone, forest, ends = _sweep_inputs(mesh)
    forest.finite_rest = not channels  # (the path taken where rest matrices hold NaN)
    return [pose_sweep._plan_bone(mesh, poses, bone, ids, ends, forest) for bone, ids in by_bone.items()]


def _tree_mesh(seed: int, max_back: int):
    """A random tree (bones every way, some not inheriting rotation) with noisy weights."""
    from tests.core.audit.test_posed_channels import _tree
    rows = _tree(seed, 40, max_back)
    rng = np.random.default_rng(seed)
    weights = rng.random((len(rows), 600)) * (rng.random((len(rows), 600)) < 0.1)
    return skinned_mesh(Rig(tuple(rows), rng.normal(size=(600, 3)), {r.name: weights[j] for j, r in enumerate(rows)}),
                        blender=None)


@pytest.mark.parametrize("build", [_bbone_chain_mesh, _fork_mesh, lambda: _tree_mesh(0, 4), lambda: _tree_mesh(1, 1)])
@pytest.mark.parametrize("rigid_blend", [None, 10.0])  # 10: every turn too small to tell from rest
def test_bone_plans_from_the_forest_are_those_of_the_channels_compared(monkeypatch, build, rigid_blend):
    if rigid_blend is not None:
        monkeypatch.setattr(pose_sweep.tolerances, "RIGID_BLEND", rigid_blend)
    from_forest, compared = _plans(build(), False), _plans(build(), True)
    assert len(from_forest) == len(compared) > 2
    for a, b in zip(from_forest, compared, strict=True):
        assert (a.bone, a.pose_ids, a.numeric, a.bent) == (b.bone, b.pose_ids, b.numeric, b.bent)
        assert np.array_equal(a.turned, b.turned), a.bone
    if rigid_blend is None and build in (_bbone_chain_mesh, _fork_mesh):
        assert any(p.numeric for p in from_forest) and not all(p.numeric for p in from_forest)
    if rigid_blend is not None:
        assert all(p.turned.all() for p in from_forest)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_running_worst_of_many_poses_at_once_is_that_of_pose_by_pose_updates(seed):
    # update_many (a numeric bone's batch of poses in one pass) against update, pose by pose in
    # pose order: values on a coarse grid (ties within a row and with the running worst), NaN,
    # -0.0 against 0.0, and a mix of moderate and extreme poses.
    rng = np.random.default_rng(seed)
    v, n, p = 500, 300, 7
    index = np.sort(rng.choice(v, n, replace=False))
    s = np.round(rng.random((n, p)) * 4) / 4
    d = np.round(rng.random((n, p)) * 4) / 4 - 0.25
    s[rng.random((n, p)) < 0.1] = np.nan
    d[rng.random((n, p)) < 0.1] = np.nan
    s[rng.random((n, p)) < 0.05] = -0.0
    ks = np.sort(rng.choice(1000, p, replace=False))
    moderate = rng.random(p) < 0.5
    moderate[:2] = True, False

    def started() -> pose_sweep._SweepArrays:
        r = pose_sweep._SweepArrays(v)
        r.update(index, 0, np.round(rng_start.random(n) * 4) / 4, np.round(rng_start.random(n) * 4) / 4, True)
        return r

    rng_start = np.random.default_rng(seed + 10)
    one_by_one = started()
    for column, k in enumerate(ks.tolist()):
        one_by_one.update(index, k, s[:, column].copy(), d[:, column].copy(), bool(moderate[column]))
    rng_start = np.random.default_rng(seed + 10)
    together = started()
    together.update_many(index, ks, s, d, moderate)
    for name, a in vars(one_by_one).items():
        b = vars(together)[name]
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
        assert np.array_equal(np.signbit(a), np.signbit(b)), name
    assert (together.worst[index] > 0).any() and (together.moderate_pose[index] > 0).any()


@pytest.mark.parametrize("build", [_bbone_chain_mesh, _fork_mesh])
def test_numeric_bones_give_the_same_bits_one_pose_at_a_time(monkeypatch, build):
    # A numeric bone's poses go in batches (each vertex's poses side by side); with room for one
    # pose a batch each pose is built, measured and kept alone, as before batching.
    batched, alone = _sweep_before_and_after(monkeypatch, build, "_BATCH_ROWS", 1)
    assert_same_sweep(batched, alone)
    assert batched.smallest.min() < 0.95


def _brute_force_values(mesh) -> tuple[list, np.ndarray]:
    """Every sweep pose's smallest singular value of every vertex's blended 3x3 (by weight sum),
    from each column's own matrices (B-Bones: every one by its segments, bent or not) and
    LAPACK's SVD; 1 where the weight sum is too small for Blender to move the vertex."""
    base = mesh  # the sweep poses start from rest, B-Bone pose properties included
    co = base.rest_armature
    poses = pose_sweep.sweep_poses(base, (90.0, 180.0))
    values = np.ones((len(poses), base.vertex_count))
    for k, pose in enumerate(poses):
        channel = pose_sweep.pose_channel(base, pose)
        total = np.zeros((base.vertex_count, 3, 3))
        contrib = np.zeros(base.vertex_count)
        for j, idx, w in base.deform_columns:
            rb = base.bones.bbones[j]
            if rb is not None:
                segments = ref.one_pose_segments(rb, j, channel, base.bones.rest)
                m = ref.vertex_matrices(co[idx], rb.spline, channel[j], rb.rest_segments, segments)[:, :3, :3]
            else:
                m = channel[j][:3, :3]
            total[idx] += w[:, None, None] * m
            contrib[idx] += w
        moved = contrib > 1e-4
        values[k, moved] = np.linalg.svd(total[moved] / contrib[moved, None, None], compute_uv=False)[:, -1]
    return poses, np.minimum(values, 1.0)


@pytest.mark.parametrize("build", [_bbone_chain_mesh, _fork_mesh])
def test_sweep_values_are_those_of_every_pose_blended_and_measured_one_by_one(build):
    # Independent truth for the numeric bones' batches (and the closed form beside them): every
    # vertex at every pose blended column by column and measured by LAPACK.  Some vertices carry
    # a weight sum under Blender's 1e-4 rule: they do not move, so they measure 1.
    mesh = build()
    weights = np.array(mesh.weights, copy=True)
    faint = np.flatnonzero(weights.sum(axis=0) > 0)[::37]
    weights[:, faint] *= 1e-5 / weights[:, faint].sum(axis=0)
    mesh = dataclasses.replace(mesh, weights=weights)
    result = pose_sweep.run_sweep(mesh)
    poses, values = _brute_force_values(mesh)
    assert list(result.poses) == poses
    assert values.min() < 0.5 and (values[:, faint] == 1.0).all()
    np.testing.assert_allclose(result.smallest, values.min(axis=0), rtol=0, atol=1e-9)
    moderate = np.array([pose_sweep.is_moderate(p) for p in poses])
    np.testing.assert_allclose(result.moderate_smallest, values[moderate].min(axis=0), rtol=0, atol=1e-9)
    named = result.worst_pose >= 0
    np.testing.assert_allclose(values[result.worst_pose[named], np.flatnonzero(named)], result.smallest[named],
                               rtol=0, atol=1e-9)
    assert (result.smallest[~named] == 1.0).all()
    for bone, worst in result.per_bone.items():
        mine = [k for k, p in enumerate(poses) if p.bone == bone]
        assert worst == pytest.approx(values[mine].min(), abs=1e-9), mesh.bones.names[bone]
    numeric = {c[1] for c in _numeric_cases(mesh)}
    assert numeric and numeric < set(result.per_bone)  # numeric bones and closed-form ones were compared
