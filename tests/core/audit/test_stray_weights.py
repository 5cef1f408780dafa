# SPDX-License-Identifier: GPL-3.0-or-later
"""``find_stray_weights`` against a plain reference written here: per group,
distances point by point, a breadth-first search over welded vertices for the
weighted regions and the mesh's pieces, on random meshes with UV seams (split
vertices at one position), separate pieces, sprinkled islands (many single-vertex
regions, so ties of size) and far vertices; shuffled and in-order numbering.
Also ``component_labels`` on mesh-like numbering and ``segment_distance`` bit for
bit against the (N, 3) formula.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from skin_audit.core.audit.stray_weights import _percentile_and_max, find_stray_weights, segment_distance
from skin_audit.core.maths.mesh_graph import component_labels
from tests.shape.test_collapse_core import bfs_labels

# The rule's numbers, written here by hand (never imported from the module they check, so a
# changed constant fails the comparison instead of moving the reference with it):
#: A vertex is far beyond three times its bone's reach (the 90th-percentile distance of the
#: group's vertices: a limb's skin sits within it, three times it is another part of the body) ...
FAR_FACTOR = 3.0
#: ... plus 5% of the mesh size (a bone hugged by its skin still leaves room for a little bleed).
FAR_MARGIN = 0.05
#: Groups with fewer weighted vertices have no reach worth judging distance by.
MIN_VERTICES = 8
#: Vertices within a millionth of the mesh size are one point (UV seams, unmerged imports).
WELD_RELATIVE = 1e-6
#: The floor of the weld step (a zero size still welds exact duplicates).
DIVISION_GUARD = 1e-12


def grid(rows: int, cols: int, origin: np.ndarray, seam: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A rows x cols grid of quads (points, edges); ``seam``: the column split in two copies."""
    ii, jj = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    points = np.column_stack([jj.ravel() * 0.1, ii.ravel() * 0.1, np.zeros(rows * cols)]) + origin
    index = np.arange(rows * cols).reshape(rows, cols)
    right = index.copy()  # right-hand ends of horizontal edges
    if seam is not None:  # edges leaving the seam column to the right use its copies
        copies = rows * cols + np.arange(rows)
        points = np.vstack([points, points[index[:, seam]]])
        right[:, seam] = copies
    edges = [np.column_stack([right[:, :-1].ravel(), index[:, 1:].ravel()]),
             np.column_stack([index[:-1, :].ravel(), index[1:, :].ravel()])]
    if seam is not None:  # the copies are joined among themselves along the seam
        edges.append(np.column_stack([copies[:-1], copies[1:]]))
    return points, np.vstack(edges)


def random_rig(seed: int, shuffle: bool):
    rng = np.random.default_rng(seed)
    points, edges, count = [], [], 0
    for piece in range(int(rng.integers(1, 4))):
        rows, cols = int(rng.integers(2, 9)), int(rng.integers(2, 9))
        seam = int(rng.integers(0, cols)) if rng.random() < 0.6 else None
        p, e = grid(rows, cols, np.array([piece * 2.0, 0.0, 0.0]), seam)
        points.append(p)
        edges.append(e + count)
        count += len(p)
    if rng.random() < 0.5:  # a loose patch far from every bone
        p, e = grid(2, 2, np.array([40.0, 0.0, 0.0]), None)
        points.append(p)
        edges.append(e + count)
        count += len(p)
    points, edges = np.vstack(points), np.vstack(edges).astype(np.intp)
    if shuffle:
        perm = rng.permutation(count)  # new index of each old vertex
        new = np.empty_like(points)
        new[perm] = points
        points, edges = new, perm[edges]
    edges = np.where(rng.random((len(edges), 1)) < 0.5, edges, edges[:, ::-1])
    groups = int(rng.integers(1, 7))
    weights = np.zeros((groups, count), dtype=np.float32)
    for g in range(groups):
        centre = points[rng.integers(count)]
        blob = np.linalg.norm(points - centre, axis=1) < rng.uniform(0.05, 0.5)
        sprinkled = rng.random(count) < rng.uniform(0.0, 0.15)
        sprinkled[-4:] &= rng.random() < 0.3  # the loose patch, to some groups
        weights[g, blob | sprinkled] = rng.uniform(0.1, 1.0, int((blob | sprinkled).sum()))
    bones = groups + 1
    heads = rng.uniform(-1.0, 5.0, (bones, 3))
    tails = heads + rng.uniform(-1.0, 1.0, (bones, 3))
    tails[0] = heads[0]  # a zero-length bone
    group_bones = rng.integers(-1, bones, groups).astype(np.intp)
    size = float(np.ptp(points, axis=0).max())
    return points, weights, group_bones, heads, tails, edges, size


def reference(points, weights, group_bones, heads, tails, edges, size, ties=None):
    """{group: (bone, far, islands, worst)} by the plain definitions, vertex by vertex;
    ``ties`` (a list) gets one entry per piece whose largest regions tie in size."""
    step = max(WELD_RELATIVE * size, DIVISION_GUARD)
    cell = [tuple(c) for c in np.round(points / step).astype(np.int64).tolist()]
    first: dict[tuple[int, ...], int] = {}
    node = [first.setdefault(c, v) for v, c in enumerate(cell)]  # welded: the first vertex at a position
    neighbours: dict[int, set[int]] = {}
    for a, b in edges.tolist():
        if node[a] != node[b]:
            neighbours.setdefault(node[a], set()).add(node[b])
            neighbours.setdefault(node[b], set()).add(node[a])

    def flood(members: set[int]) -> dict[int, int]:
        """Node -> an id of its connected part within ``members``."""
        part: dict[int, int] = {}
        for n in members:
            if n in part:
                continue
            part[n] = n
            queue = deque([n])
            while queue:
                for m in neighbours.get(queue.popleft(), ()):
                    if m in members and m not in part:
                        part[m] = n
                        queue.append(m)
        return part

    piece = flood(set(node))
    out = {}
    for g, bone in enumerate(group_bones.tolist()):
        idx = np.flatnonzero(weights[g] > 0)
        if bone < 0 or idx.size == 0:
            continue
        far, worst = [], 0.0
        if idx.size >= MIN_VERTICES:
            p, head, axis = points[idx], heads[bone], tails[bone] - heads[bone]
            length2 = float(axis @ axis)
            t = np.zeros(len(p)) if length2 == 0.0 else np.clip((p - head) @ axis / length2, 0.0, 1.0)
            d = np.linalg.norm(p - (head + t[:, None] * axis), axis=1)
            limit = FAR_FACTOR * float(np.percentile(d, 90)) + FAR_MARGIN * size
            far, worst = idx[d > limit].tolist(), float(d.max())
        region = flood({node[v] for v in idx})
        members: dict[int, list[int]] = {}  # region -> its weighted vertices
        for v in idx.tolist():
            members.setdefault(region[node[v]], []).append(v)
        main: dict[int, int] = {}  # piece -> its main region: most vertices, then the smallest position
        for r, verts in members.items():
            p = piece[r]
            rank = (-len(verts), min(cell[node[v]] for v in verts))
            if p not in main or rank < main[p][0]:
                main[p] = (rank, r)
        islands = sorted(v for r, verts in members.items() if main[piece[r]][1] != r for v in verts)
        if ties is not None:
            for p, ((most, _), _) in main.items():
                if sum(piece[r] == p and len(verts) == -most for r, verts in members.items()) > 1:
                    ties.append((g, p))
        if far or islands:
            out[g] = (bone, far, islands, worst)
    return out


def as_dict(found):
    return {s.group: (s.bone, s.far.tolist(), s.islands.tolist(), s.worst_distance) for s in found}


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_find_stray_weights_matches_reference(seed, shuffle):
    rig = random_rig(seed, shuffle)
    assert as_dict(find_stray_weights(*rig)) == reference(*rig)


@pytest.mark.parametrize(("distance", "far"), [(0.39, False), (0.41, True)])
def test_far_threshold_by_hand(distance, far):
    """Ten vertices 0.1 from a bone along +Y and one at ``distance``: the reach (90th percentile
    of the eleven distances) is 0.1, so the limit is 3 x 0.1 + 5% of the size 2 = 0.4."""
    points = np.vstack([np.column_stack([np.full(10, 0.1), np.arange(10) / 10, np.zeros(10)]), [[distance, 0.5, 0]]])
    weights = np.ones((1, 11), dtype=np.float32)
    found = find_stray_weights(points, weights, np.array([0]), np.zeros((1, 3)), np.array([[0.0, 1.0, 0.0]]),
                               np.zeros((0, 2), np.intp), 2.0)
    assert as_dict(found) == ({0: (0, [10], [], pytest.approx(distance))} if far else {})


def test_reference_cases_are_not_trivial():
    """The random rigs above do have seams, far vertices, islands and ties of island size."""
    ties: list[tuple[int, int]] = []
    found = [reference(*random_rig(seed, shuffle), ties) for seed in range(40) for shuffle in (False, True)]
    assert sum(len(f) for f in found) > 40
    assert len(ties) > 20
    assert any(far for f in found for _, far, _, _ in f.values())
    assert sum(len(islands) for f in found for _, _, islands, _ in f.values()) > 100


def test_find_stray_weights_positions_too_spread_for_one_key():
    """A size far below the spread of the points: weld keys overflow one int64 (the row-wise weld)."""
    points, weights, group_bones, heads, tails, edges, _ = random_rig(3, True)
    size = 1e-9
    rig = (points * 1e6, weights, group_bones, heads * 1e6, tails * 1e6, edges, size)
    assert np.prod(np.ptp(points * 1e6, axis=0) / (WELD_RELATIVE * size) + 1) > 2.0**62
    assert as_dict(find_stray_weights(*rig)) == reference(*rig)


def test_find_stray_weights_without_vertices_or_edges():
    empty = np.zeros((0, 3))
    assert find_stray_weights(empty, np.zeros((2, 0), np.float32), np.array([0, 1]), np.zeros((2, 3)),
                              np.ones((2, 3)), np.zeros((0, 2), np.intp), 1.0) == []
    points, weights, group_bones, heads, tails, _, size = random_rig(5, False)
    rig = (points, weights, group_bones, heads, tails, np.zeros((0, 2), np.intp), size)  # a point cloud
    assert as_dict(find_stray_weights(*rig)) == reference(*rig)


@pytest.mark.parametrize("seed", range(20))
def test_component_labels_on_mesh_like_numbering(seed):
    """Strips numbered in order (runs of i, i + 1), gaps cut in them, and the same shuffled."""
    rng = np.random.default_rng(seed)
    v = int(rng.integers(2, 3000))
    k = int(rng.integers(1, 70))
    i = np.arange(v)
    edges = np.vstack([np.column_stack([i[:-1], i[1:]]), np.column_stack([i[:-k], i[k:]])])
    edges = edges[rng.random(len(edges)) < rng.uniform(0.3, 0.9)]
    edges = np.where(rng.random((len(edges), 1)) < 0.5, edges, edges[:, ::-1]).astype(np.intp)
    assert np.array_equal(component_labels(v, edges), bfs_labels(v, edges))
    perm = rng.permutation(v)
    assert np.array_equal(component_labels(v, perm[edges]), bfs_labels(v, perm[edges]))


def test_segment_distance_bit_for_bit():
    """The per-coordinate passes round exactly as the (N, 3) formula they replace."""
    rng = np.random.default_rng(7)
    for n in (1, 3, 8, 1000, 70001):
        points = rng.standard_normal((n, 3)) * 10.0 ** rng.integers(-3, 4, (n, 1))
        head, tail = rng.standard_normal(3), rng.standard_normal(3)
        for a, b in ((head, tail), (head, head)):
            axis = b - a
            length2 = float(axis @ axis)
            t = np.zeros(n) if length2 == 0.0 else np.clip((points - a) @ axis / length2, 0.0, 1.0)
            expected = np.linalg.norm(points - (a + t[:, None] * axis), axis=1)
            assert np.array_equal(segment_distance(points, a, b), expected)


def test_percentile_and_max_bit_for_bit():
    """The partition-based percentile returns np.percentile's own float, ties, NaN and all."""
    rng = np.random.default_rng(11)
    for n in list(range(1, 40)) + [99, 100, 101, 1000, 62463]:
        for values in (rng.random(n), rng.integers(0, 5, n).astype(np.float64), np.exp(rng.normal(0, 20, n))):
            for q in (90, 50, 0, 100, 37.5):
                got = _percentile_and_max(values, q)
                assert got == (float(np.percentile(values, q)), float(values.max())), (n, q)
        if n > 2:
            values = rng.random(n)
            values[rng.integers(n)] = np.nan
            got = _percentile_and_max(values, 90)
            assert np.isnan(got[0]) and np.isnan(got[1]) and np.isnan(np.percentile(values, 90))
