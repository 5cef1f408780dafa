# SPDX-License-Identifier: GPL-3.0-or-later
"""The pose sweep gives the same bits on one thread and on several (no bpy).

A numeric bone's measured poses are measured in blocks of rows shared out to the thread pool,
each thread with its own scratch; each matrix's numbers must not depend on the block or the
thread that made them, and the running worst values then take the poses in order (the sweep
keeps the first of equal values, and mirrored poses tie exactly).
The rig: a chain whose middle bone is a B-Bone between two handle bones, so turning any bone
bends it and every bone's poses are evaluated numerically.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from skin_audit.core.audit import pose_sweep
from skin_audit.core.audit.pose import Pose
from skin_audit.core.maths import bbone as bb
from tests.factories import bbone_reference as ref
from tests.factories.numpy_rigs import BoneRow, Rig, rest_matrix, skinned_mesh


def with_middle_bbone(mesh, rows, shape):
    """``mesh`` with bone 1 of ``rows`` a B-Bone (its ``bbone_segments``, ``shape``) between bone 0
    (start handle) and bone 2 (end handle), both AUTO, everything at rest."""
    rest = np.array([rest_matrix(r.head, r.tail, r.roll) for r in rows])
    length = [float(np.linalg.norm(np.subtract(r.tail, r.head))) for r in rows]
    spline = bb.BBoneSpline(rest=rest[1], length=length[1], segments=rows[1].bbone_segments, shape=shape,
                            handle_type_start="AUTO", handle_type_end="AUTO",
                            prev=bb.BBoneHandle(rest=rest[0], pose=rest[0], length=length[0], segments=1),
                            next=bb.BBoneHandle(rest=rest[2], pose=rest[2], length=length[2], segments=1))
    rest_seg, pose_seg = ref.bbone_segment_matrices(spline)
    record = bb.RigBBone(spline, 0, 2, rest_seg)
    bbones = tuple(record if j == 1 else None for j in range(len(rows)))
    # The pose it was read at: every bone at rest, Blender's joints there the spline's posed ones.
    read = bb.BBonePose(bb.NO_POSE_SHAPE, pose_seg, np.tile(np.eye(4), (3, 1, 1)))
    at_pose = tuple(read if j == 1 else None for j in range(len(rows)))
    return dataclasses.replace(mesh, bones=dataclasses.replace(mesh.bones, bbones=bbones),
                               read_pose=Pose(mesh.read_pose.channel, at_pose))


def _bbone_chain_mesh(vertices: int = 3000, seed: int = 5):
    rows = (BoneRow("Root", (0.0, 0.0, 0.0), (0.1, 1.0, 0.0)),
            BoneRow("Bend", (0.1, 1.0, 0.0), (0.0, 2.2, 0.3), "Root", 0.4, bbone_segments=7),
            BoneRow("Tip", (0.0, 2.2, 0.3), (0.2, 3.0, 0.1), "Bend"))
    rng = np.random.default_rng(seed)
    along = rng.uniform(0.0, 3.0, vertices)
    co = np.column_stack([rng.normal(scale=0.2, size=vertices), along, rng.normal(scale=0.2, size=vertices)])
    # Smooth weights along the chain, a little noise so that few vertices tie by construction.
    centres = np.array([0.5, 1.6, 2.6])
    w = np.exp(-((along[None, :] - centres[:, None]) / 0.6) ** 2) + 0.05 * rng.random((3, vertices))
    rig = Rig(rows, co, {r.name: w[j] for j, r in enumerate(rows)})
    return with_middle_bbone(skinned_mesh(rig, blender=None), rows, bb.BBoneShape(ease_in=1.3, ease_out=0.7))


def _sweep(monkeypatch, threads: int) -> pose_sweep.SweepResult:
    monkeypatch.setenv("SKIN_AUDIT_THREADS", str(threads))
    monkeypatch.setattr(pose_sweep, "_BLOCK_ROWS", 1000)  # many blocks per batch, however small the rig
    mesh = _bbone_chain_mesh()
    ref.forget_curves(*mesh.bones.bbones)  # (each run computes its curves afresh)
    return pose_sweep.run_sweep(mesh)


def assert_same_sweep(one: pose_sweep.SweepResult, two: pose_sweep.SweepResult) -> None:
    """The two sweeps name the same poses and give every array bit for bit, not close."""
    assert one.poses == two.poses
    for field in dataclasses.fields(pose_sweep.SweepResult):
        a, b = getattr(one, field.name), getattr(two, field.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), field.name
    assert one.per_bone == two.per_bone


def test_one_thread_and_two_threads_give_the_same_bits(monkeypatch):
    one = _sweep(monkeypatch, 1)
    two = _sweep(monkeypatch, 2)
    assert_same_sweep(one, two)
    # The rig really takes the numeric path: turning the root alone bends the B-Bone, vertices squash.
    assert pose_sweep._bent_bbones(_bbone_chain_mesh(), np.array([True, False, False])) == {1}
    assert one.smallest.min() < 0.9
    assert (one.worst_pose >= 0).sum() > 1000
