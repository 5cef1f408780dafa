# SPDX-License-Identifier: GPL-3.0-or-later
"""Many B-Bones' curves in one pass (``rig_pose_segments_multi``, ``bbone_deform_matrices_multi``)
give, bit for bit, what each B-Bone gives alone through the same functions (the pass's rows do
not depend on which others share it), and agree within 1e-12 with the one-B-Bone reference curve
at one pose (``bbone_reference.one_pose_segments``, Blender's functions one call at a time) and
one B-Bone's deform matrices in their own products (``bbone_deform_matrices_one`` / ``_many``).

The B-Bones are those the Blender tier builds (tests/blender/test_bbone.py ``CASES``): a
3-bone chain with different segment counts, ease / roll / curve, scale in / out with easing,
custom handles ABSOLUTE / RELATIVE / TANGENT (with and without handle scale and ease), end roll
as in roll; posed with rotations, a rigid pose, the extracted pose (Blender's own joints are
returned), a bone scaled non-uniformly (Blender's scaled space) and handles scaled non-uniformly,
all in the one pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from skin_audit.core.maths import bbone as bb
from tests.factories import bbone_reference as ref
from tests.factories.numpy_rigs import rest_matrix

#: H0, B0, B1, B2, H1: a chain B0-B1-B2 (off-axis, rolled) and two free handle bones.
HEADS = ((0.3, -0.4, 0.1), (0.0, 0.0, 0.0), (0.15, 1.0, 0.1), (0.25, 2.1, 0.35), (0.5, 3.2, 0.2))
TAILS = ((0.1, 0.3, 0.0), (0.15, 1.0, 0.1), (0.25, 2.1, 0.35), (0.2, 3.0, 0.5), (0.4, 3.9, 0.6))
ROLLS = (0.1, 0.3, -0.4, 0.8, -0.2)
REST = np.array([rest_matrix(h, t, r) for h, t, r in zip(HEADS, TAILS, ROLLS, strict=True)])
LENGTHS = [float(np.linalg.norm(np.subtract(t, h))) for h, t in zip(HEADS, TAILS, strict=True)]
SEGMENTS = (1, 6, 6, 4, 3)  # B0 and B1 in one pass, B2 in another
CHAIN = (1, 2, 3)

Edit = Callable[[int, dict[str, object]], None]


def handle(k: int) -> bb.BBoneHandle:
    return bb.BBoneHandle(rest=REST[k], pose=REST[k], length=LENGTHS[k], segments=SEGMENTS[k],
                          local_scale=(1.1, 0.9, 1.2), roll_out_rest=0.2, roll_out_pose=-0.1)


def records(edit: Edit, pose_shapes: bool = True) -> list[tuple[bb.RigBBone, int, bb.BBonePose]]:
    out = []
    for j in CHAIN:
        prev = j - 1 if j > CHAIN[0] else -1
        nxt = j + 1 if j < CHAIN[-1] else -1
        kw: dict[str, object] = {"prev_bone": prev, "next_bone": nxt}
        edit(j, kw)
        prev, nxt = int(kw.pop("prev_bone")), int(kw.pop("next_bone"))  # type: ignore[call-overload]
        spline = bb.BBoneSpline(rest=REST[j], length=LENGTHS[j], segments=SEGMENTS[j],
                                prev=handle(prev) if prev >= 0 else None, next=handle(nxt) if nxt >= 0 else None,
                                **kw)  # type: ignore[arg-type]
        k = 0.5 * (j - 2)
        shape = (bb.BBoneShape(ease_in=0.3 * k, ease_out=-0.2 * k, roll_in=0.4 * k, roll_out=0.2 * k,
                               curve_in_x=0.2 * k, curve_out_z=-0.3 * k, scale_in=(1.0 + 0.2 * k, 1.0 + 0.3 * k, 0.9),
                               scale_out=(0.9, 1.0 - 0.2 * k, 1.1))
                 if pose_shapes else bb.NO_POSE_SHAPE)
        rest_seg, _ = ref.bbone_segment_matrices(spline)
        # "Blender's joints at the extracted pose" (the identity here): a value the curve never gives.
        read = rest_seg + 1.0
        at = bb.BBonePose(shape, read, np.tile(np.eye(4), (3, 1, 1)))
        out.append((bb.RigBBone(spline, prev, nxt, rest_seg), j, at))
    return out


def plain(j: int, kw: dict[str, object]) -> None:
    pass


def ease_roll_curve(j: int, kw: dict[str, object]) -> None:
    k = {1: 1.0, 2: -0.7, 3: 0.5}[j]
    kw["shape"] = bb.BBoneShape(ease_in=1.0 + 0.6 * k, ease_out=1.0 - 0.4 * k, roll_in=0.3 * k, roll_out=-0.5 * k,
                                curve_in_x=0.2 * k, curve_in_z=-0.15 * k, curve_out_x=-0.1 * k, curve_out_z=0.25 * k)
    kw["mapping_mode"] = bb.CURVED if j == 2 else bb.STRAIGHT


def scale_in_out(j: int, kw: dict[str, object]) -> None:
    kw["shape"] = bb.BBoneShape(ease_in=1.4, scale_in=(1.3, 0.7, 0.9), scale_out=(0.8, 1.6, 1.2))
    kw["use_scale_easing"] = j != 1


def handles(kind: str, scale: bool) -> Edit:
    def edit(j: int, kw: dict[str, object]) -> None:
        if j == 3:
            kw["use_endroll_as_inroll"] = True
        if j != 2:
            return
        kw.update(handle_type_start=kind, handle_type_end=kind, prev_bone=0, next_bone=4)
        if scale:  # handles that read their scale (handle() gives each a local scale)
            kw.update(use_scale_start=(True, False, True), use_scale_end=(False, True, True), use_ease_start=True,
                      use_ease_end=kind != "TANGENT")
    edit.__name__ = f"handles_{kind.lower()}{'_scale' if scale else ''}"
    return edit


CASES = [plain, ease_roll_curve, scale_in_out,
         *(handles(kind, scale) for kind in ("ABSOLUTE", "RELATIVE", "TANGENT") for scale in (False, True))]


def rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


#: Poses: 0 the extracted one, 1 rigid, 5 B1 scaled non-uniformly, 6 B0 scaled uniformly, 7 the
#: handles H0, H1 and B0 (B1's start handle, a B-Bone itself) scaled non-uniformly, 8 B1 and B2 with
#: their handles all scaled non-uniformly, the rest turns.
POSES = 40


def poses() -> np.ndarray:
    """(POSES, 5, 4, 4) channels: the extracted pose, a rigid one, random turns, non-uniform scale
    (many turns: a sum rounded differently shows only at some numbers)."""
    rng = np.random.default_rng(11)
    channels = np.tile(np.eye(4), (POSES, len(REST), 1, 1))
    for p in range(1, POSES):
        for j in range(len(REST)):
            channels[p, j, :3, :3] = rotation(rng.normal(size=3), float(rng.uniform(-2.5, 2.5)))
            channels[p, j, :3, 3] = rng.normal(size=3) * 0.1
    channels[1, :] = channels[1, 2]  # every bone alike: the chain moves rigidly
    channels[5, 2, :3, :3] = channels[5, 2, :3, :3] @ np.diag([1.0, 1.4, 0.8])  # B1 scaled non-uniformly
    channels[6, 1, :3, :3] *= 1.3  # B0 scaled uniformly: no scaled space
    for j, stretch in ((0, (1.3, 0.8, 1.1)), (1, (0.7, 1.2, 1.0)), (4, (0.9, 1.5, 1.2))):
        channels[7, j, :3, :3] = channels[7, j, :3, :3] @ np.diag(stretch)  # handles scaled
    for j in range(len(REST)):
        channels[8, j, :3, :3] = channels[8, j, :3, :3] @ np.diag([1.0 + 0.1 * j, 1.3 - 0.15 * j, 0.9])
    return channels


def column_major(m: np.ndarray) -> np.ndarray:
    """The same matrices, each stored column-major (as the extraction reads them from Blender)."""
    return np.swapaxes(np.swapaxes(m, -1, -2).copy(), -1, -2)


@pytest.mark.parametrize("layout", ["row_major", "column_major"])
@pytest.mark.parametrize("pose_shapes", [True, False], ids=["pose_shape", "no_pose_shape"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_many_bbones_at_once_give_each_bbones_own_bits(case: Edit, pose_shapes: bool, layout: str) -> None:
    """Bit for bit, whatever the matrices' memory order (numpy's sums depend on it)."""
    rigs = records(case, pose_shapes)
    channels = poses()
    rest = REST
    if layout == "column_major":
        channels, rest = column_major(channels), column_major(REST)
    # Each B-Bone at its own poses (B1 without the scaled pose 5 in one request).
    subsets = [np.arange(POSES), np.delete(np.arange(POSES), 5), np.array([6, 2, 5, 8, 3, 7])]
    requests = [(rb, j, at, shape) for (rb, j, shape), at in zip(rigs, subsets, strict=True)]
    # and all of B1's, scaled one included
    requests.append((rigs[1][0], rigs[1][1], np.arange(POSES), rigs[1][2]))
    ref.forget_curves(*(rb for rb, _, _ in rigs))
    multi = bb.rig_pose_segments_multi(requests, channels, rest)
    # Each B-Bone's deform matrices: those of the one-pose function, pose by pose.
    for (rb, j, at, _), got in zip(requests[:3], multi, strict=False):
        deform = bb.bbone_deform_matrices_multi([rest[j]], [channels[at, j]], [rb.rest_segments], [got])[0]
        for i, p in enumerate(at.tolist()):
            one = ref.bbone_deform_matrices_one(rest[j], channels[p, j], rb.rest_segments, got[i])
            np.testing.assert_allclose(deform[i], one, rtol=0, atol=1e-12)
    ref.forget_curves(*(rb for rb, _, _ in rigs))
    multi = bb.rig_pose_segments_multi(requests, channels, rest)
    deform = bb.bbone_deform_matrices_multi([rest[j] for _, j, _, _ in requests],
                                            [channels[at, j] for _, j, at, _ in requests],
                                            [rb.rest_segments for rb, _, _, _ in requests], multi)
    # The memo now holds the curves: asked again, the same bits.
    for got, again in zip(multi, bb.rig_pose_segments_multi(requests, channels, rest), strict=True):
        assert np.array_equal(got, again)
    # One call per request, in order, from an empty memo (B1 asked twice: its poses computed by
    # the first request are the memo's).  The same functions on fewer rows: the same bits.
    ref.forget_curves(*(rb for rb, _, _ in rigs))
    one_by_one = [ref.rig_pose_segments_many(rb, j, channels[at], rest, shape) for rb, j, at, shape in requests]
    for (rb, j, at, shape), got, got_deform, alone in zip(requests, multi, deform, one_by_one, strict=True):
        assert got.shape == (len(at), SEGMENTS[j] + 1, 4, 4)
        assert np.array_equal(got, alone), f"B-Bone {j}: {np.abs(got - alone).max():.3g}"
        alone_deform = bb.bbone_deform_matrices_multi([rest[j]], [channels[at, j]], [rb.rest_segments], [alone])[0]
        assert np.array_equal(got_deform, alone_deform)
        # Against the deform matrices in their own products, a tolerance (another order of sums).
        np.testing.assert_allclose(
            got_deform, ref.bbone_deform_matrices_many(rest[j], channels[at, j], rb.rest_segments, alone),
            rtol=0, atol=1e-12)
        for i, p in enumerate(at[:9].tolist()):  # (the reference is one pose at a time: slow)
            if p == 0:  # the extracted pose: Blender's read joints
                assert np.array_equal(got[i], shape.joints)
                continue
            one = ref.one_pose_segments(rb, j, channels[p], rest, shape)
            np.testing.assert_allclose(got[i], one, atol=1e-12)


def test_poses_really_differ_and_groups_mix() -> None:
    """The comparisons above are not vacuous: the poses bend the curves differently, and one call
    holds B-Bones of several segment counts, handled and not."""
    rigs = records(handles("RELATIVE", False))
    channels = poses()
    ref.forget_curves(*(rb for rb, _, _ in rigs))
    multi = bb.rig_pose_segments_multi([(rb, j, np.arange(1, 5), shape) for rb, j, shape in rigs], channels, REST)
    assert [m.shape[1] for m in multi] == [7, 7, 5]
    for m in multi:
        assert np.abs(m[1] - m[2]).max() > 1e-3
    assert bb.rig_pose_segments_multi([], channels, REST) == []
    assert bb.bbone_deform_matrices_multi([], [], [], []) == []


@pytest.mark.parametrize("layout", ["row_major", "column_major"])
def test_deform_matrices_of_many_bbones_give_each_bbones_own_bits(layout: str) -> None:
    """Twenty B-Bones of 1 to 9 segments at 1 to 4 poses, random affine matrices (the products'
    rounding shows at some numbers only), as read (column-major) or built in numpy."""
    rng = np.random.default_rng(5)
    arrange = column_major if layout == "column_major" else np.asarray
    rests, chans, rest_segs, pose_segs = [], [], [], []
    for b in range(20):
        s, p = 1 + b % 9, 1 + b % 4
        rests.append(arrange(np.concatenate([rng.normal(size=(3, 4)), [[0.0, 0.0, 0.0, 1.0]]])))
        chans.append(arrange(np.concatenate([rng.normal(size=(p, 3, 4)), np.tile([[[0.0, 0.0, 0.0, 1.0]]], (p, 1, 1))],
                                            axis=1)))
        rest_segs.append(np.concatenate([rng.normal(size=(s + 1, 3, 4)),
                                         np.tile([[[0.0, 0.0, 0.0, 1.0]]], (s + 1, 1, 1))], axis=1))
        pose_segs.append(np.concatenate([rng.normal(size=(p, s + 1, 3, 4)),
                                         np.tile([[[[0.0, 0.0, 0.0, 1.0]]]], (p, s + 1, 1, 1))], axis=2))
    multi = bb.bbone_deform_matrices_multi(rests, chans, rest_segs, pose_segs)
    for got, args in zip(multi, zip(rests, chans, rest_segs, pose_segs, strict=True), strict=True):
        rest_bone, chan, rest_seg, pose_seg = args
        # Alone through the same function: the same bits; in its own products: a tolerance.
        assert np.array_equal(got, bb.bbone_deform_matrices_multi([rest_bone], [chan], [rest_seg], [pose_seg])[0])
        many = ref.bbone_deform_matrices_many(*args)
        np.testing.assert_allclose(got, many, rtol=0, atol=1e-9 * max(1.0, np.abs(many).max()))
        for i in range(len(chan)):  # pose by pose, the one-pose function (its own products)
            one = ref.bbone_deform_matrices_one(rest_bone, chan[i], rest_seg, pose_seg[i])
            np.testing.assert_allclose(got[i], one, rtol=0, atol=1e-9 * max(1.0, np.abs(one).max()))
