# SPDX-License-Identifier: GPL-3.0-or-later
"""Left/right symmetry: bone name pairs, mirrored rest frames, mirrored weights.

The rig's symmetry plane is ``x = c`` in armature space (Blender's X-mirror
convention), with ``c`` the median mid-point of the paired bones' heads.  A
bone mirrored across it has the rest matrix ``S B S`` with ``S = diag(-1, 1, 1, 1)``
about the plane (measured on Blender's own X-mirrored bones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .mesh_graph import nearest_within

F64 = NDArray[np.float64]

_SWAP = {"l": "r", "r": "l", "left": "right", "right": "left"}
_SUFFIX = re.compile(r"^(?P<stem>.*?)(?P<sep>[._\-\s])(?P<side>l|r|left|right)(?P<num>(\.\d+)?)$", re.IGNORECASE)
_PREFIX = re.compile(r"^(?P<side>l|r|left|right)(?P<sep>[._\-\s])(?P<stem>.+)$", re.IGNORECASE)
_WORD = re.compile(r"(left|right)", re.IGNORECASE)


def _swap_case(word: str) -> str:
    other = _SWAP[word.lower()]
    if word.isupper():
        return other.upper()
    if word[0].isupper():
        return other.capitalize()
    return other


def side_and_mirror(name: str) -> tuple[str, str] | None:
    """('L' or 'R', the mirrored name) for a side bone or group name, else None.

    Recognises ``.L``/``.R``, ``_l``/``_r``, ``-L``, ``L_``/``R_`` prefixes and
    Left/Right anywhere (``LeftArm``, ``arm_left``), case-insensitively.
    """
    for pattern in (_SUFFIX, _PREFIX):
        m = pattern.match(name)
        if m:
            side = m.group("side")
            swapped = _swap_case(side)
            start, end = m.span("side")
            return ("L" if side.lower() in ("l", "left") else "R"), name[:start] + swapped + name[end:]
    m = _WORD.search(name)
    if m:
        side = m.group(1)
        start, end = m.span(1)
        return ("L" if side.lower() == "left" else "R"), name[:start] + _swap_case(side) + name[end:]
    return None


@dataclass(frozen=True)
class BonePairs:
    pairs: tuple[tuple[int, int], ...]  # (left, right) bone indices
    unpaired: tuple[int, ...]
    plane_x: float


MIRROR = np.diag([-1.0, 1.0, 1.0, 1.0])


def pair_bones(names: tuple[str, ...], heads: F64) -> BonePairs:
    """Pair side bones by name; the plane from the pairs' mid-points."""
    lookup = {n.lower(): i for i, n in enumerate(names)}
    pairs, unpaired = [], []
    for i, n in enumerate(names):
        sm = side_and_mirror(n)
        if sm is None:
            continue
        side, other = sm
        j = lookup.get(other.lower())
        if j is None:
            unpaired.append(i)
        elif side == "L":
            pairs.append((i, j))
    mids = [0.5 * (heads[a, 0] + heads[b, 0]) for a, b in pairs]
    return BonePairs(tuple(pairs), tuple(unpaired), float(np.median(mids)) if mids else 0.0)


def mirror_matrix(plane_x: float) -> F64:
    """Reflection across the plane ``x = plane_x`` as a (4, 4) matrix."""
    m = MIRROR.copy()
    m[0, 3] = 2.0 * plane_x
    return m


def mirror_mismatch(rest: F64, pairs: BonePairs) -> list[tuple[int, int, float, float]]:
    """Per pair: (left, right, rotation angle in degrees, head distance) from a true mirror image."""
    refl = mirror_matrix(pairs.plane_x)
    out = []
    for a, b in pairs.pairs:
        expected = refl @ rest[a] @ MIRROR
        r = expected[:3, :3].T @ rest[b][:3, :3]
        cos = np.clip((np.trace(r) - 1.0) / 2.0, -1.0, 1.0)
        out.append((a, b, float(np.degrees(np.arccos(cos))),
                    float(np.linalg.norm(expected[:3, 3] - rest[b][:3, 3]))))
    return out


@dataclass(frozen=True)
class WeightMirror:
    partner: NDArray[np.intp]  # (V,) mirror vertex or -1
    matched_fraction: float
    difference: F64  # (V,) worst |w_g(v) - w_g'(v')| over groups, 0 where unmatched
    worst_group: NDArray[np.intp]  # (V,) group of that worst difference, -1 where none


def mirror_weights(points: F64, weights: NDArray[np.float32], group_names: tuple[str, ...],
                   plane_x: float, radius: float) -> WeightMirror:
    """Compare each vertex's weights with its mirror vertex's mirrored-group weights.

    Parameters
    ----------
    points : (V, 3) float64, armature space
    weights : (G, V) float32
    radius : how far a mirrored vertex may be from its partner
    """
    mirrored = points.copy()
    mirrored[:, 0] = 2.0 * plane_x - mirrored[:, 0]
    partner = nearest_within(points, mirrored, radius)
    matched = partner >= 0
    index = {n: g for g, n in enumerate(group_names)}
    diff = np.zeros(len(points))
    worst = np.full(len(points), -1, dtype=np.intp)
    src = np.flatnonzero(matched)
    for g, name in enumerate(group_names):
        sm = side_and_mirror(name)
        other = index.get(sm[1], -1) if sm else g
        mine = weights[g, src].astype(np.float64)
        theirs = weights[other, partner[src]].astype(np.float64) if other >= 0 else np.zeros(len(src))
        d = np.abs(mine - theirs)
        bigger = d > diff[src]
        diff[src[bigger]] = d[bigger]
        worst[src[bigger]] = g
    return WeightMirror(partner, float(matched.mean()) if len(points) else 1.0, diff, worst)
