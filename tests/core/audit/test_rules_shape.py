# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape checks on numpy rigs (core tier): the pose sweep against closed
forms, its spot checks against an independent "Blender", symmetry on mirrored
arms and stray weights on a tube.

Closed form of the sweep: a vertex blending a still bone (weight 1 - t) and a
bone turned by theta about one of its axes (weight t) has the blended 3x3
``(1 - t) I + t R(theta)``: singular value 1 along the axis and
``sqrt(1 - 2 t (1 - t)(1 - cos theta))`` twice across it, so the smallest
singular value is that and the determinant its square.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from skin_audit.core.audit.options import AuditOptions
from tests.core.audit.rule_helpers import audit, codes, only
from tests.factories import numpy_rigs as nr

SHAPE = {"twist-collapse", "volume-loss", "sweep-mismatch", "unpaired-side-bone", "mirror-axis-mismatch",
         "mirror-axis-convention", "mesh-not-symmetric", "no-mirrored-bones", "weight-asymmetry", "stray-weights"}
LIMIT = math.radians(135.0)


def shape(mesh, spot_checker=None, **options):
    return audit(mesh, spot_checker, shape_checks=True, **options)


# ------------------------------------------------------------ the sweep


def sigma(t: np.ndarray, degrees: float) -> np.ndarray:
    return np.sqrt(1.0 - 2.0 * t * (1.0 - t) * (1.0 - math.cos(math.radians(degrees))))


def gradient_tube(limits: bool) -> nr.Rig:
    """31 rings; Child's weight t = y - 0.5 between the bone middles (steps of 1/15).

    With ``limits``, Child's Y rotation is limited to +-135 degrees: a pose the rig
    claims to survive, so what squashes there is a WARNING.
    """
    rig = nr.chain_tube(rings=31)
    if limits:
        root, child = rig.rows
        child = nr.BoneRow(**{**child.__dict__, "limits": (None, (-LIMIT, LIMIT), None)})
        rig = nr.Rig((root, child), rig.rest, rig.groups, rig.edges, rig.basis)
    return rig


@pytest.mark.parametrize("code, threshold, measure", [
    ("twist-collapse", AuditOptions().collapse_threshold, lambda s: s),
    ("volume-loss", AuditOptions().volume_threshold, lambda s: s * s),
])
@pytest.mark.parametrize("limits", [True, False])
def test_sweep_squash_against_the_closed_form(code, threshold, measure, limits):
    rig = gradient_tube(limits)
    t = rig.weight_array()[1].astype(np.float64)
    moderate_angles = (90.0, 135.0) if limits else (90.0,)
    moderate = np.min([measure(sigma(t, a)) for a in moderate_angles], axis=0)
    extreme = np.minimum(moderate, measure(sigma(t, 180.0)))
    # No vertex sits on a threshold, so float rounding cannot decide the test.
    assert np.abs(moderate - threshold).min() > 1e-3 and np.abs(extreme - threshold).min() > 1e-3
    warn = tuple(np.flatnonzero(moderate < threshold).tolist())
    info = tuple(np.flatnonzero((extreme < threshold) & (moderate >= threshold)).tolist())
    assert info or warn, "the rig must squash somewhere"
    assert bool(warn) == limits, "WARNING exactly when the rig's own limits reach the squash"

    result = shape(nr.skinned_mesh(rig))
    found = [f for f in result.findings if f.code == code]
    assert len(found) == bool(warn) + bool(info)
    if warn:
        w = only(result, code, "WARNING")
        assert (w.vertices, w.count, w.bones) == (warn, len(warn), ("Child",))
        assert w.details["pose"] == "Child twist Y +135 deg" or w.details["pose"] == "Child twist Y -135 deg"
        assert w.details["worst"] == pytest.approx(moderate.min(), abs=1e-9)
    if info:
        i = only(result, code, "INFO")
        assert (i.vertices, i.count, i.bones) == (info, len(info), ("Child",))
        assert "180-degree" in i.message


def test_no_squash_where_every_vertex_follows_one_bone():
    rig = nr.chain_tube(rings=31)
    rigid = {"Root": (rig.rest[:, 1] < 1.0).astype(float), "Child": (rig.rest[:, 1] >= 1.0).astype(float)}
    result = shape(nr.skinned_mesh(nr.Rig(rig.rows, rig.rest, rigid, rig.edges)))
    assert not codes(result) & {"twist-collapse", "volume-loss"}
    assert result.metrics["min_singular_value"] == pytest.approx(1.0)


@pytest.mark.parametrize("code, measure", [("twist-collapse", lambda s: s), ("volume-loss", lambda s: s * s)])
def test_the_bones_responsible_are_ranked_worst_first(code, measure):
    """Eight bones in a chain, each joint a ring of vertices blending its two bones: joint k gives
    its child bone the weight t, so at 180 degrees a vertex keeps |1 - 2 t| of its size (the
    closed form above): 0.03 k on half the ring, 0.45 on the other half (flagged too, the same at
    every joint).  A bone ranks by its worst vertex.  The bones are named so that alphabetical
    order runs against that ranking: listed by name and cut to six, the worst bone would not be
    named."""
    names = ("Root", "G", "F", "E", "D", "C", "B", "A")
    rest, edges = nr.tube(rings=15, length=8.0)
    ring_of = np.repeat(np.arange(15), 8)
    groups = {n: np.zeros(len(rest)) for n in names}
    expected = {}
    for r in range(15):
        k, joint = (r + 1) // 2, r % 2  # ring 2k: inside bone k; ring 2k - 1: the joint of bones k - 1, k
        at = ring_of == r
        if not joint:
            groups[names[k]][at] = 1.0
            continue
        t = np.where(np.arange(len(rest)) % 8 < 4, (1.0 - 0.03 * k) / 2.0, (1.0 - 0.45) / 2.0)[at]
        groups[names[k - 1]][at], groups[names[k]][at] = 1.0 - t, t
        # Stored as float32 and divided by their sum, as Blender blends them.
        parent, child = np.float32(1.0 - t).astype(float), np.float32(t).astype(float)
        expected[names[k]] = measure(np.abs(1.0 - 2.0 * child / (parent + child)).min())
    rig = nr.Rig(tuple(nr.chain(names, 8.0)), rest, groups, edges)
    f = only(shape(nr.skinned_mesh(rig)), code, "INFO")
    ranked = sorted(expected, key=expected.__getitem__)
    assert ranked == ["G", "F", "E", "D", "C", "B", "A"]  # (the rig is built so; not the code under test)
    assert f.bones == tuple(ranked)
    assert "bones responsible, worst first: G, F, E, D, C, B and 1 more." in f.message
    assert f.details["worst"] == pytest.approx(expected["G"], abs=1e-12)


def test_the_bone_of_the_named_pose_leads_bones_that_tie_with_it():
    """Two joints that both collapse exactly (weights 1/2 and 1/2): the message names the pose of
    the first vertex at the least value, and its bone comes first though another ties with it
    and sorts before it by name."""
    names = ("Root", "Z", "A")
    rest, edges = nr.tube(rings=5, length=3.0)
    ring_of = np.repeat(np.arange(5), 8)
    groups = {"Root": np.isin(ring_of, (0, 1)) * np.where(ring_of == 1, 0.5, 1.0),
              "Z": np.isin(ring_of, (1, 2, 3)) * np.where(ring_of == 2, 1.0, 0.5),
              "A": np.isin(ring_of, (3, 4)) * np.where(ring_of == 3, 0.5, 1.0)}
    rig = nr.Rig(tuple(nr.chain(names, 3.0)), rest, groups, edges)
    f = only(shape(nr.skinned_mesh(rig)), "twist-collapse", "INFO")
    assert f.details["worst"] < 1e-15 and f.details["worst_vertex"] == 8  # the first vertex of ring 1
    assert f.details["bone"] == "Z"
    assert f.bones == ("Z", "A") and "bones responsible, worst first: Z, A." in f.message


class OwnBlender:
    """A spot checker: Blender's positions at each sweep pose, from the independent loop and hierarchy walk."""

    def __init__(self, rig: nr.Rig, nudge: float = 0.0, vertex: int = 40):
        self.rig, self.nudge, self.vertex = rig, nudge, vertex
        self.poses: list = []

    def __call__(self, poses, sample=None):
        self.sample = sample
        out = []
        for p in poses:
            self.poses.append(p)
            name = self.rig.rows[p.bone].name
            channel = nr.channels(self.rig.rows, {name: nr.rotation(p.axis, math.radians(p.degrees))})
            pos = nr.blender_positions(self.rig.rest, self.rig.group_names, self.rig.weight_array(),
                                       self.rig.rows, channel)
            if self.nudge and len(self.poses) == 1:
                pos[self.vertex] += (0.0, 0.0, self.nudge)
            out.append(pos if sample is None else pos[sample.indices()])
        return out


def test_sweep_spot_checks_agree_with_an_independent_blender():
    rig = nr.chain_tube()
    checker = OwnBlender(rig)
    result = shape(nr.skinned_mesh(rig), checker)
    assert "sweep-mismatch" not in codes(result)
    assert len(checker.poses) == 1  # one bone squashes anything: one pose, of Child
    assert rig.rows[checker.poses[0].bone].name == "Child"
    assert result.metrics["sweep_spot_checks"] == 1
    assert result.metrics["sweep_spot_check_max_difference"] <= 1e-6


def test_sweep_mismatch_when_blender_deforms_a_test_pose_differently():
    rig = nr.chain_tube()
    checker = OwnBlender(rig, nudge=0.01, vertex=40)
    result = shape(nr.skinned_mesh(rig), checker)
    found = only(result, "sweep-mismatch", "ERROR")
    pose = checker.poses[0]
    assert found.details["bone"] == "Child" and found.details["degrees"] == pose.degrees
    assert result.metrics["sweep_spot_check_max_difference"] == pytest.approx(0.01, rel=1e-3)


def test_a_large_mesh_is_spot_checked_on_a_sample_holding_the_worst_vertex(monkeypatch):
    """Beyond SPOT_CHECK_VERTICES, every stride-th vertex and each checked pose's worst vertex are
    compared: a wrong vertex in the sample is caught, one outside it is not looked at."""
    from skin_audit.core.audit import shape_checks

    rig = nr.chain_tube()
    mesh = nr.skinned_mesh(rig)
    full = OwnBlender(rig)
    worst = shape(mesh, full).measures["collapse"].argmax()
    monkeypatch.setattr(shape_checks, "SPOT_CHECK_VERTICES", mesh.vertex_count // 4)
    checker = OwnBlender(rig)
    result = shape(mesh, checker)
    index = checker.sample.indices()
    stride = checker.sample.stride
    assert stride == 4 and worst in index and len(index) <= mesh.vertex_count // 4 + 2
    assert result.metrics["sweep_spot_check_vertices"] == len(index)
    assert result.metrics["sweep_spot_check_max_difference"] <= 1e-6
    inside = next(v for v in index if v != worst)
    outside = next(v for v in range(mesh.vertex_count) if v not in set(index.tolist()))
    assert "sweep-mismatch" in codes(shape(mesh, OwnBlender(rig, nudge=0.01, vertex=inside)))
    assert "sweep-mismatch" not in codes(shape(mesh, OwnBlender(rig, nudge=0.01, vertex=outside)))


def test_spot_checks_skip_a_pose_whose_vertex_count_changed():
    rig = nr.chain_tube()
    result = shape(nr.skinned_mesh(rig), lambda poses, sample: [np.zeros((3, 3)) for _ in poses])
    assert "sweep-mismatch" not in codes(result) and "sweep_spot_checks" not in result.metrics


# ------------------------------------------------------------ symmetry


def arms(right_roll: float = 0.0, hand_roll: float = 0.0, extra: tuple[nr.BoneRow, ...] = (),
         left_only: bool = False) -> nr.Rig:
    """A spine on +Y (no weights) and mirrored two-bone arms at y = 1 with a tube each (ring-major)."""
    spine = nr.BoneRow("Spine", (0.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    rows = [spine] + nr.mirrored_arms(("Arm", "Hand"), 2.0, (0.5, 1.0, 0.0), "Spine", right_roll=right_roll)
    rows = [nr.BoneRow(**{**r.__dict__, "roll": r.roll + hand_roll}) if r.name == "Hand.R" else r for r in rows]
    left, edges = nr.tube(9, 8, 0.3, 2.0, (0.5, 1.0, 0.0), "x")
    right, _ = nr.tube(9, 8, 0.3, 2.0, (-0.5, 1.0, 0.0), "-x")
    along = left[:, 0] - 0.5
    w = nr.chain_weights(along, ("Arm", "Hand"))
    n = len(left)
    if left_only:
        return nr.Rig(tuple(rows) + extra, left, {"Arm.L": w["Arm"], "Hand.L": w["Hand"]}, edges)
    pad = np.zeros(n)
    groups = {"Arm.L": np.r_[w["Arm"], pad], "Hand.L": np.r_[w["Hand"], pad],
              "Arm.R": np.r_[pad, w["Arm"]], "Hand.R": np.r_[pad, w["Hand"]]}
    return nr.Rig(tuple(rows) + extra, np.vstack([left, right]), groups, np.vstack([edges, edges + n]))


SYMMETRY = {"unpaired-side-bone", "mirror-axis-mismatch", "mirror-axis-convention", "mesh-not-symmetric",
            "no-mirrored-bones", "weight-asymmetry"}


def test_mirrored_arms_raise_no_symmetry_finding():
    result = shape(nr.skinned_mesh(arms()))
    assert not codes(result) & SYMMETRY
    assert result.metrics["max_weight_asymmetry"] == 0.0


def test_no_mirrored_bones():
    found = only(shape(nr.skinned_mesh(nr.chain_tube())), "no-mirrored-bones", "INFO")
    assert (found.count, found.bones) == (0, ())


def test_unpaired_side_bone():
    finger = nr.BoneRow("Finger.L", (2.5, 1.0, 0.0), (3.0, 1.0, 0.0), "Hand.L")
    found = only(shape(nr.skinned_mesh(arms(extra=(finger,)))), "unpaired-side-bone", "WARNING")
    assert (found.bones, found.count) == (("Finger.L",), 1)


def test_mirror_axis_mismatch_names_the_rolled_pair():
    result = shape(nr.skinned_mesh(arms(hand_roll=math.radians(30.0))))
    found = only(result, "mirror-axis-mismatch", "WARNING")
    assert (found.bones, found.count) == (("Hand.L", "Hand.R"), 1)
    assert found.details["worst_angle_degrees"] == pytest.approx(30.0, abs=1e-6)
    assert "mirror-axis-convention" not in codes(result)
    # Below the 1-degree tolerance the pair is a mirror image.
    assert "mirror-axis-mismatch" not in codes(shape(nr.skinned_mesh(arms(hand_roll=math.radians(0.5)))))


def test_mirrored_axes_on_heads_apart_are_info():
    """The right hand's bone slid 0.2 along itself (axes still mirrored): the sides are not built
    alike, yet a mirrored pose turns each about its own head alike; INFO, with the distance."""
    rig = arms()
    slid = tuple(nr.BoneRow(**{**r.__dict__, "head": (r.head[0] - 0.2, r.head[1], r.head[2]),
                               "tail": (r.tail[0] - 0.2, r.tail[1], r.tail[2])}) if r.name == "Hand.R" else r
                 for r in rig.rows)
    result = shape(nr.skinned_mesh(nr.Rig(slid, rig.rest, rig.groups, rig.edges)))
    found = only(result, "mirror-axis-mismatch", "INFO")
    # (The symmetry plane is the pairs' median: the slide moves it too, so the arms are off a little.)
    assert {"Hand.L", "Hand.R"} <= set(found.bones) and found.details["heads_only"]
    assert 0.1 - 1e-9 <= found.details["worst_head_distance"] <= 0.2 + 1e-9
    assert "mirror-axis-mismatch" not in {f.code for f in result.findings if f.severity == "WARNING"}


def test_mirror_axis_convention_of_a_rig_mirrored_by_another_rule():
    result = shape(nr.skinned_mesh(arms(right_roll=math.pi)))
    found = only(result, "mirror-axis-convention", "INFO")
    assert found.details["angle_degrees"] == pytest.approx(180.0, abs=1e-6)
    assert "mirror-axis-mismatch" not in codes(result)


def test_mesh_not_symmetric():
    result = shape(nr.skinned_mesh(arms(left_only=True)))
    only(result, "mesh-not-symmetric", "INFO")
    assert "weight-asymmetry" not in codes(result)


@pytest.mark.parametrize("difference, flagged", [(0.1, "WARNING"), (0.07, "INFO"), (0.04, None)])
def test_weight_asymmetry(difference, flagged):
    rig = arms()
    groups = {k: v.copy() for k, v in rig.groups.items()}
    v = 20  # ring 2 of the left arm: Arm.L 1, Hand.L 0
    groups["Arm.L"][v] -= difference
    groups["Hand.L"][v] += difference
    result = shape(nr.skinned_mesh(nr.Rig(rig.rows, rig.rest, groups, rig.edges)))
    if not flagged:
        assert "weight-asymmetry" not in codes(result)
        return
    # From 0.1 a mirrored pose moves the sides apart by a tenth of the bend: WARNING; lighter, INFO.
    found = only(result, "weight-asymmetry", flagged)
    partner = v + 72  # the same vertex of the right tube
    assert (found.vertices, found.count) == ((v, partner), 2)
    # Both groups of the vertex differ by the same amount: either pair is the worst.
    assert set(found.groups) in ({"Arm.L", "Arm.R"}, {"Hand.L", "Hand.R"})
    assert found.details["worst_difference"] == pytest.approx(difference, rel=1e-6)


# ------------------------------------------------------------ stray weights


def test_stray_weights_island():
    rig = nr.chain_tube()
    root, child = rig.groups["Root"].copy(), rig.groups["Child"].copy()
    root[64], child[64] = 0.25, 0.75  # top ring: cut off from Root's region (rings 0-5)
    result = shape(nr.skinned_mesh(nr.Rig(rig.rows, rig.rest, {"Root": root, "Child": child}, rig.edges)))
    found = only(result, "stray-weights", "WARNING")
    assert (found.vertices, found.count, found.bones, found.groups) == ((64,), 1, ("Root",), ("Root",))


def test_stray_weights_far_from_the_bone():
    rig = nr.chain_tube()
    rest = np.vstack([rig.rest, [(0.0, 20.0, 0.0)]])  # a loose vertex far along the chain
    groups = {"Root": np.r_[rig.groups["Root"], 1.0], "Child": np.r_[rig.groups["Child"], 0.0]}
    result = shape(nr.skinned_mesh(nr.Rig(rig.rows, rest, groups, rig.edges)))
    found = only(result, "stray-weights", "WARNING")
    assert (found.vertices, found.bones, found.groups) == ((72,), ("Root",), ("Root",))


def test_clean_tube_has_no_stray_weights():
    assert "stray-weights" not in codes(shape(nr.skinned_mesh(nr.chain_tube())))


def test_the_spot_check_poses_are_those_of_the_walk_over_every_vertex_in_order(monkeypatch):
    """``_worst_poses`` looks at the smallest values first: it must choose what walking the whole
    stable sort chooses, ties and too-few-bones fallbacks included."""
    from skin_audit.core.audit import shape_checks
    from skin_audit.core.audit.pose_sweep import SweepPose

    def walk(sweep, count):
        chosen, vertices, seen = [], [], set()
        for v in np.argsort(sweep.smallest, kind="stable"):
            k = int(sweep.worst_pose[v])
            if k >= 0 and sweep.poses[k].bone not in seen:
                chosen.append(k), vertices.append(int(v)), seen.add(sweep.poses[k].bone)
            if len(chosen) == count:
                break
        return chosen, vertices

    rng = np.random.default_rng(7)
    monkeypatch.setattr(shape_checks, "_FIRST_CANDIDATES", 16)
    for trial in range(60):
        n = int(rng.integers(1, 400))
        bones = int(rng.integers(1, 12))
        poses = tuple(SweepPose(int(b), "x", 90.0, "default") for b in rng.integers(0, bones, 3 * bones))
        levels = rng.integers(0, [2, 5, 50][trial % 3], n) / 10.0  # many ties, some, few
        worst = rng.integers(-1, len(poses), n)
        sweep = SimpleNamespace(smallest=levels, worst_pose=worst, poses=poses)
        for count in (1, 3, 5):
            assert shape_checks._worst_poses(sweep, count) == walk(sweep, count), (trial, count)
