# SPDX-License-Identifier: GPL-3.0-or-later
"""Skeleton conformance: a humanoid mapping, the rest-pose convention, joint budgets and
skeletons compared across files.  numpy only.

``judge_skeleton`` is called once per armature by the rig audit; ``cross_file_findings``
once per run, over every file's rigs, by the report's assembly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..engines.targets import get_target
from ..findings import Finding
from .budgets import budget_for
from .compare import compare, group_skeletons, signature
from .humanoid import REQUIRED, map_humanoid
from .rest_pose import CONVENTIONS, measure_rest_pose

F64 = NDArray[np.float64]
_POSE_NAMES = {"t": "T-pose", "a": "A-pose"}


@dataclass(frozen=True)
class SkeletonJudgement:
    findings: tuple[Finding, ...]
    #: JSON-ready: the humanoid map, the rest pose, the deform skeleton's signature.
    data: dict[str, Any]


def judge_skeleton(armature: str, names: Sequence[str], parents: Sequence[int], heads: F64, tails: F64,
                   x_axes: F64, rest_pose: str | None, target: str) -> SkeletonJudgement:
    """The humanoid map, rest pose and signature of one armature's deform skeleton.

    Parameters
    ----------
    names : (J,) deform bone names
    parents : (J,) each one's nearest deform ancestor (index into ``names``), -1 for a root
    heads, tails, x_axes : (J, 3) float64 rest head, tail and local X axis (armature space)
    rest_pose : the convention the pipeline wants ("t", "a") or None
    """
    names = tuple(names)
    findings: list[Finding] = []
    mapping = map_humanoid(names, parents, heads, tails)
    data: dict[str, Any] = {"humanoid": mapping.to_dict(),
                            "signature": signature(names, parents, heads, tails, x_axes)}
    if not mapping.humanoid:
        return SkeletonJudgement((), data)
    found = sum(r in mapping.bones for r in REQUIRED)
    if mapping.missing:
        # A target that maps a humanoid (Unity's Humanoid avatar), or a pipeline that states a rest
        # pose, needs every required bone; elsewhere nothing drawn changes.
        retargets = get_target(target).maps_humanoid or rest_pose is not None
        drawn = "" if retargets else (f"; target '{target}' draws the rig the same (it maps no humanoid: "
                                      "a WARNING for --target unity or a stated --rest-pose)")
        findings.append(Finding(
            "humanoid-bone-missing", "WARNING" if retargets else "INFO",
            f"'{armature}' is a humanoid ({found} of the {len(REQUIRED)} required humanoid bones found) but has no "
            f"{', '.join(mapping.missing)}: VRM, Unity's Humanoid and retargeting need every one, and animation "
            f"made for a humanoid has nothing to drive there{drawn}", len(mapping.missing),
            details={"missing": list(mapping.missing), "target": target}))
    for bone, claimants in mapping.ambiguous.items():
        findings.append(Finding(
            "humanoid-bone-ambiguous", "INFO",
            f"{len(claimants)} bones of '{armature}' could be the humanoid {bone}: "
            f"{', '.join(repr(c) for c in claimants)}; a humanoid mapping must choose one",
            len(claimants), bones=claimants, details={"humanoid_bone": bone}))
    pose = measure_rest_pose(mapping, names, heads)
    if pose is not None:
        data["rest_pose"] = pose.to_dict()
        arms = pose.arms()
        legs = {k: v["from_vertical"] for k, v in pose.limbs.items() if "from_vertical" in v}
        described = ", ".join(f"{k} {v:.1f} deg below horizontal" for k, v in arms.items())
        if legs:
            described += "; " + ", ".join(f"{k} {v:.1f} deg out from vertical" for k, v in legs.items())
        kind = _POSE_NAMES.get(pose.convention or "", "neither a T-pose nor an A-pose")
        if rest_pose is not None and pose.convention != rest_pose and arms:
            want, tol = CONVENTIONS[rest_pose]
            off = pose.off_by(rest_pose)
            findings.append(Finding(
                "rest-pose-mismatch", "WARNING",
                f"the pipeline wants a {_POSE_NAMES[rest_pose]} (arms {want:.0f} deg below horizontal, within "
                f"{tol:.0f}), but '{armature}' rests in {kind}: {described}. Clips made for one rest pose "
                "play with the arms off by the difference on the other",
                details={"wanted": rest_pose, "off_degrees": off, "limbs": pose.limbs}))
        else:
            findings.append(Finding(
                "rest-pose", "INFO", f"'{armature}' rests in {kind}: {described}",
                details={"convention": pose.convention, "limbs": pose.limbs}))
    return SkeletonJudgement(tuple(findings), data)


def joint_budget_finding(mesh: str, weighting_bones: Sequence[str], target: str) -> Finding | None:
    """The target's joint budget exceeded by the bones that weight ``mesh``, or None."""
    budget = budget_for(target)
    if budget is None or len(weighting_bones) <= budget.limit:
        return None
    return Finding(
        "joint-budget-exceeded", "WARNING",
        f"{len(weighting_bones)} bones weight '{mesh}', over {budget.target}'s {budget.limit}: {budget.consequence}",
        len(weighting_bones), bones=tuple(weighting_bones),
        details={"target": budget.target, "limit": budget.limit, "joints": len(weighting_bones),
                 "source": budget.source})


def skeleton_groups(files: Sequence[Any]) -> list[dict[str, Any]]:
    """Every rig of ``files`` (``FileAudit``s) grouped by skeleton."""
    entries = [(fa.path, r.armature, r.skeleton["signature"]) for fa in files for r in fa.rigs
               if getattr(r, "skeleton", None) and r.skeleton.get("signature")]
    return group_skeletons(entries)


def cross_file_findings(files: Sequence[Any]) -> tuple[Any, ...]:
    """``files`` with a ``skeleton-differs`` finding on every rig whose skeleton is related to,
    but not the same as, the first skeleton of the run (a renamed, missing, moved or re-rolled
    bone: one set of clips will not drive both)."""
    entries = [(k, i, r) for k, fa in enumerate(files) for i, r in enumerate(fa.rigs)
               if getattr(r, "skeleton", None) and r.skeleton.get("signature", {}).get("bones")]
    if len(entries) < 2:
        return tuple(files)
    k0, _, first = entries[0]
    ref = first.skeleton["signature"]
    out = list(files)
    for k, i, rig in entries[1:]:
        diff = compare(ref, rig.skeleton["signature"])
        if diff.same:
            continue
        if not diff.related(len(ref["bones"])):
            continue
        named = tuple(dict.fromkeys([n for pair in diff.renamed for n in pair] + list(diff.missing)
                                    + list(diff.extra) + list(diff.moved) + list(diff.rerolled)
                                    + list(diff.reparented)))
        finding = Finding(
            "skeleton-differs", "INFO",
            f"the skeleton of '{rig.armature}' differs from '{first.armature}' in {files[k0].path}: "
            f"{diff.describe()}; one set of clips will not drive both", len(named), bones=named,
            details={"reference_path": files[k0].path, "reference_armature": first.armature, **diff.to_dict()})
        fa = out[k]
        rigs = list(fa.rigs)
        rigs[i] = replace(rigs[i], findings=tuple(rigs[i].findings) + (finding,))
        out[k] = replace(fa, rigs=tuple(rigs))
    return tuple(out)
