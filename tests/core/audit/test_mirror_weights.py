# SPDX-License-Identifier: GPL-3.0-or-later
"""``mirror_weights`` against the loop over groups it replaced, written out here: the same largest
difference and the same first group reaching it, bit for bit, on both of its ways (over the
non-zero weights only, and every group of every vertex at once for dense weights), with NaN
weights, groups without a mirror, groups sharing a mirror, vertices without a partner or sharing
one, ties and vertices weighing nothing; and on an excerpt of the Rigify character's real
arguments (no bpy)."""

from __future__ import annotations

import base64
import zlib

import numpy as np
import pytest

from skin_audit.core.audit import symmetry
from skin_audit.core.audit.symmetry import BonePairs, mirror_weights

X_PLANE = BonePairs((), (), np.array([1.0, 0.0, 0.0]), 0.0)


def _reference(points, weights, mirror_group, pairs, radius):
    partner = symmetry.nearest_within(points, symmetry.reflect_points(points, pairs), radius)
    diff = np.zeros(len(points))
    worst = np.full(len(points), -1, dtype=np.intp)
    src = np.flatnonzero(partner >= 0)
    for g, other in enumerate(mirror_group):
        mine = weights[g, src].astype(np.float64)
        theirs = weights[other, partner[src]].astype(np.float64) if other >= 0 else np.zeros(len(src))
        d = np.abs(mine - theirs)
        bigger = d > diff[src]  # (NaN is never bigger)
        diff[src[bigger]] = d[bigger]
        worst[src[bigger]] = g
    return partner, diff, worst


@pytest.fixture(params=["sparse", "dense"])
def way(request, monkeypatch):
    """Force one way of ``mirror_weights``; yields the calls made each way (to prove the forcing)."""
    monkeypatch.setattr(symmetry, "_SPARSE_CELLS_PER_WEIGHT", 0 if request.param == "sparse" else 2**62)
    calls = {"sparse": 0, "dense": 0}
    for name in calls:
        real = getattr(symmetry, f"_mirror_{name}")

        def spy(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(symmetry, f"_mirror_{name}", spy)
    return request.param, calls


def _assert_same(points, weights, mirror_group, radius, what, pairs=X_PLANE):
    # Bit for bit, not within a tolerance, although the sparse and dense ways and the reference
    # differ: each difference is one correctly rounded float64 subtraction of the same two float32
    # weights and a maximum picks one of them, so no order of sums can separate the three.
    partner, diff, worst = _reference(points, weights, mirror_group, pairs, radius)
    got = mirror_weights(points, weights, mirror_group, pairs, radius)
    assert np.array_equal(got.partner, partner), what
    assert got.matched_fraction == ((partner >= 0).mean() if len(points) else 1.0), what
    assert got.difference.dtype == np.float64 and np.array_equal(got.difference.view(np.int64),
                                                                 diff.view(np.int64)), what
    assert np.array_equal(got.worst_group, worst), what
    return partner, diff, worst


def _involution(rng, g):
    """A mirror_group that is its own inverse: groups swapped in random pairs, the rest their own mirror."""
    out = np.arange(g)
    order = rng.permutation(g)
    for a, b in zip(order[0:g // 2:2], order[1:g // 2:2], strict=False):
        out[a], out[b] = b, a
    return out


@pytest.mark.parametrize("involution", [False, True])
def test_both_ways_are_the_loop_over_groups(way, involution):
    name, calls = way
    rng = np.random.default_rng(3 + involution)
    seen = {"tie": 0, "nan": 0, "unmatched": 0, "shared partner": 0, "zero": 0, "missing": 0, "shared mirror": 0}
    for trial in range(25):
        v, g = int(rng.integers(2, 3000)), int(rng.integers(1, 20))
        points = rng.normal(size=(v, 3))
        points[v // 2:] = points[:v - v // 2] * [-1.0, 1.0, 1.0]  # half the mesh mirrors the other half
        if trial % 4:  # else every vertex has a partner, and is its partner's partner
            points[rng.random(v) < 0.03, 0] = 0.0  # on the plane: their own partner
            points[rng.random(v) < 0.1] += 5.0  # some vertices have no partner
            copies = rng.integers(0, v, 2 + v // 50)
            points[rng.integers(0, v, len(copies))] = points[copies]  # vertices sharing a partner
        weights = (rng.random((g, v)) * (rng.random((g, v)) < rng.choice([0.02, 0.3]))).astype(np.float32)
        weights[rng.random((g, v)) < 0.01] = np.nan
        weights[:, rng.random(v) < 0.05] = 0.5  # equal weights: ties go to the first group
        weights[:, rng.random(v) < 0.05] = 0.0  # vertices weighing nothing
        mirror_group = _involution(rng, g) if involution else rng.integers(-1, g, g)
        partner, diff, worst = _assert_same(points, weights, mirror_group, 1e-6, trial)
        m = partner >= 0
        theirs = np.where(mirror_group[:, None] >= 0, weights[mirror_group][:, partner[m]], 0.0)
        d = np.abs(weights.astype(np.float64)[:, m] - theirs)
        seen["tie"] += int((((d == diff[m]) & (d > 0)).sum(axis=0) > 1).sum())
        seen["nan"] += int(np.isnan(weights[:, m]).any(axis=0).sum())
        seen["unmatched"] += int((~m).sum())
        seen["shared partner"] += int(len(partner[m]) - len(np.unique(partner[m])))
        seen["zero"] += int(((worst == -1) & m).sum())
        seen["missing"] += int((mirror_group < 0).sum())
        mirrored = mirror_group[mirror_group >= 0]
        seen["shared mirror"] += int(len(mirrored) - len(np.unique(mirrored)))
    assert calls[name] == 25 and sum(calls.values()) == 25
    assert all(seen[k] > 0 for k in ("tie", "nan", "unmatched", "shared partner", "zero")), seen
    assert (seen["missing"] > 0 and seen["shared mirror"] > 0) != involution, seen


@pytest.mark.parametrize("block", [7, 8192])
def test_dense_blocks(monkeypatch, way, block):
    """The dense way in blocks of a few vertices and in one block."""
    monkeypatch.setattr(symmetry, "_MIRROR_BLOCK", block)
    monkeypatch.setattr(symmetry, "_MIRROR_CELLS", 0 if block < 100 else symmetry._MIRROR_CELLS)
    rng = np.random.default_rng(5)
    points = rng.normal(size=(400, 3))
    points[200:] = points[:200] * [-1.0, 1.0, 1.0]
    weights = (rng.random((6, 400)) * (rng.random((6, 400)) < 0.5)).astype(np.float32)
    _assert_same(points, weights, np.array([1, 0, 2, -1, 3, 3]), 1e-6, block)
    _assert_same(points, np.asfortranarray(weights), np.array([1, 0, 2, -1, 3, 3]), 1e-6, block)


def test_the_rules_by_hand(way):
    """Vertices 0, 1 mirror each other, 2 is on the plane, 3 has no partner; groups 0 and 1 mirror each
    other, 2 has no mirror group, 3 and 4 both mirror into 0."""
    points = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 2.0, 0], [3.0, 3.0, 0]])
    mirror_group = np.array([1, 0, -1, 0, 0])
    w = np.zeros((5, 4), dtype=np.float32)
    w[0, 0], w[0, 1] = 0.25, 0.75
    w[3, 0] = np.nan  # never larger
    w[2, 1] = 0.875  # no mirror group: against 0
    w[0, 2], w[1, 2] = 0.5, 0.5
    w[:, 3] = 1.0  # no partner
    got = mirror_weights(points, w, mirror_group, X_PLANE, 1e-6)
    assert got.partner.tolist() == [1, 0, 2, -1] and got.matched_fraction == 0.75
    # Vertex 0: group 0 |0.25 - 0|, 1 and 4 |0 - 0.75| (group 0 on vertex 1; 0 on vertex 0 itself), 3 NaN.
    # Vertex 1: group 0 |0.75 - 0|, 1, 3 and 4 |0 - 0.25|, 2 |0.875 - 0| (no mirror group).
    # Vertex 2: groups 0 and 1 |0.5 - 0.5|, 3 and 4 |0 - 0.5| (group 0 on itself).
    assert got.difference.tolist() == [0.75, 0.875, 0.5, 0.0]
    assert got.worst_group.tolist() == [1, 2, 3, -1]
    w[:, 0] = w[:, 1] = w[:, 2] = 0.0
    assert mirror_weights(points, w, mirror_group, X_PLANE, 1e-6).worst_group.tolist() == [-1, -1, -1, -1]


#: An excerpt of the Rigify character's real ``mirror_weights`` arguments (tests/factories/rigify.py,
#: through ``rig_audit.audit_rig``): its 160 groups' mirror_group, and 197 vertices (closed under
#: partner: 40 with ties between groups, 15 weighing the same as their mirror, the 30 most asymmetric,
#: the 15 with most groups, 10 on the plane, 30 at random) with their non-zero float32 weights.
#: Taken once from the arguments a wrapper around ``rig_audit.mirror_weights`` saved (the character
#: takes tens of seconds to build in Blender; this test needs neither bpy nor a file beside the clone).
#: Layout (little-endian, zlib, base64): n, m (uint16); mirror_group (160 uint8); partner (n uint16);
#: groups per vertex (n uint8); their groups (m uint8) and weights (m float32), vertex by vertex.
RIGIFY_EXCERPT = (
    "eNp9VAlczfkWP3Vv3Vtpz2hIlkqGkPa6/3N+UZKlUMkaqaRVK21o0a1QqFBJi2xprNOMsqYmI0wYRpY0ZURkeWbeSFPh/S9v8Mx7"
    "73z/53zP75zzP/fzvZ97f+dgozzIyQuECopikbqGppa2jpKySj9VtS/66w4Y+KXeoK9GjTYZM3ac6Xgzc4vB+kOGDhtuYGg0wnik"
    "nYRDsrSytrFl9hMcJjo6TZrs7Dpj5iy3KVOnTXfxcJ89x3Pe3AXzvRYuXrTE29fHb6n/ssCA4CBpWnrGuvUbMrM2btqcnZO7Zeu2"
    "vPyC7YU7ikJCl4eFR0RGRa9YGRMbF5+wavWaxKTklLWpJcUAciAPAhCCAiiCCMSgBCqgDKrQD9RAHTRBA7RAG3SgP3wBA2AgfAm6"
    "MAj0QB8GwxAYBkNhOBiAIRjBCPgKRoIxmMBoGAXjwRTGwVgYA1ZgCRZgDmZgDbZgA3YgAQ4QCCbCBLAHBtNhGkyFKeAMk8EJJoEj"
    "OIALzABXmAmzwA3cwQNmgyd4wxLwAV/wg6XgD8sgAObAXJgH82EBLAQvWASLIROyYCNsgs2QDTmQC1tgK2yDPMiHAtgOhbADiqAY"
    "SqAUdkIZ7ILdsAf2wj4oh/1QAV/DATgIhyAQgiAYQiAUlkMYhEMEREIURMMKWAkxEAtxEA8JsApWwxpIhCRIhhRYC6kghTRIhwxY"
    "B+thA5yAk3AKTsMZqIGzUAt18D3Uw2E4AkfhG6iEb+E7OAZVUA3HQUGooKAoEgpFQrFILBYpCoWKigqKfE1RUcSbUCAQieT5550J"
    "PpicvOwHJuBf+dQUhEJ+XE5R1n5nCsLPE7m/WrL8Q03uP8r/f+ST9l8piMRK6jKX+xDg31H+XYWPMn93LC75kKoXl7yfKP7sWPLJ"
    "pCyKZVnxpzV+4GNb8CGESD+PAhnxX9bf6b3L6PP65+ePEP7/R/AOCrL/Pu+OzjzzNMlpsiyzQ3Ly4JknZxnb2E5ydufZkk/cP+n/"
    "L/5f7/1Xfveh/OPBXyKyouIgPTbZ3eMv4vn9STEkNCQ0dPnysOVhYeH8dRG3anWSzKVp0rS09PSM9IyMdfz1krN1W4HMRUofoaTM"
    "m8rfoaLS71O8N1UZxOofoa7Bm+bfoamp9Snem7YM73fwpvYR7zu86XzE+NcTsOWqKY2qM6XRWfnkcCufxmmW0ZdqZVQbaETb9xiR"
    "20VDHPL4FPl2nKKRNo0YFNOI0o3rsH1yPV1yqqfEY5nY2pKJUWsGMFPvOlRccAPvz7+BuQIjPPbGEMNLe8npeCrd7xuCE64F4svr"
    "gTjUWA01Rqqh7c9l5CMm/CpqM9VGbqaoO1V04cgSvG0jJXfe16f5EzQAs885jfGlZ7iHNWc43cJaibP8Pkns/CbqycnG84v8aaKX"
    "PzWCO8VYCVjZuUt4wFzMBTMdVO67x8FAV7sRIwu44j430rARsId7LmGrsQ4Kl4g5ud/vcWfOl3Kl8g7UbqXAAqubsW1+g0QiL8b5"
    "a5q4tp0bJCkr6jjnNxPpJxsFdmhjM07oEGHp6QZJV2QTl9JzkTPd5CX5LeQV/nZFyPoqx9DQaUWSUq9iyXElwv4FVlhk+5aSpP0p"
    "2lKL6sy0yP7OVbtSwTU78alNZBNoStMPNlKVbgf6umyi5zPH093qRqq49RDPn/iT3i6cTW12rahu2Yr6Dvu5inn7uSStXGooaqWT"
    "kX64NMgPB4ny0FMlDxsnLcB7y4vo0ug6yq8/hWYRx/Fabwfu2vpPsj8rtUsCqR1eNCCTHw0oV7kXnzX8Qc8NZuChaf3J+7gODbfJ"
    "Rl3L27RbrQ4rT9mQZ6QNXbV8zD0frUsal5dLErxn4fKQEnR7Y8B2SrUx4pCU1j4MxIFxAXitdgNd5f0uPOaumuuSh6sbljbNlFjw"
    "s13BJXhw0h/c4dSl1G+uAD3/kYUrNbJQM2QTdQRvoqCfr2KMyk168McULDM5zylW/sBpF5uQxRYT6kyS4lGqpUonHwSFw3b69zOx"
    "R1yIOmt30ZBUKZbzvVmOPjijKxPbEvfaqaftIt/e7Rhs1kBO4T9Qr9+3WMX7HdN8LmyKKzu4SZWyrruyafuDuZF8HsIINzw9T9MC"
    "evBUxw4cfG4HxrSpketdNZqXNgoNVlcRt0yH9PYdxZdrjuIN635ka9GPjmd3UW/bczqXNAwHVh6mFaFD6Rvvk9hoeRKNo5Xpx3Bl"
    "ivtTFyVjy4mrNaE9BfUoCqnHx5FiagwTU+/iHKqUjmFLLeSZ94ZOan1ozbq4BPK0zyc76Sj24I6QeV5spwgdG2buFE9RB1u4pCc2"
    "NK9kMluv3sJ1xJbQ2zkjmPThTe5BhZgp5TTTgZ67XFqTNTPpjaXZpS1cafss9ustdWpYrYJnxzlS5CMHduWZCj79Zh9dGzeMNXX0"
    "w4wUNVYvaKSVLSq4ZrQ1S1wVQ9/HqKCH4UyWP1GbyosS2KQZFuzunBQawXODjB3KqWLsQLbh5DysOK9OZWe1WKqZLxm7q+I/NLQw"
    "MjOTVB2zyCVoNtpnbSOPQ2o0XSDHdm1bT5vcPVG5Mx13biymkfrtktjSdomC+XU89+oCJYfk4eVn5aTrvZsgrcsu03wQ12oRiAaF"
    "kVgl3oKjnkkxOb+AXI6YklBixv3a5oYL3PXJ9IdeyfTmEXTgkRRv7y2gK+2mVK4t4vzUXPFKsj4FTHglqf9pJIUszcNb3eX0NHY3"
    "tbX02nUrvpQkrl+KhkZROEExD2f3S8GfRZspp6eRdk2J5HSPanMvu+NRNEAPB11Zjs/qEzBxUSZtEVZRbr4ft/JIDXdl4WbcvCcO"
    "HdbvxOzECFxXkE4nM3ZQfbU+d19DHfdVFOL0i4dQI6gZrb7zw+uxybQucxW9CPpCspPTw3szCzCz4xXute5PT3rtMbfNm1pCWzDa"
    "XcTNrpmAq+9G0v1Sf+6aZyLF9tmj/mtvKr7Tghrm30heh1hjm3oUXWrz5biqJArm9x/PSKaua6voqpOBJM5KDb8Yuw33Le5Gp/MD"
    "KD0hAofsS6eb+3fQgQdDuSfP5PHV7/mYNv4w5ja3os/pBDwSmElfD6+iyoSlXJrhAS5k9EZ8NDUe5wzZgw9FKeivuZn+2f8y5d6K"
    "4EzjOyUPMmPwpwGDMcE7GqfkFKK7SzwnOBHP1R0exLqMZpNtbDet90ummr22ZH/kqeS8Uzcp+W4jC3kNqs55Julc8ogLXtCL/tkS"
    "9rK+P/NSGI8YYIrxW5q45z5P0WWAM94f6IzDG/RYjb8LnlZxQV/9IO4nYQPuHDYGvzIag9UT/ZhprSUzFkpxw/5UXGeqgQGdv0kC"
    "tH6XfKk9ienFFeHc+h0YJI1ijc0ObKg4nAaH3kfFhT4sxyGCKXWZoY5iGGvPWIy+yZbsanAu3V20mHXWvkbDG86sO2Y+9ey+QeUn"
    "Lejbw7GU33cKl93xwGNuk/DCUCv2sugBN/3kHMrrcGDdt8KoM+0+/jjXh+VJItitl2YoHh7Gzl70QjbRitU9zqZgr8Wsnd+dcN2Z"
    "9fG7DffcIKNHFjT4YCwV7zqFe1s8cOJURzQZbMWeWHdwwltzqOhEFqmW27CunNNUfGkoi7bvpZcCeeavmk6/vJCw8TeP05zC4SzJ"
    "9gVtiRWxUC1ltn3hE7I5Fs/SreNZ0O0I5mjmhZcTljHH9XV4r9KbZfR1o5+2Ozs21pySZlqwX7k8elExkKVLL9Lao8COJb2hmq7X"
    "NOQ5sKldubT2d0s268JW6hBbsov7ElhZiQHT2FlNNQHV1FNrwCZYVRM1G7DXF8Lpcr0DG1eehCG/hLHk1OvcYac4pnq0ifMyjGPm"
    "lQks6s/VLHnqGhb2YDVzd0xgbn8Es/ohpRhfv5BtvdGPigd5skUJxvRKsJdurjVh1x60UlOZOkvNV2Jduk9pT0QhGdeMZ/P0r9PM"
    "7v5MVVOe/aLUSxs1ldk2XvceXnetVTxzuh7BKrZ44Z2wZQw663DwXm9WHfQnpr5xY1YpH3XHtg5kMXoXKZXXXc3rFhW+pr5BcuzA"
    "61y69tySNd/bSmV9Fu907+J1q/G6a3ndvbxuB143+y+6E3ndVbxuDV63zye6J/O6m9rf6zbuCmZ6mqWodHQhm2egSm/FnuzOOWOq"
    "sUhD1TuhzPd7I+xQiWaC1BOoNz+ANT+KZQcvx7GKHdEsfX8vJ5wezpJzwzFKZwY7XT+R0rJ1WNOZJmpRmoY9FMVuh5ihujCabZyR"
    "hrebQpnohRHOV/rPfVs/2efqGs5WhIbjW35fVt3HfW+Vp+Fv/L6aUDMU8fv+BSLFarI="
)


def _rigify_excerpt():
    blob = zlib.decompress(base64.b64decode(RIGIFY_EXCERPT))
    n, m = np.frombuffer(blob[:4], dtype="<u2").astype(int)
    at = 4
    parts = {}
    for key, dtype, size in (("mirror_group", "u1", 160), ("partner", "<u2", n), ("count", "u1", n),
                             ("group", "u1", m), ("weight", "<f4", m)):
        parts[key] = np.frombuffer(blob[at:at + size * np.dtype(dtype).itemsize], dtype=dtype)
        at += size * np.dtype(dtype).itemsize
    assert at == len(blob)
    weights = np.zeros((160, n), dtype=np.float32)
    weights[parts["group"], np.repeat(np.arange(n), parts["count"])] = parts["weight"]
    # Points that pair the vertices as on the character: a pair at +-x, a vertex of the plane at x = 0.
    partner = parts["partner"].astype(np.intp)
    points = np.zeros((n, 3))
    points[:, 1] = np.minimum(np.arange(n), partner)
    points[:, 0] = np.where(partner == np.arange(n), 0.0, np.where(np.arange(n) < partner, 1.0, -1.0))
    return points, weights, parts["mirror_group"].astype(np.intp), partner


def test_rigify_excerpt(way):
    points, weights, mirror_group, partner = _rigify_excerpt()
    got_partner, diff, worst = _assert_same(points, weights, mirror_group, 1e-3, "rigify")
    assert np.array_equal(got_partner, partner)
    assert (mirror_group[mirror_group] == np.arange(160)).all()  # an involution: the sparse way's shortcut
    d = np.abs(weights.astype(np.float64) - weights[mirror_group][:, partner])
    assert (((d == diff) & (d > 0)).sum(axis=0) > 1).sum() >= 40 and (worst == -1).sum() >= 15


@pytest.mark.parametrize(("groups", "vertices"), [(0, 4), (3, 0), (3, 4), (1, 1)])
def test_empty_and_unmatched(way, groups, vertices):
    """No groups, no vertices, no vertex with a partner, a single vertex its own partner."""
    rng = np.random.default_rng(groups + vertices)
    points = np.abs(rng.normal(size=(vertices, 3))) + 1.0 if vertices > 1 else np.zeros((vertices, 3))
    weights = rng.random((groups, vertices)).astype(np.float32)
    _assert_same(points, weights, np.arange(groups)[::-1].copy(), 1e-6, (groups, vertices))


def test_the_way_is_chosen_in_exact_integers(monkeypatch):
    """The choice between the two ways multiplies a count by the cost factor: under numpy 2 the
    count is an ``np.int64`` and a large factor wrapped around (a RuntimeWarning, then the sparse way
    for weights the factor sends the dense way).  Exact integers choose by the factor at any size."""
    import warnings

    calls = {"sparse": 0, "dense": 0}
    for name in calls:
        real = getattr(symmetry, f"_mirror_{name}")

        def spy(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(symmetry, f"_mirror_{name}", spy)
    points = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [-2.0, 1.0, 0.0]])
    weights = np.array([[1.0, 0.5, 0.25, 0.25], [0.5, 1.0, 0.75, 0.75]], dtype=np.float32)
    for factor, way in ((2**62, "dense"), (2**61 + 1, "dense"), (0, "sparse")):
        before = dict(calls)
        monkeypatch.setattr(symmetry, "_SPARSE_CELLS_PER_WEIGHT", factor)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = mirror_weights(points, weights, np.array([1, 0]), X_PLANE, 1e-6)
        assert calls[way] == before[way] + 1 and sum(calls.values()) == sum(before.values()) + 1, (factor, calls)
        # Hand values: group 0 of vertex 0 (1.0) against group 1 of its mirror vertex 1 (1.0), ...
        assert got.difference.tolist() == [0.0, 0.0, 0.5, 0.5]
    monkeypatch.undo()  # the factor of the code: 8 cells per weight
    assert symmetry._sparse_pays(np.int64(2**40), np.int64(2**43)) is False
    assert symmetry._sparse_pays(np.int64(2**40) - 1, 2**43) is True
