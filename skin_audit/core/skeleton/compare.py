# SPDX-License-Identifier: GPL-3.0-or-later
"""Compatible skeletons across files: the check an animation library needs before one set of
clips drives many characters.  numpy and stdlib only.

A skeleton's *signature* is its deform bones as an exporter writes them: names, each bone's
nearest deform ancestor, rest head, tail and roll axis (armature space, in units of the
skeleton's size so a scaled copy still matches).  Two skeletons are the same when every bone
matches by name, parent, position and roll within ``core.tolerances``; otherwise the
differences are named: missing, extra, renamed (a bone of one with no name match that sits
where a bone of the other sits, under the same parent), moved, re-rolled, re-parented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances

F64 = NDArray[np.float64]
#: How many differences a message names.
SHOWN = 5
#: Share of a skeleton's bones another must have in common with it (by name or as a rename)
#: to be related: a horse beside a human is simply another skeleton, its differences not listed.
RELATED_SHARE = 0.5


def signature(names: Sequence[str], parents: Sequence[int], heads: F64, tails: F64, x_axes: F64) -> dict[str, Any]:
    """A JSON-ready signature of a deform skeleton.

    Parameters
    ----------
    names : (J,) deform bone names
    parents : (J,) nearest deform ancestor index, -1 for a root
    heads, tails, x_axes : (J, 3) float64 rest head, tail and local X axis (armature space)
    """
    heads = np.asarray(heads, dtype=np.float64).reshape(-1, 3)
    tails = np.asarray(tails, dtype=np.float64).reshape(-1, 3)
    points = np.concatenate([heads, tails]) if len(heads) else np.zeros((1, 3))
    size = float(np.ptp(points, axis=0).max()) or 1.0
    origin = heads[[j for j, p in enumerate(parents) if p < 0][0]] if len(heads) else np.zeros(3)
    return {
        "size": size,
        "bones": [
            {"name": n, "parent": names[p] if p >= 0 else None,
             "head": [round(float(v), 6) for v in (heads[j] - origin) / size],
             "tail": [round(float(v), 6) for v in (tails[j] - origin) / size],
             "x_axis": [round(float(v), 6) for v in np.asarray(x_axes[j], dtype=np.float64)]}
            for j, (n, p) in enumerate(zip(names, parents, strict=True))],
    }


@dataclass(frozen=True)
class Differences:
    missing: tuple[str, ...]  # in the reference, not here
    extra: tuple[str, ...]  # here, not in the reference
    renamed: tuple[tuple[str, str], ...]  # (reference name, this name)
    moved: tuple[str, ...]
    rerolled: tuple[str, ...]
    reparented: tuple[str, ...]

    def related(self, reference_bones: int) -> bool:
        """At least ``RELATED_SHARE`` of the reference's bones are here (by name or renamed)."""
        return reference_bones - len(self.missing) >= RELATED_SHARE * reference_bones

    @property
    def same(self) -> bool:
        return not (self.missing or self.extra or self.renamed or self.moved or self.rerolled or self.reparented)

    def to_dict(self) -> dict[str, Any]:
        return {"missing": list(self.missing), "extra": list(self.extra),
                "renamed": [{"from": a, "to": b} for a, b in self.renamed],
                "moved": list(self.moved), "rerolled": list(self.rerolled), "reparented": list(self.reparented)}

    def describe(self) -> str:
        def few(items: Sequence[str]) -> str:
            return ", ".join(items[:SHOWN]) + (" ..." if len(items) > SHOWN else "")
        parts = []
        if self.renamed:
            parts.append(f"{len(self.renamed)} renamed (" + few([f"'{a}' -> '{b}'" for a, b in self.renamed]) + ")")
        for label, items in (("missing", self.missing), ("extra", self.extra), ("moved", self.moved),
                             ("re-rolled", self.rerolled), ("re-parented", self.reparented)):
            if items:
                parts.append(f"{len(items)} {label} (" + few([f"'{n}'" for n in items]) + ")")
        return "; ".join(parts) if parts else "the same skeleton"


def _bones(sig: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["name"]: b for b in sig["bones"]}


def _close(a: Sequence[float], b: Sequence[float], tol: float) -> bool:
    return float(np.abs(np.subtract(a, b)).max(initial=0.0)) <= tol


def compare(reference: Mapping[str, Any], other: Mapping[str, Any]) -> Differences:
    """What differs from ``reference`` in ``other`` (both from :func:`signature`)."""
    ref, oth = _bones(reference), _bones(other)
    tol = tolerances.SKELETON_MOVED_RELATIVE
    roll_cos = float(np.cos(np.radians(tolerances.SKELETON_ROLL_DEGREES)))
    only_ref = [n for n in ref if n not in oth]
    only_oth = [n for n in oth if n not in ref]
    renamed: list[tuple[str, str]] = []
    names_map = {n: n for n in ref if n in oth}
    for n in only_ref:
        b = ref[n]
        for m in only_oth:
            c = oth[m]
            if any(m == r for _, r in renamed):
                continue
            if _close(b["head"], c["head"], tol) and _close(b["tail"], c["tail"], tol):
                renamed.append((n, m))
                names_map[n] = m
                break
    renamed_from = {a for a, _ in renamed}
    renamed_to = {b for _, b in renamed}
    moved, rerolled, reparented = [], [], []
    for n, m in names_map.items():
        b, c = ref[n], oth[m]
        if not (_close(b["head"], c["head"], tol) and _close(b["tail"], c["tail"], tol)):
            moved.append(m)
        elif float(np.dot(b["x_axis"], c["x_axis"])) < roll_cos:
            rerolled.append(m)
        parent = b["parent"]
        if (names_map.get(parent, parent) if parent is not None else None) != c["parent"]:
            reparented.append(m)
    return Differences(tuple(n for n in only_ref if n not in renamed_from),
                       tuple(n for n in only_oth if n not in renamed_to),
                       tuple(renamed), tuple(moved), tuple(rerolled), tuple(reparented))


def group_skeletons(entries: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Group (file, armature, signature) entries that share a skeleton.

    Returns one dict per group, in the order first seen: its members and, for every group
    after the first, what differs from the first group's skeleton.
    """
    groups: list[dict[str, Any]] = []
    for path, armature, sig in entries:
        if not sig.get("bones"):
            continue
        for g in groups:
            if compare(g["_signature"], sig).same:
                g["members"].append({"path": path, "armature": armature})
                break
        else:
            groups.append({"_signature": sig, "bones": len(sig["bones"]),
                           "members": [{"path": path, "armature": armature}]})
    out = []
    for k, g in enumerate(groups):
        entry: dict[str, Any] = {"skeleton": k + 1, "bones": g["bones"], "members": g["members"]}
        if k:
            diff = compare(groups[0]["_signature"], g["_signature"])
            entry["related_to_skeleton_1"] = diff.related(groups[0]["bones"])
            if entry["related_to_skeleton_1"]:
                entry["differs_from_skeleton_1"] = diff.to_dict()
                entry["summary"] = diff.describe()
        out.append(entry)
    return out
