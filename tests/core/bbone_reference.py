# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-B-Bone pass as it was before ``rig_pose_segments_multi`` (skin_audit 443c43b), kept
frozen as the reference the batched pass must match bit for bit (tests/core/test_bbone_multi.py).

Copied, not imported: the package's own per-B-Bone path now goes through the batched one.
"""

from __future__ import annotations

import numpy as np

from skin_audit.core.maths.bbone import (
    _HANDLE_EPSILON,
    _MIN_SEGMENT_SCALE,
    _NONUNIFORM_SCALE,
    MAX_BBONE_SUBDIV,
    BBoneShape,
    BBoneSpline,
    _bezier_many,
    _circle_tangent_factors,
    _ease_axes,
    _head_tail,
    _inv,
    _matrix,
    _norm,
    _rolls,
    _rows_apply,
    _segment_matrices,
    rig_pose_segments,
    spline_parameters,
)

F64 = np.ndarray

def rig_pose_segments_many(rig_bbone, bone, channels, rest):
    """The old rig_pose_segments_many without its memo (the extracted pose still answered by the
    read joints; scaled poses and handle scale one at a time, as before)."""
    chan = np.asarray(channels, dtype=np.float64)
    rst = np.asarray(rest, dtype=np.float64)
    spline = rig_bbone.spline
    out = np.empty((len(chan), *rig_bbone.rest_segments.shape))
    todo = []
    for p in range(len(chan)):
        used = [(slot, k) for slot, k in enumerate((bone, rig_bbone.prev_bone, rig_bbone.next_bone)) if k >= 0]
        if all(np.array_equal(chan[p][k], rig_bbone.channels[slot]) for slot, k in used):
            out[p] = rig_bbone.pose_segments
        else:
            todo.append(p)
    if not todo:
        return out
    pose_mats = chan[todo, bone] @ rst[bone]
    size = _norm(pose_mats[:, :3, :3], 1)
    scaled = ((np.abs(size[:, 0] - size[:, 1]) > _NONUNIFORM_SCALE)
              | (np.abs(size[:, 1] - size[:, 2]) > _NONUNIFORM_SCALE))
    handle_scale = any((*spline.use_scale_start, spline.use_ease_start, *spline.use_scale_end,
                        spline.use_ease_end))
    if scaled.any() or handle_scale:
        for p in todo:
            out[p] = rig_pose_segments(rig_bbone, bone, chan[p], rst)
        return out
    prev = None if rig_bbone.prev_bone < 0 else chan[todo, rig_bbone.prev_bone] @ rst[rig_bbone.prev_bone]
    nxt = None if rig_bbone.next_bone < 0 else chan[todo, rig_bbone.next_bone] @ rst[rig_bbone.next_bone]
    joints = _spline_matrices_many(spline, rig_bbone.pose_shape, pose_mats, prev, nxt)
    for i, p in enumerate(todo):
        out[p] = joints[i]
    return out

def bbone_deform_matrices_many(rest_bone, channels, rest_segments, pose_segments):
    arm = _matrix(rest_bone, "rest_bone")
    chan = np.asarray(channels, dtype=np.float64)
    rest_s = np.asarray(rest_segments, dtype=np.float64)
    pose_s = np.asarray(pose_segments, dtype=np.float64)
    return (chan @ arm)[:, None] @ (pose_s @ _inv(rest_s)) @ _inv(arm)

def _spline_matrices_many(bone: BBoneSpline, pose_shape: BBoneShape, pose: F64, prev_pose: F64 | None,
                          next_pose: F64 | None) -> F64:
    """``spline_matrices(spline_parameters(...))`` for P poses without scale: (P, S + 1, 4, 4).

    The same steps as ``spline_parameters``, ``spline_handles`` and ``spline_matrices`` (read
    those for Blender's sources), each over the P poses at once.
    """
    n = len(pose)
    length = float(bone.length)
    imat = _inv(pose)
    head = pose[:, :3, 3]
    tail = head + pose[:, :3, 1] * length
    epsilon = _HANDLE_EPSILON * length
    # Start handle: spline_parameters, then spline_handles.
    roll1 = np.zeros(n)
    if bone.prev is not None and prev_pose is not None:
        p_arm_head, _ = _head_tail(_matrix(bone.prev.rest, "prev.rest"), bone.prev.length)
        p_head = prev_pose[:, :3, 3]
        p_tail = p_head + prev_pose[:, :3, 1] * bone.prev.length
        prev_bbone = False
        if bone.handle_type_start == "RELATIVE":
            h1 = _rows_apply(imat, head - (p_head - p_arm_head))
        elif bone.handle_type_start == "TANGENT":
            h1 = _rows_apply(imat, head - (p_tail - p_head))
        else:
            prev_bbone = bone.prev.segments > 1
            h1 = _rows_apply(imat, p_head)
        if prev_bbone:
            h1[:, 1] -= length
        norm = _norm(h1, 1)
        h1 = -np.where((norm < epsilon)[:, None], [[0.0, -1.0, 0.0]], h1 / np.where(norm > 0.0, norm, 1.0)[:, None])
        if not prev_bbone:
            roll1 = _rolls(imat @ prev_pose, h1)
    else:
        h1 = np.tile([0.0, 1.0, 0.0], (n, 1))
    roll2 = np.zeros(n)
    if bone.next is not None and next_pose is not None:
        n_arm_head, _ = _head_tail(_matrix(bone.next.rest, "next.rest"), bone.next.length)
        n_head = next_pose[:, :3, 3]
        n_tail = n_head + next_pose[:, :3, 1] * bone.next.length
        next_bbone = False
        if bone.handle_type_end == "RELATIVE":
            h2 = _rows_apply(imat, tail + (n_head - n_arm_head))
        elif bone.handle_type_end == "TANGENT":
            h2 = _rows_apply(imat, tail + (n_tail - n_head))
        else:
            next_bbone = bone.next.segments > 1
            h2 = _rows_apply(imat, n_tail)
        if not next_bbone:
            h2[:, 1] -= length
        norm = _norm(h2, 1)
        h2 = np.where((norm < epsilon)[:, None], [[0.0, 1.0, 0.0]], h2 / np.where(norm > 0.0, norm, 1.0)[:, None])
        roll2 = _rolls(imat @ next_pose, h2)
    else:
        h2 = np.tile([0.0, 1.0, 0.0], (n, 1))
    # The pose-independent values: spline_parameters with a unit pose stands in for them.
    params = spline_parameters(bone, rest=False, pose=bone.rest, pose_shape=pose_shape)
    circle = length * (_circle_tangent_factors(h1, h2) / 0.75)
    h1 = h1 * (params.ease1 * circle)[:, None]
    h2 = h2 * (-params.ease2 * circle)[:, None]
    roll1 = roll1 + params.roll1
    roll2 = roll2 + params.roll2
    h1[:, 0] += params.curve_in_x
    h1[:, 2] += params.curve_in_z
    h2[:, 0] += params.curve_out_x
    h2[:, 2] += params.curve_out_z
    # spline_matrices.
    segments = params.segments
    end = np.array([0.0, length, 0.0])
    control = np.stack([np.zeros((n, 3)), h1, end + h2, np.broadcast_to(end, (n, 3))], axis=1)
    log_in = np.log(max(params.scale_in[1], _MIN_SEGMENT_SCALE))
    log_out = np.log(max(params.scale_out[1], _MIN_SEGMENT_SCALE))
    fac = np.arange(segments) / max(segments - 1, 1)
    segment_scales = np.exp(fac * log_out + (1.0 - fac) * log_in)
    t = _equalize_many(control, segment_scales)
    d1 = np.diff(control, axis=1)
    d2 = np.diff(d1, axis=1)
    inner_pos, inner_axis = _bezier_many(control, t[:, 1:segments])
    pos = np.concatenate([control[:, :1], inner_pos, control[:, 3:]], axis=1)
    axis = np.concatenate([_ease_axes(d1[:, 0], d2[:, 0])[:, None], inner_axis,
                           _ease_axes(d1[:, 2], -d2[:, 1])[:, None]], axis=1)
    f = np.arange(segments + 1) / segments
    roll = np.asarray(f * roll2[:, None] + (1.0 - f) * roll1[:, None], dtype=np.float64)
    roll[:, 0], roll[:, -1] = roll1, roll2
    sx = f * params.scale_out[0] + (1.0 - f) * params.scale_in[0]
    sz = f * params.scale_out[2] + (1.0 - f) * params.scale_in[2]
    sx[0], sz[0], sx[-1], sz[-1] = params.scale_in[0], params.scale_in[2], params.scale_out[0], params.scale_out[2]
    out = _segment_matrices(params, pos.reshape(-1, 3), axis.reshape(-1, 3), roll.reshape(-1),
                            np.tile(sx, n), np.tile(sz, n))
    return out.reshape(n, segments + 1, 4, 4)

def _equalize_many(control: F64, segment_scales: F64) -> F64:
    """``_equalize`` over P curves: (P, S + 1) parameters (searchsorted as a count per row)."""
    steps = MAX_BBONE_SUBDIV
    coords, _ = _bezier_many(control, np.broadcast_to(np.arange(steps + 1) / steps, (len(control), steps + 1)))
    pdist = np.concatenate([np.zeros((len(control), 1)), np.cumsum(_norm(np.diff(coords, axis=1), 2), axis=1)],
                           axis=1)
    dist = np.cumsum(segment_scales) * (pdist[:, -1:] / segment_scales.sum())
    # searchsorted(side="right") on a sorted row: how many of its entries are <= the value.
    nr = np.clip(np.sum(pdist[:, None, :] <= dist[:, :, None], axis=2), 1, steps)
    hi = np.take_along_axis(pdist, nr, axis=1)
    span = hi - np.take_along_axis(pdist, nr - 1, axis=1)
    fac = np.divide(hi - dist, span, out=np.zeros_like(dist), where=span > 0)
    t: F64 = np.concatenate([np.zeros((len(control), 1)), (nr - fac) / steps], axis=1)
    t[:, -1] = 1.0
    return t

