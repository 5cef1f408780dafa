# SPDX-License-Identifier: GPL-3.0-or-later
"""The pose sweep's shortcuts against the plain computations they replace (no bpy):

- ``smallest_singular_and_det`` (closed form over many 3x3) against LAPACK's SVD and
  determinant, on random matrices, rotation blends, near collapses and rank-one matrices;
- ``turned_channels`` (every pose of one bone in one subtree walk) against the walk
  written out (``_reference``), pose by pose;
- the sweep's per-bone vertex lists (``_InheritForest``, one walk up from every weight)
  against the vertices whose weighted bones' linear parts differ at the pose turning the
  bone (channels from the walk written out), on random trees with bones that do not
  inherit rotation and random weights.
"""

from __future__ import annotations

import numpy as np
import pytest

from skin_audit.core.audit import pose_sweep
from skin_audit.core.audit.stress_poses import turned_channels
from skin_audit.core.maths.small_svd import smallest_singular_and_det
from tests.core.audit.test_posed_channels import _reference, _tree
from tests.factories.numpy_rigs import Rig, bones_table, rotation, skinned_mesh

#: float64 on unit-sized matrices: a few hundred ulps (LAPACK's own error is a few ulps).
EXACT = 1e-13


def _rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    angle = rng.uniform(-np.pi, np.pi, n)
    k = np.zeros((n, 3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k -= k.transpose(0, 2, 1)
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * k @ k


def _matrices(rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = 4000
    f = rng.random(n)[:, None, None]
    r1, r2 = _rotations(rng, n), _rotations(rng, n)
    half_turn = np.diag([1.0, -1.0, -1.0])  # 180 degrees about X
    near = 0.5 + rng.normal(size=n)[:, None, None] * 1e-7
    return {
        "random": rng.normal(size=(n, 3, 3)),
        "two bones": (1.0 - f) * np.eye(3) + f * r1,  # singular values 1 and a double pair
        "three bones": (1.0 - f) * 0.6 * np.eye(3) + (1.0 - f) * 0.4 * r2 + f * r1,
        "tiny weight": (1.0 - 1e-9) * np.eye(3) + 1e-9 * r1,
        "near collapse": (1.0 - near) * np.eye(3) + near * half_turn,  # rank one at 0.5 exactly
        "rotations": r1,
        "flat": np.einsum("nij,jk,nkl->nil", r1, np.diag([1.0, 0.3, 1e-11]), r2),
        "two largest equal": np.einsum("nij,jk,nkl->nil", r1, np.diag([1.0, 1.0, 0.25]), r2),
        "rank one": np.einsum("nij,jk,nkl->nil", r1, np.diag([2.0, 1e-9, 1e-12]), r2),
    }


@pytest.mark.parametrize("kind", ["random", "two bones", "three bones", "tiny weight", "near collapse",
                                  "rotations", "flat", "two largest equal", "rank one"])
def test_closed_form_smallest_singular_value_and_determinant_match_lapack(kind):
    a = _matrices(np.random.default_rng(7))[kind]
    smallest, det = smallest_singular_and_det(a)
    sv = np.linalg.svd(a, compute_uv=False)
    # Absolute error relative to the largest singular value: what LAPACK itself guarantees.
    assert np.abs(smallest - sv[:, -1]).max() <= EXACT * sv[:, 0].max()
    assert np.abs(det - np.linalg.det(a)).max() <= EXACT * (sv[:, 0] ** 3).max()
    flat = smallest_singular_and_det(a.reshape(-1, 9))  # the row-major (N, 9) form
    assert np.array_equal(flat[0], smallest) and np.array_equal(flat[1], det)


def test_closed_form_leaves_nan_rows_nan_and_handles_none():
    a = np.stack([np.eye(3), np.full((3, 3), np.nan), np.zeros((3, 3))])
    smallest, det = smallest_singular_and_det(a)
    assert smallest[0] == pytest.approx(1.0, abs=EXACT) and np.isnan(smallest[1]) and smallest[2] == 0.0
    empty = smallest_singular_and_det(np.zeros((0, 3, 3)))
    assert empty[0].shape == (0,) and empty[1].shape == (0,)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_turned_channels_match_the_walk_written_out_pose_by_pose(seed):
    bones = bones_table(_tree(seed, 60, 4))
    rng = np.random.default_rng(seed)
    rotations = np.array([rotation(axis, float(rng.uniform(-3.0, 3.0))) for axis in "xyzy"])
    for bone in (0, 5, 17, 59):
        batched = turned_channels(bones, bone, rotations)
        for p, rot in enumerate(rotations):
            local = np.broadcast_to(np.eye(4), bones.rest.shape).copy()
            local[bone] = rot
            np.testing.assert_allclose(batched[p], _reference(bones, local), atol=1e-12)


@pytest.mark.parametrize("seed, max_back", [(0, 4), (1, 1), (2, 60)])
def test_vertices_each_bone_changes_match_the_scan_of_every_vertex(seed, max_back):
    rows = _tree(seed, 60, max_back)
    rng = np.random.default_rng(seed)
    v, k = 3000, 5
    weights = np.zeros((len(rows), v))
    for i in range(v):
        picked = rng.choice(len(rows), int(rng.integers(1, k + 1)), replace=False)
        weights[picked, i] = rng.random(len(picked)) + 0.01
    weights[:, :40] = 0.0  # some vertices weighted to nothing
    rig = Rig(tuple(rows), rng.normal(size=(v, 3)), {r.name: weights[j] for j, r in enumerate(rows)})
    mesh = skinned_mesh(rig, blender=None)
    table = mesh.influence_table
    nonzero = table.weights != 0
    forest = pose_sweep._InheritForest(mesh, nonzero)
    checked = 0
    for bone in range(len(rows)):
        # The truth from matrices, not from the sweep's own scan: the channels of the pose turning
        # ``bone`` by the walk written out; the bones it turns share its linear part, and a vertex
        # changes shape when the linear parts of its weighted bones are not all the same.
        local = np.broadcast_to(np.eye(4), (len(rows), 4, 4)).copy()
        local[bone] = rotation("x", 1.0)
        lin = _reference(mesh.bones, local)[:, :3, :3]
        turns = np.abs(lin - lin[bone]).max(axis=(1, 2)) <= 1e-9
        assert np.array_equal(forest.turns(bone), turns), bone
        first = np.argmax(nonzero, axis=1)  # each vertex's first weighted slot
        slot_lin = lin[table.bones]  # (V, K, 3, 3)
        first_lin = np.take_along_axis(slot_lin, first[:, None, None, None], axis=1)
        differs = (np.abs(slot_lin - first_lin).max(axis=(2, 3)) > 1e-9) & nonzero
        expected = np.flatnonzero(differs.any(axis=1))
        found = forest.vertices(bone)
        assert len(found) == len(set(found.tolist())), bone  # each vertex once
        assert np.array_equal(np.sort(found), expected), bone
        checked += len(expected)
    assert checked > v  # the rig really has vertices that change, for many bones


@pytest.mark.parametrize("start, end, prev_segments, next_segments, mapping", [
    ("AUTO", "AUTO", 1, 1, "STRAIGHT"),
    ("ABSOLUTE", "ABSOLUTE", 4, 3, "STRAIGHT"),
    ("RELATIVE", "TANGENT", 1, 1, "CURVED"),
    ("TANGENT", "RELATIVE", 2, 1, "STRAIGHT"),
])
def test_bbone_curves_at_many_poses_match_one_pose_at_a_time(start, end, prev_segments, next_segments, mapping):
    from skin_audit.core.maths import bbone as bb
    from tests.factories import bbone_reference as ref
    from tests.factories.numpy_rigs import rest_matrix

    rest = np.array([rest_matrix((0.0, 0.0, 0.0), (0.1, 1.0, 0.0)), rest_matrix((0.1, 1.0, 0.0), (0.0, 2.2, 0.3), 0.4),
                     rest_matrix((0.0, 2.2, 0.3), (0.2, 3.0, 0.1))])
    shape = bb.BBoneShape(ease_in=1.3, ease_out=0.7, roll_in=0.2, roll_out=-0.1, curve_in_x=0.05, curve_out_z=-0.08,
                          scale_in=(1.2, 1.0, 0.9), scale_out=(0.8, 1.1, 1.0))
    prev = bb.BBoneHandle(rest=rest[0], pose=rest[0], length=1.0, segments=prev_segments)
    nxt = bb.BBoneHandle(rest=rest[2], pose=rest[2], length=0.85, segments=next_segments)
    spline = bb.BBoneSpline(rest=rest[1], length=1.25, segments=7, shape=shape, handle_type_start=start,
                            handle_type_end=end, prev=prev, next=nxt, mapping_mode=mapping)
    rest_seg, pose_seg = ref.bbone_segment_matrices(spline)
    record = bb.RigBBone(spline, 0, 2, rest_seg)
    at = bb.BBonePose(bb.BBoneShape(ease_in=0.2, roll_out=0.3), pose_seg, np.broadcast_to(np.eye(4), (3, 4, 4)).copy())
    rng = np.random.default_rng(3)
    channels = np.empty((6, 3, 4, 4))
    for p in range(6):
        for j in range(3):
            m = np.eye(4)
            m[:3, :3] = rotation("xyz"[(p + j) % 3], float(rng.uniform(-3.0, 3.0)))[:3, :3]
            m[:3, 3] = rng.normal(size=3) * 0.1
            channels[p, j] = m
    channels[1, 0] = channels[1, 1] = channels[1, 2]  # a pose where the B-Bone moves rigidly
    many = ref.rig_pose_segments_many(record, 1, channels, rest, at)
    deform = ref.bbone_deform_matrices_many(rest[1], channels[:, 1], rest_seg, many)
    ref.forget_curves(record)
    for p in range(6):
        one = ref.one_pose_segments(record, 1, channels[p], rest, at)
        np.testing.assert_allclose(many[p], one, atol=1e-12)
        np.testing.assert_allclose(deform[p], ref.bbone_deform_matrices_one(rest[1], channels[p, 1], rest_seg, one),
                                   atol=1e-12)
    assert np.abs(many[0] - many[2]).max() > 1e-3  # the poses really bend it differently


def test_closed_form_gives_the_same_bits_in_a_reused_workspace():
    """The sweep measures its blocks in scratch it keeps (dirty from the last block, wider than
    the block): the results must be those of a fresh call, bit for bit, written where asked."""
    from skin_audit.core.maths.small_svd import WORKSPACE_ROWS

    rng = np.random.default_rng(4)
    mats = np.concatenate([m.reshape(-1, 9) for m in _matrices(rng).values()])
    workspace = np.full((WORKSPACE_ROWS, 9000), np.nan)
    for lo, hi in ((0, 9000), (9000, 9001), (9001, 15000), (15000, len(mats))):
        block = mats[lo:hi]
        fresh = smallest_singular_and_det(block)
        out = (np.empty(hi - lo), np.empty(hi - lo))
        reused = smallest_singular_and_det(block, workspace if hi - lo <= 9000 else None, out)
        assert reused[0] is out[0] and reused[1] is out[1]
        np.testing.assert_array_equal(reused[0], fresh[0])
        np.testing.assert_array_equal(reused[1], fresh[1])
