# SPDX-License-Identifier: GPL-3.0-or-later
"""Joints where the rotation happens: each deform joint against the weights around it, inside the
skin, and the roll of each chain's bones consistent along it.  numpy only.

A joint here is a deform bone that continues from its deform parent's tail (its head within
``JOINT_CONTINUES`` of the parent's length from it): an elbow, a knee, a spine or finger joint.

- ``joint-off-transition``: the vertices weighted to both bones are projected on the two bones
  (the nearer segment; arc length from the joint, negative on the parent); the weight transition
  is the median of those positions weighted by ``s (1 - s)``, ``s`` the child's share of the
  two weights (its peak is where the two bones weigh the same).  A transition far from the joint
  bends the skin around the wrong point: an elbow placed mid-forearm bends the forearm.
- ``joint-outside-mesh``: the generalised winding number (Jacobson et al. 2013) of the triangles
  the two bones carry, at the joint: about 1 inside the limb, 0 outside.
- ``chain-roll-inconsistent``: a child's X axis against its parent's carried over by the shortest
  turn from the parent's Y (along the bone) to its own: the roll between them.  Blender bends a
  limb about one local axis; a bone rolled against its neighbours bends its IK the other way, and
  animation mirrored or retargeted by local rotations turns it inside out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding
from .judged import Judged
from .skinned_mesh import Bones, SkinnedMesh

F64 = NDArray[np.float64]
IntP = NDArray[np.intp]

JOINT_CODES = frozenset({"joint-off-transition", "joint-outside-mesh", "chain-roll-inconsistent"})
#: Blended vertices a joint's transition is placed from at most (an even stride over them).
MEDIAN_SAMPLE = 4096
#: A child continues from its parent when its head is within this fraction of the parent's length
#: of the parent's tail.
JOINT_CONTINUES = 0.05


@dataclass(frozen=True)
class Joint:
    parent: int
    child: int


def joints(bones: Bones, deform_parent: IntP) -> list[Joint]:
    """Every deform bone continuing from its deform parent's tail."""
    out = []
    for c in np.flatnonzero(bones.use_deform).tolist():
        p = int(deform_parent[c])
        if p < 0:
            continue
        length = float(np.linalg.norm(bones.tails[p] - bones.heads[p]))
        if length > 0 and np.linalg.norm(bones.heads[c] - bones.tails[p]) <= JOINT_CONTINUES * length:
            out.append(Joint(p, c))
    return out


def _weighted_median(values: F64, weights: F64) -> float:
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, cum[-1] / 2.0)])


def _along(points: F64, head: F64, tail: F64) -> tuple[F64, F64]:
    """(t clamped to [0, 1], distance) of ``points`` on the segment head-tail."""
    axis = tail - head
    t = np.clip((points - head) @ axis / float(axis @ axis), 0.0, 1.0)
    return t, np.linalg.norm(points - (head + t[:, None] * axis), axis=1)


def _inside_its_ring(offset: F64, distance: F64, along: F64, length: float) -> bool:
    """Whether the joint lies plainly inside the ring of skin around it: the carried vertices within
    a tenth of a bone of its plane (across the child's direction ``along``) ring it, and it sits
    within half their mean distance of their centre.  Plainly inside: the winding number is not
    needed (it costs a pass over the limb's triangles)."""
    slab = np.abs(offset @ along) <= 0.1 * length
    if slab.sum() < 3:
        return False
    ring = offset[slab]
    centre = ring.mean(axis=0)
    radius = float(np.linalg.norm(ring - centre, axis=1).mean())
    return bool(np.linalg.norm(centre) <= 0.5 * radius)


def winding_number(point: F64, corners: F64) -> float:
    """Generalised winding number of the triangles ``corners`` (n, 3, 3) at ``point`` (3,):
    the sum of their signed solid angles over 4 pi (Van Oosterom and Strackee's formula)."""
    rel = corners - point  # (n, 3, 3)
    length = np.sqrt(np.einsum("nkc,nkc->nk", rel, rel))  # (n, 3)
    a, b, c = rel[:, 0], rel[:, 1], rel[:, 2]
    la, lb, lc = length[:, 0], length[:, 1], length[:, 2]
    # a . (b x c), written out (np.cross is several times slower on long arrays)
    num = (a[:, 0] * (b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1]) + a[:, 1] * (b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2])
           + a[:, 2] * (b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]))
    den = la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la \
        + np.einsum("ij,ij->i", c, a) * lb
    return float(2.0 * np.arctan2(num, den).sum() / (4.0 * np.pi))


def _columns(meshes: Sequence[SkinnedMesh]) -> tuple[F64, dict[int, tuple[IntP, F64]], IntP]:
    """Armature-space rest points of every mesh, each bone's (vertices, weights) over them and
    every mesh's triangles into them."""
    starts = np.cumsum([0] + [m.vertex_count for m in meshes])
    points = np.concatenate([m.rest_armature for m in meshes]) if meshes else np.zeros((0, 3))
    cols: dict[int, list[tuple[IntP, F64]]] = {}
    for k, m in enumerate(meshes):
        for bone, idx, w in m.deform_columns:
            cols.setdefault(bone, []).append((idx + starts[k], w))
    tris = [m.triangles + starts[k] for k, m in enumerate(meshes) if len(m.triangles)]
    return (points, {b: (np.concatenate([c[0] for c in v]), np.concatenate([c[1] for c in v]))
                     for b, v in cols.items()},
            np.concatenate(tris) if tris else np.zeros((0, 3), dtype=np.intp))


def joint_placement(meshes: Sequence[SkinnedMesh], deform_parent: IntP) -> Judged:
    """``joint-off-transition`` and ``joint-outside-mesh`` over a character's meshes."""
    out = Judged()
    if not meshes:
        return out
    bones = meshes[0].bones
    names = bones.names
    points, cols, tris = _columns(meshes)
    index: list[IntP] = []  # each vertex's triangles, vertex-major: built when a winding number is needed
    off: list[tuple[float, float, Joint, float, bool, float, float]] = []
    outside: list[tuple[float, Joint, float, float]] = []
    measured = 0
    for jt in joints(bones, deform_parent):
        if jt.parent not in cols or jt.child not in cols:
            continue
        hp, joint, tc = bones.heads[jt.parent], bones.heads[jt.child], bones.tails[jt.child]
        lp, lc = float(np.linalg.norm(joint - hp)), float(np.linalg.norm(tc - joint))
        if lp <= 0 or lc <= 0:
            continue
        # The two bones' weights on the vertices either weighs (columns are ascending per mesh).
        (ip, wp_), (ic, wc_) = cols[jt.parent], cols[jt.child]
        carried = np.union1d(ip, ic)
        wp = np.zeros(len(carried))
        wc = np.zeros(len(carried))
        wp[np.searchsorted(carried, ip)] = wp_  # (a column names each vertex once)
        wc[np.searchsorted(carried, ic)] = wc_
        offset = points[carried] - joint
        distance = np.sqrt(np.einsum("ij,ij->i", offset, offset))
        near = float(distance.min())
        both = np.flatnonzero((wp > 0) & (wc > 0))
        if both.size > MEDIAN_SAMPLE:  # an even stride: the median moves by rounding only
            both = both[::-(-both.size // MEDIAN_SAMPLE)]
        if both.size:
            s = wc[both] / (wp[both] + wc[both])
            g = s * (1.0 - s)
            if g.sum() > 0:
                q = points[carried[both]]
                tp, dp = _along(q, hp, joint)
                tc_, dc = _along(q, joint, tc)
                u = np.where(dp <= dc, (tp - 1.0) * lp, tc_ * lc)
                centre = _weighted_median(u, g)
                measured += 1
                length = lc if centre > 0 else lp
                rel = centre / length
                # A hand-over one can point at: the middle half of the blend (0.25 < s < 0.75) within
                # a quarter of the bone, wholly on one side of the joint and clear of it (a tenth of
                # the bone), and not piled at a bone's end (vertices beyond the bones).
                # A hard step (no blended vertex in the middle half) is placed by its light weights
                # alone, which may be strays: never sharp (its spread is then that of all of them).
                middle = u[(s > 0.25) & (s < 0.75)]
                stepped = not middle.size
                middle = u if stepped else middle
                spread = float(np.subtract(*np.percentile(middle, [75, 25]))) / length
                clear = not stepped and (bool((middle > 0).all()) or bool((middle < 0).all())) and \
                    float(np.abs(middle).min()) / length >= tolerances.JOINT_OFF_INFO
                sharp = clear and spread <= tolerances.JOINT_BLEND_SPREAD and abs(rel) < tolerances.JOINT_AT_BONE_END
                off.append((abs(rel), centre, jt, rel, sharp, spread, near))
        # Inside the skin the two bones carry?
        if len(tris) and near >= tolerances.JOINT_OUTSIDE_LENGTHS * min(lp, lc) and \
                not _inside_its_ring(offset, distance, (tc - joint) / lc, min(lp, lc)):  # (else never reported)
            if not index:
                flat = tris.reshape(-1)
                by_vertex = np.argsort(flat, kind="stable")
                index += [by_vertex, np.searchsorted(flat[by_vertex], np.arange(len(points) + 1))]
            by_vertex, starts = index
            lo, hi = starts[carried], starts[carried + 1]
            count = hi - lo
            at = np.repeat(lo - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
            region = tris[np.unique(by_vertex[at] // 3)]
            if len(region):
                w = winding_number(joint, points[region])
                outside.append((w, jt, near, near / min(lp, lc)))
    out.metrics["joints_measured"] = measured
    out.metrics["max_joint_off_transition"] = max((o[0] for o in off), default=0.0)
    # (o[6], the limb's radius at the joint: a hand-over within a limb's thickness or so of it bends
    # the skin much as the joint does)
    warn = [o for o in off if o[0] >= tolerances.JOINT_OFF_WARNING and o[4]
            and abs(o[1]) >= tolerances.JOINT_OFF_RADII * o[6]]
    info = [o for o in off if o[0] >= tolerances.JOINT_OFF_INFO and o not in warn]
    # One finding per code on the rig: the WARNING one when there is one (it counts the lighter ones).
    for severity, bad in (("WARNING", warn), ("INFO", info)):
        bad = sorted(bad, key=lambda o: -o[0])
        if not bad or (severity == "INFO" and warn):
            continue
        lighter = f" ({len(info)} more within the INFO bounds)" if severity == "WARNING" and info else ""
        _, centre, jt, rel, sharp, spread, near = bad[0]
        where = (f"{rel:.2f} of '{names[jt.child]}' along it" if centre > 0
                 else f"{-rel:.2f} of '{names[jt.parent]}' back along it")
        listed = ", ".join(f"'{names[o[2].child]}' ({o[0]:.2f})" for o in bad[:6])
        out.findings.append(Finding(
            "joint-off-transition", severity,  # type: ignore[arg-type]
            f"{len(bad)} joints bend away from where their weights change from parent to child; worst "
            f"'{names[jt.child]}': the weights hand over {abs(centre):.3g} from its head ({where}), so the skin "
            f"bends around a point the bones do not turn about (move the joint or the weights): {listed}{lighter}",
            len(bad), bones=tuple(names[o[2].child] for o in bad),
            details={"worst_bone": names[jt.child], "parent": names[jt.parent], "distance": abs(centre),
                     "bone_lengths": abs(rel), "into": "child" if centre > 0 else "parent",
                     "blend_spread": spread, "sharp": sharp, "limb_radius": near,
                     "radii": abs(centre) / max(near, 1e-12)}))
    far = [o for o in outside  # (|w|: a mesh whose faces point inwards winds -1 inside)
           if abs(o[0]) < tolerances.JOINT_INSIDE_WINDING and o[3] >= tolerances.JOINT_OUTSIDE_LENGTHS]
    out.metrics["min_joint_winding_number"] = min((o[0] for o in outside), default=1.0)  # of those measured
    if far:
        far.sort(key=lambda o: -o[3])
        w, jt, near, rel = far[0]
        listed = ", ".join(f"'{names[o[1].child]}' ({o[2]:.3g})" for o in far[:6])
        out.findings.append(Finding(
            "joint-outside-mesh", "WARNING",
            f"{len(far)} joints lie outside the skin their bones carry; worst '{names[jt.child]}' (head of the "
            f"bone under '{names[jt.parent]}'), {near:.3g} from the nearest vertex ({rel:.2f} bone lengths, "
            f"winding number {w:.2f}): the limb bends about a point outside it: {listed}",
            len(far), bones=tuple(names[o[1].child] for o in far),
            details={"worst_bone": names[jt.child], "distance": near, "bone_lengths": rel, "winding_number": w}))
    return out


def relative_roll(bones: Bones, parent: int, child: int) -> float:
    """The roll (degrees, about the child's Y) between the child's X axis and its parent's carried
    over by the shortest turn from the parent's Y to the child's."""
    rp, rc = bones.rest[parent, :3, :3], bones.rest[child, :3, :3]
    yp, yc = rp[:, 1] / np.linalg.norm(rp[:, 1]), rc[:, 1] / np.linalg.norm(rc[:, 1])
    xp = rp[:, 0] / np.linalg.norm(rp[:, 0])
    carried = transport(xp, yp, yc)
    xc = rc[:, 0] / np.linalg.norm(rc[:, 0])
    return float(np.degrees(np.arctan2(np.cross(carried, xc) @ yc, carried @ xc)))


def transport(v: F64, a: F64, b: F64) -> F64:
    """``v`` turned by the shortest rotation taking unit ``a`` to unit ``b`` (Rodrigues)."""
    axis = np.cross(a, b)
    sin, cos = float(np.linalg.norm(axis)), float(a @ b)
    if sin < 1e-12:
        return v if cos > 0 else -v
    k = axis / sin
    out: F64 = v * cos + np.cross(k, v) * sin + k * (k @ v) * (1.0 - cos)
    return out


def chain_rolls(bones: Bones, deform_parent: IntP) -> Judged:
    """``chain-roll-inconsistent``: each joint's roll against its parent, and the rig's bend axis."""
    out = Judged()
    names = bones.names
    rows = []
    axes: dict[str, int] = {}
    for jt in joints(bones, deform_parent):
        roll = relative_roll(bones, jt.parent, jt.child)
        rows.append((abs(roll), roll, jt))
        yp = bones.rest[jt.parent, :3, 1]
        yc = bones.rest[jt.child, :3, 1]
        bend = np.cross(yp, yc)
        norm = float(np.linalg.norm(bend)) / (np.linalg.norm(yp) * np.linalg.norm(yc))
        if norm > np.sin(np.radians(tolerances.ROLL_BEND_DEGREES)):
            frame = bones.rest[jt.child, :3, :3]
            cosines = np.abs(frame.T @ bend) / (np.linalg.norm(frame, axis=0) * np.linalg.norm(bend))
            axis = "xyz"[int(np.argmax(cosines))]
            axes[axis] = axes.get(axis, 0) + 1
    main = max(axes, key=lambda a: (axes[a], a == "x")) if axes else ""
    out.metrics["max_chain_roll_degrees"] = max((r[0] for r in rows), default=0.0)
    rolled = [r for r in rows if r[0] >= tolerances.ROLL_INCONSISTENT_DEGREES]
    # WARNING where the rig itself reads the bone's local axes: its rotation limits (Limit Rotation,
    # IK limits) then hold the wrong axis.  Elsewhere the roll changes nothing the rig shows until
    # animation is retargeted or mirrored: INFO.
    limited = {j for j, lim in enumerate(bones.limits) if any(a is not None for a in lim)} if bones.limits else set()
    swapped = [r for r in rolled if r[0] <= 180.0 - tolerances.ROLL_INCONSISTENT_DEGREES and r[2].child in limited]
    reversed_ = [r for r in rolled if r not in swapped]
    for severity, bad in (("WARNING", swapped), ("INFO", reversed_)):
        if not bad or (severity == "INFO" and swapped):
            continue  # (one finding per code on the rig; the WARNING one counts the others)
        others = f" ({len(reversed_)} more rolled where nothing reads their axes)" if severity == "WARNING" and \
            reversed_ else ""
        bad.sort(key=lambda r: -r[0])
        _, roll, jt = bad[0]
        listed = ", ".join(f"'{names[r[2].child]}' ({r[1]:+.0f} deg)" for r in bad[:6])
        rule = f"; the rig's bent joints bend about local {main.upper()}" if main else ""
        effect = ("its local X and Z trade places with its chain's, so its own rotation limits hold the axis it "
                  "does not bend about, IK bends it the other way and mirrored or retargeted animation (local "
                  "rotations) turns it wrong" if severity == "WARNING" else
                  "its local axes are not its chain's (X and Z traded or reversed): the rig's own poses are "
                  "unaffected, but animation retargeted or mirrored by local rotations turns it wrong")
        out.findings.append(Finding(
            "chain-roll-inconsistent", severity,  # type: ignore[arg-type]
            f"{len(bad)} bones are rolled against the bone they continue from; worst '{names[jt.child]}' by "
            f"{roll:+.0f} deg about its own Y against '{names[jt.parent]}'{rule}: {effect}: {listed}{others}",
            len(bad), bones=tuple(names[r[2].child] for r in bad),
            details={"worst_bone": names[jt.child], "parent": names[jt.parent], "roll_degrees": roll,
                     "main_bend_axis": main.upper(),
                     "rolls": {names[r[2].child]: r[1] for r in bad}}))
    return out
