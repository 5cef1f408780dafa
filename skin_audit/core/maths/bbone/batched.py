# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's B-Bones: each armature B-Bone's record, and its joint matrices at many poses of
the armature, many B-Bones at once (the curves of ``spline`` over rows).

A record holds the B-Bone's rest data only; what a pose adds beyond the channel matrices (the
B-Bone's pose properties, and Blender's joints where they were read at that pose) is a
``BBonePose`` the caller passes.  A record remembers its recent posed curves (``RigBBone.posed``)
and its spline the pose-independent values of its curve (``BBoneSpline.constants``): each held on
the data it belongs to, so a copy of a record starts with none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..affine import affine_inverse
from .spline import (
    _HANDLE_EPSILON,
    _NONUNIFORM_SCALE,
    NO_POSE_SHAPE,
    BBoneShape,
    BBoneSpline,
    CurveValues,
    _matrix,
    _norm,
    bezier_rows,
    circle_tangent_factors,
    curve_values,
    ease_axes,
    equalize_rows,
    joins_curves,
    rolls,
    segment_matrices,
    segment_scales,
)

F64 = NDArray[np.float64]

#: Posed curves a record remembers before it forgets them all: (S + 1) x 128 bytes each.
POSED_MEMO_SIZE = 512


@dataclass(frozen=True)
class RigBBone:
    """One B-Bone of an armature as the audit keeps it: rest data only.

    ``prev_bone`` / ``next_bone`` index the armature's bone arrays (-1: no handle);
    ``rest_segments`` (S + 1, 4, 4) are Blender's rest joint matrices.
    ``posed`` remembers recent curves by (bone index, pose properties, the channels they read):
    the sweep asks for the same B-Bone at the same pose several times (its LBS and its DQS measures).
    """

    spline: BBoneSpline
    prev_bone: int
    next_bone: int
    rest_segments: F64
    posed: dict[tuple[int, BBoneShape, bytes], F64] = field(default_factory=dict, init=False, repr=False,
                                                            compare=False)


@dataclass(frozen=True, eq=False)
class BBonePose:
    """What one B-Bone shows at a pose beyond its channel matrix.

    ``shape``: its pose properties (curve, roll, ease, scale), as the PoseBone holds them.
    ``joints`` (S + 1, 4, 4): Blender's own posed joints, read at the pose whose channel matrices of
    the bone, its start and its end handle were ``read_at`` (3, 4, 4) (identity where absent), so
    that pose is recognised and its joints used as read; None where nothing was read.
    Compared by identity: poses sharing one ``BBonePose`` share its curves.
    """

    shape: BBoneShape = NO_POSE_SHAPE
    joints: F64 | None = None
    read_at: F64 | None = None


#: A B-Bone at a pose with its pose properties at rest and nothing read (every test pose).
AT_REST_SHAPE = BBonePose()


#: One request of ``rig_pose_segments_multi``: a record, its bone index, (P_i,) indices into the
#: poses, and what those poses add beyond their channels (None: pose properties at rest).
SegmentsRequest = tuple[RigBBone, int, ArrayLike, BBonePose | None]


def rig_pose_segments(rig_bbone: RigBBone, bone: int, channel: ArrayLike, rest: ArrayLike,
                      at: BBonePose | None = None) -> F64:
    """(S + 1, 4, 4) joint matrices of a rig's B-Bone at the armature pose ``channel``.

    Blender's own matrices where ``at`` holds them read at this pose; otherwise the curve computed
    from the handles in numpy with ``at``'s pose properties (rest ones for None):
    ``rig_pose_segments_multi`` at one pose.

    Parameters
    ----------
    rig_bbone : the B-Bone's record; ``bone`` its index in the armature's arrays
    channel : (J, 4, 4) float64 every bone's channel matrix at the pose
    rest : (J, 4, 4) float64 every bone's ``matrix_local``
    at : the B-Bone at that pose beyond its channel (pose properties, joints read)
    """
    chan = np.asarray(channel, dtype=np.float64)
    out: F64 = rig_pose_segments_multi([(rig_bbone, bone, np.zeros(1, dtype=np.intp), at)], chan[None], rest)[0][0]
    return out


def _shape(at: BBonePose | None) -> BBoneShape:
    return NO_POSE_SHAPE if at is None else at.shape


def rig_pose_segments_multi(requests: Sequence[SegmentsRequest], channels: ArrayLike, rest: ArrayLike) -> list[F64]:
    """``rig_pose_segments`` of several B-Bones, each at its own poses, the curves computed together.

    Each B-Bone's poses are looked up in what was read and in its memo; the others of every B-Bone
    go through one vectorised pass per segment count (scaled poses and handle scale included): the
    same operations on each (B-Bone, pose) row, so a B-Bone's bits do not depend on which others
    share its pass (a rig has dozens of B-Bones, and each pass is mostly numpy's per-call cost on
    tiny arrays).  The memos are read for every request before they are written.

    Parameters
    ----------
    requests : (record, its bone index, (P_i,) int indices into ``channels``, its ``BBonePose`` at
        those poses or None) per B-Bone
    channels : (P, J, 4, 4) float64 every bone's channel matrix at each pose
    rest : (J, 4, 4) float64 every bone's ``matrix_local``

    Returns
    -------
    per request, (P_i, S_i + 1, 4, 4) float64 joint matrices in bone space
    """
    chan = np.asarray(channels, dtype=np.float64)
    rst = np.asarray(rest, dtype=np.float64)
    # A B-Bone asked twice is asked again after the first pass, as one call per request would
    # (the memo then answers its poses already computed).
    seen: set[tuple[int, int, BBoneShape]] = set()
    first = []
    for r, (rig_bbone, bone, _, at_pose) in enumerate(requests):
        key = (id(rig_bbone), bone, _shape(at_pose))
        if key not in seen:
            seen.add(key)
            first.append(r)
    if len(first) < len(requests):
        again = [r for r in range(len(requests)) if r not in set(first)]
        answers = dict(zip(first, rig_pose_segments_multi([requests[r] for r in first], chan, rst), strict=True))
        answers.update(zip(again, rig_pose_segments_multi([requests[r] for r in again], chan, rst), strict=True))
        return [answers[r] for r in range(len(requests))]
    outs: list[F64] = []
    # Rows still to compute, per request: (request, pose indices into chan, rows of its output).
    batched: list[tuple[int, NDArray[np.intp], NDArray[np.intp]]] = []
    for r, (rig_bbone, bone, poses, at_pose) in enumerate(requests):
        pose_ids = np.asarray(poses, dtype=np.intp).reshape(-1)
        out = np.empty((len(pose_ids), *rig_bbone.rest_segments.shape))
        outs.append(out)
        todo = []
        for i, p in enumerate(pose_ids.tolist()):
            hit = _memo_lookup(rig_bbone, bone, chan[p], at_pose)
            if hit is None:
                todo.append(i)
            else:
                out[i] = hit
        if not todo:
            continue
        rows = np.array(todo, dtype=np.intp)
        batched.append((r, pose_ids[rows], rows))
    # One pass per segment count.
    groups: dict[int, list[tuple[int, NDArray[np.intp], NDArray[np.intp]]]] = {}
    for item in batched:
        rb, _, _, at_pose = requests[item[0]]
        groups.setdefault(curve_constants(rb, _shape(at_pose)).values.segments, []).append(item)
    for group in groups.values():
        consts = [curve_constants(requests[r][0], _shape(requests[r][3])) for r, _, _ in group]
        counts = [len(at) for _, at, _ in group]
        at = np.concatenate([at for _, at, _ in group])
        bones = np.repeat([requests[r][1] for r, _, _ in group], counts)
        prevs = np.repeat([max(requests[r][0].prev_bone, 0) for r, _, _ in group], counts)
        nexts = np.repeat([max(requests[r][0].next_bone, 0) for r, _, _ in group], counts)
        # (Rows of B-Bones without a handle get bone 0's: computed, then not used.)
        joints = _spline_matrices_multi(consts, counts, chan[at, bones] @ rst[bones], chan[at, prevs] @ rst[prevs],
                                        chan[at, nexts] @ rst[nexts])
        start = 0
        for (r, at_r, rows), n in zip(group, counts, strict=True):
            rig_bbone, bone, _, at_pose = requests[r]
            part = joints[start:start + n]
            start += n
            outs[r][rows] = part
            for i, p in enumerate(at_r.tolist()):
                _memo_store(rig_bbone, bone, chan[p], _shape(at_pose), part[i].copy())
    return outs


def _memo_key(rig_bbone: RigBBone, bone: int, chan: F64, shape: BBoneShape) -> tuple[int, BBoneShape, bytes]:
    used = [k for k in (bone, rig_bbone.prev_bone, rig_bbone.next_bone) if k >= 0]
    return (bone, shape, b"".join(chan[k].tobytes() for k in used))


def _memo_lookup(rig_bbone: RigBBone, bone: int, chan: F64, at_pose: BBonePose | None) -> F64 | None:
    """The joints read at this pose, or a remembered curve, or None."""
    if at_pose is not None and at_pose.joints is not None and at_pose.read_at is not None:
        used = [(slot, k) for slot, k in enumerate((bone, rig_bbone.prev_bone, rig_bbone.next_bone)) if k >= 0]
        if all(np.array_equal(chan[k], at_pose.read_at[slot]) for slot, k in used):
            return at_pose.joints
    return rig_bbone.posed.get(_memo_key(rig_bbone, bone, chan, _shape(at_pose)))


def _memo_store(rig_bbone: RigBBone, bone: int, chan: F64, shape: BBoneShape, joints: F64) -> None:
    joints.flags.writeable = False  # shared through the memo
    if len(rig_bbone.posed) >= POSED_MEMO_SIZE:
        rig_bbone.posed.clear()
    rig_bbone.posed[_memo_key(rig_bbone, bone, chan, shape)] = joints


def _rows_apply(m: F64, p: F64) -> F64:
    """(P, 3) each (4, 4) of ``m`` applied to its point of ``p``."""
    out: F64 = np.einsum("pij,pj->pi", m[:, :3, :3], p) + m[:, :3, 3]  # pij,pj->pi: per-pose transform
    return out


@dataclass(frozen=True)
class _CurveConstants:
    """What one B-Bone's curve takes from its record, the same at every pose (``curve_constants``)."""

    values: CurveValues  # ease, roll, curve offsets, scale in / out (the handles' scale included)
    length: float
    prev: tuple[str, bool, F64, float] | None  # handle type, joins the curves, rest head, length
    next: tuple[str, bool, F64, float] | None
    cum_scales: F64  # (S,) cumsum of the segments' lengthwise scales
    total_scale: float  # their sum
    sx: F64  # (S + 1,) joints' X scale
    sz: F64  # (S + 1,)


def curve_constants(rig_bbone: RigBBone, shape: BBoneShape = NO_POSE_SHAPE) -> _CurveConstants:
    """The B-Bone's pose-independent curve values with the pose properties ``shape``, computed once
    per spline and shape and kept on the spline."""
    bone = rig_bbone.spline
    key = (shape, rig_bbone.prev_bone >= 0, rig_bbone.next_bone >= 0)
    hit: _CurveConstants | None = bone.constants.get(key)
    if hit is not None:
        return hit
    values = curve_values(bone, shape)
    prev = nxt = None
    if bone.prev is not None and rig_bbone.prev_bone >= 0:
        kind = bone.handle_type_start
        prev = (kind, joins_curves(kind, bone.prev), _matrix(bone.prev.rest, "prev.rest")[:3, 3].copy(),
                float(bone.prev.length))
    if bone.next is not None and rig_bbone.next_bone >= 0:
        kind = bone.handle_type_end
        nxt = (kind, joins_curves(kind, bone.next), _matrix(bone.next.rest, "next.rest")[:3, 3].copy(),
               float(bone.next.length))
    segment_lengths, sx, sz = segment_scales(values.segments, values.scale_in, values.scale_out)
    out = _CurveConstants(values, float(bone.length), prev, nxt, np.cumsum(segment_lengths),
                          float(segment_lengths.sum()), sx, sz)
    bone.constants[key] = out
    return out


def _spline_matrices_multi(consts: Sequence[_CurveConstants], counts: Sequence[int], pose: F64, prev_pose: F64,
                           next_pose: F64) -> F64:
    """(N, S + 1, 4, 4) Blender's posed B-Bone curves (``BKE_pchan_bbone_spline_params_get``,
    ``BKE_pchan_bbone_handles_compute``, ``BKE_pchan_bbone_spline_compute`` with ``for_deform``).

    ``counts[b]`` consecutive rows are B-Bone ``b``'s poses, every B-Bone with S segments.
    ``pose``, ``prev_pose``, ``next_pose`` (N, 4, 4): the bone's and its handles' pose matrices
    (anything where it has no such handle).  Blender's steps, each over the rows at once, each
    row's numbers from its own B-Bone's (``curve_constants``) and its own pose: a pose scaled
    non-uniformly builds its curve in scaled space (``do_scale``), the others in bone space.
    """
    n = len(pose)

    def per_row(values: Sequence[object]) -> NDArray[Any]:
        out: NDArray[Any] = np.repeat(np.asarray(values), counts, axis=0)
        return out

    no_h = (None, False, np.zeros(3), 0.0)
    prevs = [c.prev or no_h for c in consts]
    nexts = [c.next or no_h for c in consts]
    length = per_row([c.length for c in consts])
    # do_scale: a pose whose axes differ in length builds its curve in the space of that scale,
    # the handles seen from the pose with unit axes; the others from the pose (scale 1).
    size = _norm(pose[:, :3, :3], 1)  # (N, 3) the pose's axis lengths
    scaled = ((np.abs(size[:, 0] - size[:, 1]) > _NONUNIFORM_SCALE)
              | (np.abs(size[:, 1] - size[:, 2]) > _NONUNIFORM_SCALE))
    scale = np.where(scaled[:, None], size, 1.0)
    frame = pose
    if scaled.any():
        frame = pose.copy()
        frame[scaled, :3, :3] /= size[scaled][:, None, :]
    imat = affine_inverse(frame)
    scaled_length = length * scale[:, 1]
    head = pose[:, :3, 3]
    tail = head + pose[:, :3, 1] * length[:, None]
    epsilon = _HANDLE_EPSILON * length
    # Start handle: its point in the pose's frame (params_get), then its direction and roll (handles_compute).
    has_prev = per_row([c.prev is not None for c in consts])
    roll1 = np.zeros(n)
    h1 = np.tile([0.0, 1.0, 0.0], (n, 1))
    if has_prev.any():
        kind = per_row([h[0] or "" for h in prevs])
        prev_bbone = per_row([h[1] for h in prevs])
        p_arm_head = per_row([h[2] for h in prevs])
        p_head = prev_pose[:, :3, 3]
        p_tail = p_head + prev_pose[:, :3, 1] * per_row([h[3] for h in prevs])[:, None]
        # RELATIVE: the handle's head's move from rest, at this head; TANGENT: its direction, ending
        # at this head; AUTO / ABSOLUTE: its head.
        point = np.where((kind == "RELATIVE")[:, None], head - (p_head - p_arm_head),
                         np.where((kind == "TANGENT")[:, None], head - (p_tail - p_head), p_head))
        h = _rows_apply(imat, point)
        h[prev_bbone, 1] -= scaled_length[prev_bbone]
        norm = _norm(h, 1)
        h = -np.where((norm < epsilon)[:, None], [[0.0, -1.0, 0.0]], h / np.where(norm > 0.0, norm, 1.0)[:, None])
        rolled = has_prev & ~prev_bbone
        if rolled.any():
            roll1[rolled] = rolls(imat[rolled] @ prev_pose[rolled], h[rolled])
        h1[has_prev] = h[has_prev]
    has_next = per_row([c.next is not None for c in consts])
    roll2 = np.zeros(n)
    h2 = np.tile([0.0, 1.0, 0.0], (n, 1))
    if has_next.any():
        kind = per_row([h[0] or "" for h in nexts])
        next_bbone = per_row([h[1] for h in nexts])
        n_arm_head = per_row([h[2] for h in nexts])
        n_head = next_pose[:, :3, 3]
        n_tail = n_head + next_pose[:, :3, 1] * per_row([h[3] for h in nexts])[:, None]
        # The same at the tail; AUTO / ABSOLUTE: the handle's tail.
        point = np.where((kind == "RELATIVE")[:, None], tail + (n_head - n_arm_head),
                         np.where((kind == "TANGENT")[:, None], tail + (n_tail - n_head), n_tail))
        h = _rows_apply(imat, point)
        h[~next_bbone, 1] -= scaled_length[~next_bbone]
        norm = _norm(h, 1)
        h = np.where((norm < epsilon)[:, None], [[0.0, 1.0, 0.0]], h / np.where(norm > 0.0, norm, 1.0)[:, None])
        roll2[has_next] = rolls(imat[has_next] @ next_pose[has_next], h[has_next])
        h2[has_next] = h[has_next]
    # Ease and offsets: each B-Bone's values no pose changes; the offsets in scaled space too.
    values = [c.values for c in consts]
    circle = scaled_length * (circle_tangent_factors(h1, h2) / 0.75)
    h1 = h1 * (per_row([v.ease1 for v in values]) * circle)[:, None]
    h2 = h2 * (-per_row([v.ease2 for v in values]) * circle)[:, None]
    roll1 = roll1 + per_row([v.roll1 for v in values])
    roll2 = roll2 + per_row([v.roll2 for v in values])
    h1[:, 0] += per_row([v.curve_in_x for v in values]) * scale[:, 0]
    h1[:, 2] += per_row([v.curve_in_z for v in values]) * scale[:, 2]
    h2[:, 0] += per_row([v.curve_out_x for v in values]) * scale[:, 0]
    h2[:, 2] += per_row([v.curve_out_z for v in values]) * scale[:, 2]
    # The curve and its joints (BKE_pchan_bbone_spline_compute).
    segments = values[0].segments
    end = np.zeros((n, 3))
    end[:, 1] = scaled_length
    control = np.stack([np.zeros((n, 3)), h1, end + h2, end], axis=1)
    t = equalize_rows(control, per_row([c.cum_scales for c in consts]), per_row([c.total_scale for c in consts]))
    d1 = np.diff(control, axis=1)
    d2 = np.diff(d1, axis=1)
    inner_pos, inner_axis = bezier_rows(control, t[:, 1:segments])
    pos = np.concatenate([control[:, :1], inner_pos, control[:, 3:]], axis=1)
    axis = np.concatenate([ease_axes(d1[:, 0], d2[:, 0])[:, None], inner_axis,
                           ease_axes(d1[:, 2], -d2[:, 1])[:, None]], axis=1)
    f = np.arange(segments + 1) / segments
    roll = np.asarray(f * roll2[:, None] + (1.0 - f) * roll1[:, None], dtype=np.float64)
    roll[:, 0], roll[:, -1] = roll1, roll2
    out = segment_matrices(pos.reshape(-1, 3), axis.reshape(-1, 3), roll.reshape(-1),
                           per_row([c.sx for c in consts]).reshape(-1), per_row([c.sz for c in consts]).reshape(-1),
                           np.repeat(scaled, segments + 1), np.repeat(scale, segments + 1, axis=0))
    return out.reshape(n, segments + 1, 4, 4)

