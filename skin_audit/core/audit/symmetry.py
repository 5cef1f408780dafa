# SPDX-License-Identifier: GPL-3.0-or-later
"""Left/right symmetry: bone name pairs, mirrored rest frames, mirrored weights.

The rig's symmetry plane is found from its paired bones: its normal is the
mean direction from right heads to left heads, and it passes through their
mid-points (armature X and ``x = 0`` for a rig built the Blender way, but an
imported rig may be turned).  A bone mirrored across it has the rest matrix
``H B D``, ``H`` the reflection and ``D = diag(-1, 1, 1, 1)`` flipping the
bone's own X back to a right-handed frame; for the X plane that is Blender's
own X-mirror (``S B S``, measured on its X-mirrored bones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..maths.mesh_graph import nearest_within

F64 = NDArray[np.float64]

_SWAP = {"l": "r", "r": "l", "left": "right", "right": "left"}
#: A side marker: a whole token l/r/left/right between separators, or a
#: capitalised Left/Right word inside a token (LeftArm, b_RightHand_08).
_TOKEN = re.compile(r"(?:(?<=^)|(?<=[._\-\s:|]))(l|r|left|right)(?=$|[._\-\s:|\d])", re.IGNORECASE)
_WORD = re.compile(r"(Left|Right|LEFT|RIGHT|left(?=[A-Z])|right(?=[A-Z]))")
#: Trailing indices exporters append (".001", "_06", "__4_") are not part of the name.
_TAIL = re.compile(r"([._\-\s]*\d+[._\-\s]*)+$")


def _swap_case(word: str) -> str:
    other = _SWAP[word.lower()]
    if word.isupper() and len(word) > 1:
        return other.upper()
    if word[0].isupper():
        return other.capitalize() if len(word) > 1 else other.upper()
    return other


def _side_match(name: str) -> re.Match[str] | None:
    # The last marker wins: "L_arm.R" is a right bone; prefer whole tokens over words.
    tokens = list(_TOKEN.finditer(name))
    if tokens:
        return tokens[-1]
    words = list(_WORD.finditer(name))
    return words[-1] if words else None


def side_and_mirror(name: str) -> tuple[str, str] | None:
    """('L' or 'R', the mirrored name) for a side bone or group name, else None.

    Recognises ``.L``/``.R``, ``_l``/``_r``, ``-L``, ``L_``/``R_`` prefixes and
    Left/Right words (``LeftArm``, ``arm_left``), case-insensitively.
    """
    m = _side_match(name)
    if m is None:
        return None
    side = m.group(1)
    start, end = m.span(1)
    return ("L" if side.lower() in ("l", "left") else "R"), name[:start] + _swap_case(side) + name[end:]


def side_key(name: str) -> tuple[str, str] | None:
    """('L' or 'R', a key equal for both sides): the name without its side and trailing index."""
    m = _side_match(name)
    if m is None:
        return None
    side = "L" if m.group(1).lower() in ("l", "left") else "R"
    start, end = m.span(1)
    key = (name[:start] + "<side>" + _TAIL.sub("", name[end:])).lower()
    return side, key


@dataclass(frozen=True)
class BonePairs:
    pairs: tuple[tuple[int, int], ...]  # (left, right) bone indices
    unpaired: tuple[int, ...]
    #: Symmetry plane ``normal . p = offset`` (armature space; unit normal).
    normal: F64
    offset: float

    def describe(self) -> str:
        n = self.normal
        return f"the plane {n[0]:+.3g}x {n[1]:+.3g}y {n[2]:+.3g}z = {self.offset:.4g}"


def pair_bones(names: tuple[str, ...], heads: F64) -> BonePairs:
    """Pair side bones by name; among equal names (up to trailing indices) the nearest mirror wins.

    The plane comes from the pairs: normal along the mean right-to-left head
    direction, through the median of their mid-points.
    """
    sides: dict[str, dict[str, list[int]]] = {"L": {}, "R": {}}
    for i, n in enumerate(names):
        sk = side_key(n)
        if sk is not None:
            sides[sk[0]].setdefault(sk[1], []).append(i)
    pairs: list[tuple[int, int]] = []
    unpaired: list[int] = []
    for key, lefts in sides["L"].items():
        rights = list(sides["R"].get(key, []))
        # Nearest first: the pair whose heads are closest to mirror images of each other.
        options = sorted((float(np.linalg.norm(heads[a][1:] - heads[b][1:]) + abs(heads[a][0] + heads[b][0])), a, b)
                          for a in lefts for b in rights)
        used: set[int] = set()
        for _, a, b in options:
            if a not in used and b not in used:
                pairs.append((a, b))
                used |= {a, b}
        unpaired += [i for i in lefts + rights if i not in used]
    for key, rights in sides["R"].items():
        if key not in sides["L"]:
            unpaired += rights
    normal, offset = np.array([1.0, 0.0, 0.0]), 0.0
    apart = np.array([heads[a] - heads[b] for a, b in pairs]).reshape(-1, 3)
    lengths = np.linalg.norm(apart, axis=1)
    if (lengths > 0).any():
        mean = (apart[lengths > 0] / lengths[lengths > 0, None]).mean(axis=0)
        normal = mean / np.linalg.norm(mean)
        mids = np.array([0.5 * (heads[a] + heads[b]) for a, b in pairs])
        offset = float(np.median(mids @ normal))
    return BonePairs(tuple(sorted(pairs)), tuple(sorted(unpaired)), normal, offset)


MIRROR = np.diag([-1.0, 1.0, 1.0, 1.0])


def reflection(pairs: BonePairs) -> F64:
    """Reflection across the pairs' symmetry plane as a (4, 4) matrix."""
    n = pairs.normal
    m = np.eye(4)
    m[:3, :3] -= 2.0 * np.outer(n, n)
    m[:3, 3] = 2.0 * pairs.offset * n
    return m


def reflect_points(points: F64, pairs: BonePairs) -> F64:
    """(V, 3) points mirrored across the symmetry plane."""
    # vi,i->v: each point's height along the normal (einsum: the BLAS policy, ``maths.parallel``).
    height = np.einsum("vi,i->v", points, pairs.normal) - pairs.offset
    out: F64 = points - 2.0 * height[:, None] * pairs.normal
    return out


def rotation_angle(r: F64) -> float:
    """Angle in degrees of a 3x3 rotation, from atan2 of its skew and symmetric parts (no arccos noise)."""
    skew = 0.5 * np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    return float(np.degrees(np.arctan2(np.linalg.norm(skew), (np.trace(r) - 1.0) / 2.0)))


@dataclass(frozen=True)
class PairFrames:
    left: int
    right: int
    #: Rotation from Blender's mirror image of the left bone to the right bone, in the bone's frame.
    offset: F64  # (3, 3)
    angle: float  # degrees of ``offset``
    head_distance: float


def mirror_frames(rest: F64, pairs: BonePairs) -> list[PairFrames]:
    """Per pair, how the right bone's rest frame differs from the left one's mirror image."""
    refl = reflection(pairs)
    out = []
    for a, b in pairs.pairs:
        expected = refl @ rest[a] @ MIRROR
        offset = expected[:3, :3].T @ rest[b][:3, :3]
        out.append(PairFrames(a, b, offset, rotation_angle(offset),
                              float(np.linalg.norm(expected[:3, 3] - rest[b][:3, 3]))))
    return out


def rotation_angles(r: F64) -> F64:
    """(N,) angles in degrees of (N, 3, 3) rotations; :func:`rotation_angle` for many at once."""
    skew = 0.5 * np.stack([r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0], r[:, 1, 0] - r[:, 0, 1]], axis=1)
    out: F64 = np.degrees(np.arctan2(np.linalg.norm(skew, axis=1), (np.trace(r, axis1=1, axis2=2) - 1.0) / 2.0))
    return out


#: 180 degrees about the bone's own Y axis.
TURN_Y = np.diag([-1.0, 1.0, -1.0])


def mirror_offset_angles(rest: F64, frames: list[PairFrames], normal: F64, reference: F64) -> F64:
    """(P,) how far each pair's frame offset is from ``reference`` (degrees), degenerate pairs excepted.

    A pair whose left bone lies along the mirror axis (within tolerances.ALONG_MIRROR_AXIS_DEGREES of ``normal``)
    has two mirror images a half turn about its own axis apart; it is judged against the nearer.
    """
    if not frames:
        return np.zeros(0)
    offsets = np.array([f.offset for f in frames])
    # ij,pjk->pik: each offset seen from the reference rule.
    angles = rotation_angles(np.einsum("ji,pjk->pik", reference, offsets))
    y = rest[[f.left for f in frames], :3, 1]
    along = np.abs(y @ normal) >= np.cos(np.radians(tolerances.ALONG_MIRROR_AXIS_DEGREES)) * np.linalg.norm(y, axis=1)
    if along.any():
        turned = rotation_angles(np.einsum("ij,pjk->pik", TURN_Y, np.einsum("ji,pjk->pik", reference,
                                                                             offsets[along])))
        angles[along] = np.minimum(angles[along], turned)
    return angles


def shared_convention(frames: list[PairFrames], tolerance_degrees: float) -> F64 | None:
    """The frame offset most pairs share, when it is not Blender's own (identity) and at least
    two pairs and half of them follow it: a rig mirrored by another tool's rule (e.g. axes turned
    180 degrees), consistent, not a stray roll.

    Near-linear in pairs: offsets are grouped around leaders (each group one vectorised pass
    over the pairs), and a rig has a handful of distinct offsets, not one per pair.
    """
    if not frames:
        return None
    flat = np.array([f.offset for f in frames]).reshape(len(frames), 9)
    # trace(A^T B) = sum(A * B); the angle is within tolerance when (trace - 1) / 2 >= cos(tolerance).
    cos_tol = float(np.cos(np.radians(tolerance_degrees)))
    open_ = np.ones(len(frames), dtype=bool)
    best_count, best = 0, -1
    while open_.any():
        leader = int(np.argmax(open_))
        close = (flat @ flat[leader] - 1.0) / 2.0 >= cos_tol
        count = int(close.sum())
        if count > best_count:
            best_count, best = count, leader
        open_ &= ~close
        open_[leader] = False
    offset = frames[best].offset
    if rotation_angle(offset) <= tolerance_degrees:
        return None
    if best_count >= 2 and 2 * best_count >= len(frames):
        return offset
    return None


@dataclass(frozen=True)
class WeightMirror:
    partner: NDArray[np.intp]  # (V,) mirror vertex or -1
    matched_fraction: float
    difference: F64  # (V,) worst |w_g(v) - w_g'(v')| over groups, 0 where unmatched
    worst_group: NDArray[np.intp]  # (V,) group of that worst difference, -1 where none


def mirror_groups(group_names: tuple[str, ...], bone_names: tuple[str, ...], pairs: BonePairs) -> NDArray[np.intp]:
    """(G,) the group holding each group's mirrored weights: through the bone pairs, else by
    mirrored name; a group without side is its own mirror; -1 where the mirror group is missing."""
    partner = {}
    for a, b in pairs.pairs:
        partner[bone_names[a]], partner[bone_names[b]] = bone_names[b], bone_names[a]
    index = {n: g for g, n in enumerate(group_names)}
    out = np.full(len(group_names), -1, dtype=np.intp)
    for g, name in enumerate(group_names):
        sm = side_and_mirror(name)
        other = partner.get(name) or (sm[1] if sm else name)
        out[g] = index.get(other, -1)
    return out


#: Vertices per block of the dense comparison at least, and (groups x vertices) per block at most
#: beyond that: its (groups, block) arrays stay a few megabytes.
_MIRROR_BLOCK = 8192
_MIRROR_CELLS = 2**20
#: The sparse comparison costs about as much per non-zero weight as the dense one per this many
#: cells (measured on random weights: even at 5 to 10 cells per weight; Rigify's character has 65,
#: sparse 5 times faster); denser weights (painted nearly everywhere) go the dense way.
_SPARSE_CELLS_PER_WEIGHT = 8


def _sparse_pays(nonzero: int, cells: int) -> bool:
    """The sparse comparison costs less than the dense one: ``nonzero`` weights of ``cells``.

    Python integers, exact at any size (numpy 2 counts in a fixed-width ``np.int64``, whose
    product with the cost factor can wrap around and pick the wrong way).
    """
    return int(nonzero) * int(_SPARSE_CELLS_PER_WEIGHT) < int(cells)


def mirror_weights(points: F64, weights: NDArray[np.float32], mirror_group: NDArray[np.intp],
                   pairs: BonePairs, radius: float) -> WeightMirror:
    """Compare each vertex's weights with its mirror vertex's mirrored-group weights.

    Parameters
    ----------
    points : (V, 3) float64, armature space
    weights : (G, V) float32
    mirror_group : (G,) from :func:`mirror_groups`; a missing mirror group counts as weight 0
    radius : how far a mirrored vertex may be from its partner

    ``difference`` is each matched vertex's largest ``|w_g(v) - w_mirror_group[g](partner)|`` (in
    float64 of the float32 weights), ``worst_group`` the first group reaching it; a NaN weight is
    never larger (the weight checks report it).  Only a group weighing something on the vertex, or
    whose mirror group weighs something on the partner, can differ: the comparison runs over those
    non-zero weights, not over every group of every vertex.
    """
    mirrored = reflect_points(points, pairs)
    partner = nearest_within(points, mirrored, radius)
    matched = partner >= 0
    src = np.flatnonzero(matched)
    mirror_group = np.asarray(mirror_group, dtype=np.intp)
    nonzero = weights != 0  # a NaN weight is non-zero here: its difference (NaN) is never larger
    # A rig has a few influences per vertex out of tens or hundreds of groups: sparse.
    if _sparse_pays(int(np.count_nonzero(nonzero)), nonzero.size):
        diff, worst = _mirror_sparse(weights, nonzero, mirror_group, partner, src)
    else:
        diff, worst = _mirror_dense(weights, mirror_group, partner, src)
    return WeightMirror(partner, float(matched.mean()) if len(points) else 1.0, diff, worst)


def _mirror_dense(weights: NDArray[np.float32], mirror_group: NDArray[np.intp], partner: NDArray[np.intp],
                  src: NDArray[np.intp]) -> tuple[F64, NDArray[np.intp]]:
    """(V,) largest difference and first group reaching it, every group of every matched vertex
    compared: cheaper than the sparse way when most weights are non-zero."""
    diff = np.zeros(len(partner))
    worst = np.full(len(partner), -1, dtype=np.intp)
    missing = mirror_group < 0
    rows = np.where(missing, 0, mirror_group)
    # Every group at once over a block of vertices (a loop over groups was 160 passes on a
    # character): each vertex's largest difference, the first group reaching it.  Columns are
    # taken first (np.take), then the partner's rows put in mirror order.
    block = max(_MIRROR_BLOCK, _MIRROR_CELLS // max(len(weights), 1))
    for first in range(0, len(src), block):
        mine_v = src[first:first + block]
        mine = np.take(weights, mine_v, axis=1)
        theirs = np.take(weights, partner[mine_v], axis=1)[rows]
        theirs[missing] = 0.0  # a missing mirror group weighs 0
        d = np.abs(np.subtract(mine, theirs, dtype=np.float64))
        # The first group reaching each column's largest difference, row by row (an argmax down
        # the short axis reads the array across its rows: several times slower).  A NaN is never
        # larger.
        largest = np.zeros(len(mine_v))
        top = np.full(len(mine_v), -1, dtype=np.intp)
        for g, row in enumerate(d):
            bigger = row > largest
            np.copyto(largest, row, where=bigger)
            top[bigger] = g
        diff[mine_v] = largest
        worst[mine_v] = top
    return diff, worst


def _inverse(image: NDArray[np.intp], n: int) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]:
    """The positions of ``image`` (values in [0, n)) in value order, and each value's run
    (start, count) in that order: a scatter when no value repeats, else a stable sort."""
    count = np.bincount(image, minlength=n)
    start = np.cumsum(count) - count
    if len(image) and count.max() > 1:
        order: NDArray[np.intp] = np.argsort(image, kind="stable")
    else:
        order = np.empty(len(image), dtype=np.intp)
        order[start[image]] = np.arange(len(image))
    return order, start, count


def _expand(starts: NDArray[np.intp], lengths: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Every ``(i, starts[i] + j)`` for ``j < lengths[i]``, as (owners, positions)."""
    if not len(lengths) or lengths.max() <= 1:
        owner = np.flatnonzero(lengths)
        return owner, starts[owner]
    owner = np.repeat(np.arange(len(lengths)), lengths)
    ends = np.cumsum(lengths)
    return owner, np.arange(int(ends[-1])) - np.repeat(ends - lengths - starts, lengths)


def _mirror_sparse(weights: NDArray[np.float32], nonzero: NDArray[np.bool_], mirror_group: NDArray[np.intp],
                   partner: NDArray[np.intp], src: NDArray[np.intp]) -> tuple[F64, NDArray[np.intp]]:
    """:func:`_mirror_dense` over the non-zero weights only: per matched vertex v (partner p), the
    groups weighing something on v, and the groups whose mirror group weighs something on p
    (the same (v, g) may come twice: it gives the same difference)."""
    n_groups, n_verts = weights.shape
    # 1. The non-zero cells (h, u), group-major (each group's run found by bisection: counting
    # along the rows costs as much as finding the cells).
    flat = np.flatnonzero(nonzero)
    per_group = np.diff(np.searchsorted(flat, np.arange(n_groups + 1) * n_verts))
    cell_group = np.repeat(np.arange(n_groups), per_group)
    cell_vertex = flat - cell_group * n_verts
    # 2. Each as one of u's own groups when u is matched.  Only a difference above 0 can be the
    # largest (a NaN never is): the rest is dropped at once (most of a symmetric rig).
    own_group, own_vertex = cell_group, cell_vertex
    if len(src) < n_verts:
        own = (partner >= 0)[cell_vertex]
        own_group, own_vertex = cell_group[own], cell_vertex[own]
    rows = mirror_group[own_group]
    theirs = weights[np.maximum(rows, 0), partner[own_vertex]]
    theirs[rows < 0] = 0.0  # a missing mirror group weighs 0
    own_d = np.abs(np.subtract(weights[own_group, own_vertex], theirs, dtype=np.float64))
    keep = np.flatnonzero(own_d > 0.0)
    vertex, group, d = own_vertex[keep], own_group[keep], own_d[keep]
    candidates = [(vertex, group, d)]
    largest = np.zeros(n_verts)
    np.maximum.at(largest, vertex, d)
    # 3. The partner's side.  For v and p partners of each other under a mirror_group that is its
    # own inverse (the usual symmetric rig), the groups g mirroring into p's non-zero groups h are
    # mirror_group[h], with p's own differences (a - b is exactly -(b - a)): nothing to compute.
    rest = src
    if len(mirror_group) and (mirror_group >= 0).all() and (mirror_group[mirror_group] == np.arange(n_groups)).all():
        mutual = np.zeros(n_verts, dtype=bool)
        mutual[src] = partner[partner[src]] == src
        pick = mutual[vertex]
        candidates.append((partner[vertex[pick]], mirror_group[group[pick]], d[pick]))
        both = np.flatnonzero(mutual)
        if len(both) == n_verts:
            np.maximum(largest, largest[partner], out=largest)
        else:
            largest[both] = np.maximum(largest[both], largest[partner[both]])
        rest = src[~mutual[src]]
    if len(rest):
        # Any other vertex v: every cell (h, u) gives, to every vertex v of ``rest`` whose partner
        # is u and every group g mirroring into h, the partner's weight of g (a partner or a
        # mirror group may be shared).
        by_partner, partner_start, partner_count = _inverse(partner[rest], n_verts)
        cell, at = _expand(partner_start[cell_vertex], partner_count[cell_vertex])
        their_group, mine_vertex = cell_group[cell], rest[by_partner[at]]
        has_mirror = np.flatnonzero(mirror_group >= 0)
        by_mirror, mirror_start, mirror_count = _inverse(mirror_group[has_mirror], n_groups)
        entry, at = _expand(mirror_start[their_group], mirror_count[their_group])
        mine_group, mine_vertex = has_mirror[by_mirror[at]], mine_vertex[entry]
        mine_d = np.abs(np.subtract(weights[mine_group, mine_vertex],
                                    weights[their_group[entry], partner[mine_vertex]], dtype=np.float64))
        keep = np.flatnonzero(mine_d > 0.0)
        candidates.append((mine_vertex[keep], mine_group[keep], mine_d[keep]))
        np.maximum.at(largest, mine_vertex[keep], mine_d[keep])
    # 4. The first group reaching each vertex's largest difference.  (ufunc.at scatters without
    # buffering: linear, and fast since numpy 1.25.)
    first = np.full(n_verts, n_groups, dtype=np.intp)
    for vertex, group, d in candidates:
        hit = d == largest[vertex]
        np.minimum.at(first, vertex[hit], group[hit])
    return largest, np.where(largest > 0.0, first, -1)
