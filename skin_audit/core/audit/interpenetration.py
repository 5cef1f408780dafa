# SPDX-License-Identifier: GPL-3.0-or-later
"""Interpenetration at test poses: a character's meshes passing through themselves or each other
when one bone turns, beyond what they already do at rest.  numpy only.

Each weighted deform bone is turned alone (``stress_poses.turned_channels``) to the ends of the
rig's own rotation limits where it has them, and elsewhere bent by the moderate angle about X and
Z both ways.  The meshes are deformed Blender's way (its weight normalisation, the modifier's
mask; a B-Bone with segments by its joints' matrices, Blender's curve through its handles), in
armature space.  Then every pair of triangles that can have changed is tested exactly
(``maths.tri_intersect``):

- a vertex carried wholly by the turn (rigid) keeps its rest position relative to every other such
  vertex, and an unmoved one relative to every unmoved one, so pairs within one of those sides are
  never tested; only triangles whose boxes reach the other side's box are hashed into the grid;
- triangles sharing a vertex (or a vertex position: seams split for UVs) are neighbours, not
  contacts;
- a pair that already intersects at rest is left out (a garment modelled through the body,
  eyelashes through the lids).

What is judged is how far from the joint (the turned bone's head) the new contact reaches, in the
limb's radius there (the distance from the joint to the nearest skin the bone carries at rest):
linear blending folds the inner side of any bent joint onto itself within a radius or two of it
(the crease a rigger expects); a forearm folded into the upper arm, or an arm through a sleeve
that does not follow it, reaches several radii along the limb.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding
from ..maths import bbone as bb
from ..maths.affine import affine_inverse, largest_side, rotation
from ..maths.tri_intersect import candidate_pairs, triangles_intersect
from .judged import Judged
from .pose_sweep import KIND, SweepPose
from .skinned_mesh import Bones, SkinnedMesh
from .stress_poses import turned_channels

F64 = NDArray[np.float64]
IntP = NDArray[np.intp]

INTERPENETRATION_CODES = frozenset({"self-intersection", "mesh-intersection"})


def contact_poses(bones: Bones, used: Sequence[int], degrees: float) -> list[SweepPose]:
    """Per bone of ``used``: the ends of its own limits on each axis that has them; on X and Z
    without a limit, ``+-degrees`` (twists only at their limits)."""
    poses = []
    for j in sorted(set(used)):
        limits = bones.limits[j] if bones.limits else (None, None, None)
        for axis in ("x", "y", "z"):
            limit = limits["xyz".index(axis)]
            if limit is not None:
                poses += [SweepPose(j, axis, float(np.degrees(v)), "limit") for v in limit
                          if abs(v) > tolerances.ANGLE_ZERO]
            elif axis != "y":
                poses += [SweepPose(j, axis, s * degrees, "default") for s in (1.0, -1.0)]
    return poses


@dataclass
class _Character:
    """Every mesh's triangles and weights in one armature-space point set."""

    points: F64  # (V, 3) rest, armature space
    triangles: IntP  # (T, 3) into points
    welded: IntP  # (T, 3) the same, coincident vertices merged
    mesh_of: IntP  # (T,) mesh index of each triangle
    starts: IntP  # (M + 1,) first vertex of each mesh
    size: float
    lo: F64  # (T, 3) rest boxes
    hi: F64
    #: Per bone: (vertex, scaled weight) over every mesh.
    columns: dict[int, tuple[IntP, F64]] = field(default_factory=dict)
    dominant: IntP = field(default_factory=lambda: np.zeros(0, dtype=np.intp))  # (V,) heaviest bone
    fans: IntP | None = None  # ``_fans``, built when first needed
    #: Per B-Bone with segments: each of its ``columns`` vertices' segment and blend.
    bbones: dict[int, tuple[IntP, F64]] = field(default_factory=dict)


def _character(meshes: Sequence[SkinnedMesh]) -> _Character | None:
    parts = [m for m in meshes if len(m.triangles)]
    if not parts:
        return None
    starts = np.cumsum([0] + [m.vertex_count for m in meshes]).astype(np.intp)
    points = np.concatenate([m.rest_armature for m in meshes])
    tris, owner = [], []
    cols: dict[int, list[tuple[IntP, F64]]] = {}
    segs: dict[int, list[tuple[IntP, F64]]] = {}
    dominant = np.full(len(points), -1, dtype=np.intp)
    for k, m in enumerate(meshes):
        if len(m.triangles):
            tris.append(m.triangles + starts[k])
            owner.append(np.full(len(m.triangles), k, dtype=np.intp))
        scale = m.blend_scale
        best = np.zeros(m.vertex_count)
        mapping = m.bbone_mapping
        for bone, idx, w in m.deform_columns:
            cols.setdefault(bone, []).append((idx + starts[k], w * scale[idx]))
            if bone in mapping:
                segs.setdefault(bone, []).append(mapping[bone])
            heavier = w > best[idx]
            best[idx[heavier]] = w[heavier]
            dominant[idx[heavier] + starts[k]] = bone
    triangles = np.concatenate(tris)
    size = max(largest_side(points) or 1.0, tolerances.MIN_MESH_SIZE)
    # Weld by position on a 2^20 grid of the character's box (seams split for UVs share positions).
    q = np.floor((points - points.min(axis=0)) / size * (1 << 20)).astype(np.int64)
    key = (q[:, 0] << 42) | (q[:, 1] << 21) | q[:, 2]
    _, weld = np.unique(key, return_inverse=True)
    corners = points[triangles]
    return _Character(points, triangles, weld.reshape(-1)[triangles], np.concatenate(owner), starts, size,
                      corners.min(axis=1), corners.max(axis=1),
                      {b: (np.concatenate([c[0] for c in v]), np.concatenate([c[1] for c in v]))
                       for b, v in cols.items()}, dominant,
                      bbones={b: (np.concatenate([c[0] for c in v]), np.concatenate([c[1] for c in v]))
                              for b, v in segs.items() if len(v) == len(cols[b])})


#: Triangles a welded vertex lists at most for the rest check (a pole's fan beyond it is cut).
FAN_CAP = 12


def _fans(char: _Character) -> IntP:
    """(welded vertices, FAN_CAP) the triangles around each welded vertex, -1 padded."""
    flat = char.welded.reshape(-1)
    order = np.argsort(flat, kind="stable")
    keys = flat[order]
    first = np.searchsorted(keys, keys)  # each entry's run start
    slot = np.arange(len(keys)) - first
    out = np.full((int(flat.max(initial=-1)) + 1, FAN_CAP), -1, dtype=np.intp)
    keep = slot < FAN_CAP
    out[keys[keep], slot[keep]] = order[keep] // 3
    return out


def _ring(char: _Character, tris: IntP) -> IntP:
    """(n, w) the triangles sharing a welded vertex with each of ``tris``, -1 padded."""
    if char.fans is None:
        char.fans = _fans(char)
    rows = np.sort(char.fans[char.welded[tris]].reshape(len(tris), -1), axis=1)
    rows[:, 1:][rows[:, 1:] == rows[:, :-1]] = -1  # each triangle once
    rows = -np.sort(-rows, axis=1)  # the triangles first, the padding last
    width = max(int((rows >= 0).sum(axis=1).max(initial=1)), 1)
    out: IntP = rows[:, :width]
    return out


def _met_at_rest(char: _Character, i: IntP, j: IntP) -> NDArray[np.bool_]:
    """Whether the posed pairs (i, j) were in contact at rest already: some triangle around ``i``
    (sharing a vertex with it) meets one around ``j`` at rest (a contact slides across a triangle
    or so as the mesh bends: a strap through the elbow still crosses it, on other triangles)."""
    out = triangles_intersect(char.points[char.triangles[i]], char.points[char.triangles[j]])
    todo = np.flatnonzero(~out)
    if not todo.size:
        return out
    needed, back = np.unique(np.concatenate([i[todo], j[todo]]), return_inverse=True)
    rings = _ring(char, needed)
    ra, rb = rings[back[:todo.size]], rings[back[todo.size:]]  # (m, R) each
    width = ra.shape[1]
    a = np.repeat(ra, width, axis=1).reshape(-1)
    b = np.tile(rb, (1, width)).reshape(-1)
    which = np.repeat(np.arange(todo.size), width * width)
    valid = (a >= 0) & (b >= 0)
    a, b, which = a[valid], b[valid], which[valid]
    near = ((char.lo[a] <= char.hi[b]) & (char.lo[b] <= char.hi[a])).all(axis=1)  # boxes meet at rest
    a, b, which = a[near], b[near], which[near]
    wa, wb = char.welded[a], char.welded[b]
    apart = ~(wa[:, :, None] == wb[:, None, :]).any(axis=(1, 2))
    a, b, which = a[apart], b[apart], which[apart]
    met = triangles_intersect(char.points[char.triangles[a]], char.points[char.triangles[b]])
    out[todo[np.unique(which[met])]] = True
    return out


@dataclass(frozen=True)
class Contact:
    """New intersections at one pose between two meshes (the same one: self-intersection)."""

    pose: SweepPose
    meshes: tuple[int, int]
    triangles: IntP  # (n,) triangles involved
    pairs: int
    reach: float  # the farthest pair from the joint (the turned bone's head), armature units
    radii: float  # the same in the limb's radius there (the nearest skin to the joint at rest)
    #: The fraction of the pairs where one triangle turns whole with the bone and the other does not
    #: move at all: 1 where one mesh follows the bone and the other stays behind, lower where both
    #: blend alike (a garment weighted like the body under it, whose creases fold together).
    apart: float


def _overlapping(lo: F64, hi: F64, box: tuple[F64, F64]) -> NDArray[np.bool_]:
    out: NDArray[np.bool_] = ((lo <= box[1]) & (hi >= box[0])).all(axis=1)
    return out


def _moved_box(c: F64, box: tuple[F64, F64]) -> tuple[F64, F64]:
    """The box around ``box``'s eight corners mapped by the affine ``c`` (4, 4)."""
    corners = np.array([[box[k][0], box[m][1], box[n][2]] for k in (0, 1) for m in (0, 1) for n in (0, 1)])
    moved = corners @ c[:3, :3].T + c[:3, 3]
    return moved.min(axis=0), moved.max(axis=0)


def _union(a: tuple[F64, F64], b: tuple[F64, F64] | None) -> tuple[F64, F64]:
    return a if b is None else (np.minimum(a[0], b[0]), np.maximum(a[1], b[1]))


def _pose_contacts(char: _Character, bones: Bones, poses: Sequence[SweepPose]) -> list[Contact]:
    """The new contacts of several poses of one bone.

    The triangles fall in three sides: carried whole by the turn (every vertex's weight on bones
    that share the turned bone's channel: they move by that one rigid motion), not moved (no
    weight on the turned subtree) and mixed.  Only mixed triangles are blended vertex by vertex;
    a whole triangle is tested only when its rest box reaches the unmoved and mixed side's box
    taken back through the turn, an unmoved one only when it reaches the moved side's box, so a
    pose costs a pass over the boxes, not a deformation of the mesh.
    """
    bone = poses[0].bone
    rotations = np.array([rotation(p.axis, np.radians(p.degrees)) for p in poses])
    channels = turned_channels(bones, bone, rotations)  # (P, J, 4, 4)
    moved = _moved_bones(char, bones, channels)
    if not moved:
        return []
    n = len(char.points)
    touched = np.zeros(n, dtype=bool)
    turn_share = np.zeros(n)
    # (a B-Bone with segments moves as the turn only when its handles do too: else its curve bends)
    same = [all(bool(np.array_equal(channels[:, k], channels[:, bone])) for k in _pose_bones(bones, j))
            for j in moved]
    for j, is_turn in zip(moved, same, strict=True):
        idx, w = char.columns[j]
        touched[idx] = True
        if is_turn:
            turn_share += np.bincount(idx, w, minlength=n)
    rigid = touched & (np.abs(turn_share - 1.0) <= 1e-9)
    side = np.where(rigid[char.triangles].all(axis=1), 1,
                    np.where(touched[char.triangles].any(axis=1), 2, 0)).astype(np.int8)
    whole, still, mixed = (np.flatnonzero(side == k) for k in (1, 0, 2))
    if not len(whole) + len(mixed) or not len(still) + len(mixed):
        return []  # nothing moves, or everything moves as one
    joint = bones.heads[bone]
    own = char.columns[bone][0] if bone in char.columns else np.flatnonzero(touched)
    radius = max(float(np.linalg.norm(char.points[own] - joint, axis=1).min()), tolerances.MIN_MESH_SIZE * char.size)
    # The mixed triangles' vertices, blended: each moved bone's column cut to them once.
    mixed_v = np.unique(char.triangles[mixed].reshape(-1))
    local = np.full(n, -1, dtype=np.intp)
    local[mixed_v] = np.arange(len(mixed_v))
    cut = {}
    cut_segments = {}
    for j in moved:
        idx, w = char.columns[j]
        inside = local[idx] >= 0
        cut[j] = (idx[inside], w[inside])
        if j in char.bbones:
            cut_segments[j] = (char.bbones[j][0][inside], char.bbones[j][1][inside])
    sub = _Character(char.points, char.triangles, char.welded, char.mesh_of, char.starts, char.size, char.lo,
                     char.hi, cut, bbones=cut_segments)
    lo_whole, hi_whole, lo_still, hi_still = char.lo[whole], char.hi[whole], char.lo[still], char.hi[still]
    box_whole = (lo_whole.min(axis=0), hi_whole.max(axis=0)) if len(whole) else None
    box_still = (lo_still.min(axis=0), hi_still.max(axis=0)) if len(still) else None
    out = []
    for p, pose in enumerate(poses):
        c = channels[p, bone]
        blended = char.points[mixed_v] + _displacement(sub, channels[p], moved, local, len(mixed_v), bones)
        mixed_corners = blended[local[char.triangles[mixed]]]
        box_mixed = ((mixed_corners.min(axis=(0, 1)), mixed_corners.max(axis=(0, 1))) if len(mixed) else None)
        reach_m = _union(_moved_box(c, box_whole), box_mixed) if box_whole is not None else box_mixed
        reach_s = _union(box_still, box_mixed) if box_still is not None else box_mixed
        assert reach_m is not None and reach_s is not None
        near_still = still[_overlapping(lo_still, hi_still, reach_m)]
        back = _moved_box(affine_inverse(c), reach_s)
        near_whole = whole[_overlapping(lo_whole, hi_whole, back)]
        whole_corners = char.points[char.triangles[near_whole]] @ c[:3, :3].T + c[:3, 3]
        tris = np.concatenate([near_still, near_whole, mixed])
        corners = np.concatenate([char.points[char.triangles[near_still]], whole_corners, mixed_corners])
        sides = np.concatenate([np.zeros(len(near_still), np.int8), np.ones(len(near_whole), np.int8),
                                np.full(len(mixed), 2, np.int8)])
        out += _contacts_at(char, tris, corners, sides, pose, joint, radius)
    return out


def _pose_bones(bones: Bones, j: int) -> list[int]:
    """The bones whose pose moves the vertices of bone ``j``: itself, and a B-Bone's handles."""
    rb = bones.bbones[j] if bones.bbones else None
    return [j] if rb is None else [k for k in (j, rb.prev_bone, rb.next_bone) if k >= 0]


def _moved_bones(char: _Character, bones: Bones, channels: F64) -> list[int]:
    """The weighted bones some pose of ``channels`` (P, J, 4, 4) moves: their channel, or a
    B-Bone's handle's, is not the identity."""
    still = np.all(channels == np.eye(4), axis=(0, 2, 3))  # (J,)
    return [j for j in sorted(char.columns) if not all(still[k] for k in _pose_bones(bones, j))]


def _displacement(char: _Character, channel: F64, moved: Sequence[int], local: IntP, count: int,
                  bones: Bones) -> F64:
    """(count, 3) Blender's blended displacement of the vertices ``local`` numbers, from the
    columns of the ``moved`` bones at the pose ``channel`` (J, 4, 4); a B-Bone with segments
    blends the matrices of the two joints each vertex lies between."""
    disp = np.zeros((count, 3))
    for j in moved:
        idx, w = char.columns[j]
        p = char.points[idx]
        rb = bones.bbones[j] if bones.bbones else None
        if rb is not None and j in char.bbones:
            joints = bb.bbone_deform_matrices(bones.rest[j], channel[j], rb.rest_segments,
                                              bb.rig_pose_segments(rb, j, channel, bones.rest))
            index, blend = char.bbones[j]
            a, b = joints[index], joints[index + 1]  # (n, 4, 4)
            # (n,3,3)x(n,3): each vertex by its two joints, blended as Blender does.
            delta = ((1.0 - blend)[:, None] * (np.einsum("nij,nj->ni", a[:, :3, :3], p) + a[:, :3, 3])
                     + blend[:, None] * (np.einsum("nij,nj->ni", b[:, :3, :3], p) + b[:, :3, 3])) - p
        else:
            c = channel[j]
            delta = p @ (c[:3, :3] - np.eye(3)).T + c[:3, 3]
        at = local[idx]
        for k in range(3):  # (a bincount per coordinate: np.add.at is several times slower)
            disp[:, k] += np.bincount(at, w * delta[:, k], minlength=count)
    return disp


def _contacts_at(char: _Character, tris: IntP, corners: F64, side: NDArray[np.int8], pose: SweepPose,
                 joint: F64, radius: float) -> list[Contact]:
    """New contacts among the triangles ``tris`` posed at ``corners`` (n, 3, 3), sides ``side``."""
    if len(tris) < 2:
        return []
    k, m = candidate_pairs(corners.min(axis=1), corners.max(axis=1), side)
    wi, wj = char.welded[tris[k]], char.welded[tris[m]]
    shared = (wi[:, :, None] == wj[:, None, :]).any(axis=(1, 2))
    k, m = k[~shared], m[~shared]
    hit = triangles_intersect(corners[k], corners[m])
    k, m = k[hit], m[hit]
    if not len(k):
        return []
    at_rest = _met_at_rest(char, tris[k], tris[m])
    k, m = k[~at_rest], m[~at_rest]
    if not len(k):
        return []
    i, j = tris[k], tris[m]
    side = np.concatenate([side[k], side[m]])
    si, sj = side[:len(k)], side[len(k):]
    # How far from the joint the contact reaches: each pair as near as its nearer triangle.
    ci = corners[k].mean(axis=1)
    cj = corners[m].mean(axis=1)
    reach = np.minimum(np.linalg.norm(ci - joint, axis=1), np.linalg.norm(cj - joint, axis=1))
    mi, mj = char.mesh_of[i], char.mesh_of[j]
    a, b = np.minimum(mi, mj), np.maximum(mi, mj)
    out = []
    for ma, mb in sorted(set(zip(a.tolist(), b.tolist(), strict=True))):
        sel = (a == ma) & (b == mb)
        involved = np.unique(np.concatenate([i[sel], j[sel]]))
        far = float(reach[sel].max())
        apart = float((((si == 1) & (sj == 0)) | ((si == 0) & (sj == 1)))[sel].mean())
        out.append(Contact(pose, (ma, mb), involved, int(sel.sum()), far, far / radius, apart))
    return out


def interpenetration(meshes: Sequence[SkinnedMesh], degrees: float,
                     visible: float = tolerances.CONTACT_REACH_RADII,
                     apart: float = tolerances.CONTACT_APART_SHARE) -> Judged:
    """New self- and mesh-intersections of ``meshes`` (one armature) at the contact poses: a mesh
    through itself is its part's finding (``parts``), two meshes through each other the rig's.

    A mesh through itself is a WARNING where the new contact reaches ``visible`` radii from the
    joint or farther at the rig's own limit; two meshes through each other where, at the rig's own
    limit, at least ``apart`` of the contact's pairs are a triangle the turn carries whole against
    one it does not move (one mesh follows the bone, the other stays behind).  INFO otherwise: a
    turn by the moderate angle about an axis the rig does not limit is a pose it may never take
    (measured on real characters built of parts: an arm swung 90 degrees into the leg).
    """
    result = Judged()
    triangles = sum(len(m.triangles) for m in meshes)
    result.metrics["contact_poses"] = 0
    result.metrics["contact_triangles"] = triangles
    if not meshes or not triangles:
        return result
    bones = meshes[0].bones
    poses = contact_poses(bones, sorted({b for m in meshes for b, _, _ in m.deform_columns}), degrees)
    moderate = [p for p in poses if p.source != "limit"]
    if len(moderate) * triangles > tolerances.CONTACT_MODERATE_BUDGET:
        # Moderate poses only ever give INFO: past the budget the rig's own limits alone are tested.
        poses = [p for p in poses if p.source == "limit"]
        result.metrics["contact_moderate_poses_skipped"] = len(moderate)
    char = _character(meshes) if poses else None
    if char is None:
        return result
    by_bone: dict[int, list[SweepPose]] = {}
    for p in poses:
        by_bone.setdefault(p.bone, []).append(p)
    contacts: list[Contact] = []
    for group in by_bone.values():
        contacts += _pose_contacts(char, bones, group)
    result.metrics["contact_poses"] = len(poses)
    result.metrics["max_contact_reach_radii"] = max((c.radii for c in contacts), default=0.0)
    worst: dict[tuple[int, int, bool], Contact] = {}
    for c in contacts:
        if c.meshes[0] == c.meshes[1]:
            warn = c.radii >= visible and c.pose.source == "limit"
        else:
            warn = c.apart >= apart and c.pose.source == "limit"
        key = (*c.meshes, warn)
        if key not in worst or c.radii > worst[key].radii:
            worst[key] = c
    names = bones.names
    pairs: list[Finding] = []
    for (ma, mb, warn), c in sorted(worst.items()):
        if not warn and (ma, mb, True) in worst:
            continue
        vertices = np.unique(char.triangles[c.triangles].reshape(-1))
        carriers = char.dominant[vertices]
        counts = np.bincount(carriers[carriers >= 0], minlength=len(names))
        carried = [names[b] for b in np.argsort(-counts, kind="stable") if counts[b]][:4]
        label = c.pose.label(names)
        where = "the rig's own limit" if c.pose.source == "limit" else f"the moderate {KIND[c.pose.axis]}"
        size_text = (f"reaching {c.reach:.3g} from the joint ({c.radii:.1f} times the limb's radius there, "
                     f"{c.reach / char.size:.1%} of the character's size)")
        details = {"pose": label, "bone": names[c.pose.bone], "axis": c.pose.axis, "degrees": c.pose.degrees,
                   "pose_source": c.pose.source, "triangle_pairs": c.pairs, "reach": c.reach, "reach_radii": c.radii,
                   "rigid_against_still": c.apart,
                   "carried_by": carried}
        if ma == mb:
            mine = vertices[(vertices >= char.starts[ma]) & (vertices < char.starts[ma + 1])] - char.starts[ma]
            result.part(ma).findings.append(Finding(
                "self-intersection", "WARNING" if warn else "INFO",
                f"at '{label}' ({where}) the mesh passes through itself where it does not at rest: "
                f"{c.pairs} triangle pairs, {size_text}, faces carried by {', '.join(carried)}",
                len(mine), tuple(mine.tolist()), (names[c.pose.bone], *[b for b in carried if b != names[c.pose.bone]]),
                details=details))
        else:
            objects = (meshes[ma].object, meshes[mb].object)
            pairs.append(Finding(
                "mesh-intersection", "WARNING" if warn else "INFO",
                f"at '{label}' ({where}) '{objects[0]}' and '{objects[1]}' pass through each other where they do "
                f"not at rest: {c.pairs} triangle pairs, {size_text}, faces carried by {', '.join(carried)}",
                c.pairs, (), (names[c.pose.bone], *[b for b in carried if b != names[c.pose.bone]]),
                details={**details, "meshes": list(objects)}))
    if pairs:
        result.findings.append(_one_finding(pairs))
    return result


def _one_finding(found: list[Finding]) -> Finding:
    """The rig's one mesh-intersection finding: the worst mesh pair's (WARNING first, then the farthest
    reach), the other pairs listed after it and in ``details.pairs``."""
    ranked = sorted(found, key=lambda f: (f.severity != "WARNING", -f.details["reach_radii"]))
    lead, rest = ranked[0], ranked[1:]
    if not rest:
        return lead
    listed = "; ".join(f"'{f.details['meshes'][0]}' and '{f.details['meshes'][1]}' at '{f.details['pose']}' "
                       f"({f.severity})" for f in rest[:4])
    more = f" and {len(rest) - 4} more" if len(rest) > 4 else ""
    bones = tuple(dict.fromkeys(b for f in ranked for b in f.bones))
    return Finding("mesh-intersection", lead.severity, f"{lead.message}. Other mesh pairs: {listed}{more}",
                   sum(f.count for f in ranked), (), bones,
                   details={**lead.details, "pairs": [{"meshes": f.details["meshes"], "pose": f.details["pose"],
                                                       "severity": f.severity} for f in ranked]})
