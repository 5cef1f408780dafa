# SPDX-License-Identifier: GPL-3.0-or-later
"""Judge a character: one armature over every mesh it deforms.  numpy only.

What belongs to the armature is computed once and reported once: its deform
hierarchy (roots), scale, B-Bones, deform bones that move no vertex of any of
its meshes, side bones without a partner, mirrored rest frames, and meshes
tied to it that no Armature modifier deforms.  Weight symmetry is judged mesh
by mesh: each mesh that mirrors onto itself within itself, the meshes left
together (a body split into ``Arm.L`` and ``Arm.R`` is a pair).  Stray weights
are judged over all its meshes together.  Their vertex findings go to the mesh
whose vertices they name.

Meshes parented to a bone are rigid parts the bone carries: the bone moves them, so it is
never "a deform bone that moves nothing".  A mesh sharing its data with a skinned one,
unparented and without a modifier, is a static instance of it, not a mesh missing its modifier.

Structure is judged on the hierarchy an exporter writes: deform bones only,
each under its nearest deform ancestor.  Helper bones (a rigging system's
controls and mechanism bones: Rigify's ORG-, MCH-, widgets) never reach an
engine and are not judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..codes import codes_of
from ..engines.targets import get_target
from ..findings import Finding, Severity
from ..maths.affine import largest_side
from ..skeleton import joint_budget_finding, judge_skeleton
from .armature_modifier import to_armature
from .interpenetration import interpenetration
from .joints import chain_rolls, joint_placement
from .judged import Judged
from .options import AuditOptions
from .skinned_mesh import Bones, SkinnedMesh
from .stray_weights import find_stray_weights, stray_displacement
from .stress_poses import standard_poses
from .symmetry import (
    BonePairs,
    WeightMirror,
    mirror_frames,
    mirror_groups,
    mirror_offset_angles,
    mirror_weights,
    pair_bones,
    reflect_points,
    rotation_angle,
    rotation_angles,
    shared_convention,
    side_key,
)

F64 = NDArray[np.float64]

#: Codes only the rig audit reports (the others it shares with the single-mesh rules).
RIG_CODES = codes_of("rig")
#: How many names a message lists.
NAMES_SHOWN = 5


@dataclass(frozen=True)
class RigAudit:
    """The audit of one armature over every mesh it deforms."""

    armature: str
    meshes: tuple[str, ...]
    metrics: Mapping[str, float | int | None]
    findings: tuple[Finding, ...]
    #: The deform skeleton: humanoid map, rest pose, signature (core.skeleton); empty when not judged.
    skeleton: Mapping[str, Any] = field(default_factory=dict)
    #: The animation audit (``audit --animation``): per action and mesh, worst frames and timelines.
    animation: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "armature": self.armature,
            "meshes": list(self.meshes),
            "metrics": dict(self.metrics),
            "findings": [f.to_dict() for f in self.findings],
        }
        if self.skeleton:
            out["skeleton"] = dict(self.skeleton)
        if self.animation:
            out["animation"] = dict(self.animation)
        return out


@dataclass(frozen=True)
class MissingModifier:
    """A mesh tied to the armature (parented to it, or groups named after its bones) that no
    enabled Armature modifier deforms."""

    mesh: str
    #: What ties it to the armature and what is missing, for the message.
    reason: str
    #: Deform bones of the armature that its groups with weights name.
    weighted_bones: tuple[str, ...] = ()
    #: A skinned object whose mesh data this unparented one shares: it is a static instance of it.
    instance_of: str = ""


@dataclass(frozen=True)
class RigidPart:
    """A mesh parented to a bone of the armature (parent type Bone) and not skinned: the bone
    carries it rigidly."""

    mesh: str
    bone: str
    vertices: int = 0


def _names(names: Sequence[str]) -> str:
    return ", ".join(names[:NAMES_SHOWN]) + (" ..." if len(names) > NAMES_SHOWN else "")


def deform_parents(parents: Sequence[int], use_deform: NDArray[np.bool_]) -> NDArray[np.intp]:
    """(J,) each bone's nearest deform ancestor (-1 for none): the parent an exporter writing
    deform bones only gives it.  Linear: each bone's answer is found once and reused.

    Parameters
    ----------
    parents : (J,) parent index, -1 for a root
    use_deform : (J,) bool
    """
    n = len(parents)
    out = np.full(n, -2, dtype=np.intp)  # -2: not yet known
    for j in range(n):
        chain = []
        p = parents[j]
        while p >= 0 and not use_deform[p] and out[p] == -2:
            chain.append(p)
            p = parents[p]
        # p is a deform bone, a root's -1, or a helper bone whose answer is known.
        answer = p if p < 0 or use_deform[p] else int(out[p])
        for c in chain:
            out[c] = answer
        out[j] = answer
    return out


def structure_findings(armature: str, bones: Bones, target: str = "threejs") -> list[Finding]:
    """Roots of the deform hierarchy, and no deform bone at all.

    Several deform roots are a WARNING for a target whose import wants one skeleton root
    (its ``wants_one_root``); glTF asks only for a common ancestor node of a skin's joints, which
    Blender's exporter writes, so for the others they are INFO."""
    deform = np.flatnonzero(bones.use_deform)
    if deform.size == 0:
        return [Finding("no-deform-bones", "ERROR",
                        f"'{armature}' has no bone with Deform on: nothing can move the mesh")]
    dparent = deform_parents(bones.parents, bones.use_deform)
    roots = [int(j) for j in deform if dparent[j] < 0]
    if len(roots) <= 1:
        # Helper roots (controls, properties bones) reach only exporters that write every bone.
        tree_roots = [bones.names[j] for j, p in enumerate(bones.parents) if p < 0]
        if len(tree_roots) <= 1:
            return []
        return [Finding(
            "multiple-root-bones", "INFO",
            f"'{armature}' has {len(tree_roots)} root bones ({_names(tree_roots)}); its deform bones form one "
            "hierarchy, so an exporter writing deform bones only writes one root, one writing every bone "
            "writes them all", len(tree_roots), bones=tuple(tree_roots), details={"deform_roots": len(roots)})]
    names = [bones.names[j] for j in roots]
    helpers = sorted({bones.names[bones.parents[j]] for j in roots if bones.parents[j] >= 0})
    under = (f"; {sum(bones.parents[j] >= 0 for j in roots)} of them hang from helper bones "
             f"({_names(helpers)}), which such an exporter leaves out") if helpers else ""
    wants_one = get_target(target).wants_one_root
    consequence = (f"for target '{target}': {wants_one}" if wants_one else
                   f"target '{target}' draws it the same (glTF asks only for a common ancestor node of a skin's "
                   "joints, which Blender's exporter writes); Unreal's skeletal-mesh import wants one root")
    return [Finding(
        "multiple-root-bones", "WARNING" if wants_one else "INFO",
        f"the deform hierarchy of '{armature}' (deform bones only, each under its nearest deform "
        f"ancestor, as an exporter writing deform bones only writes it: Blender's glTF exporter with "
        f"'Deform Bones Only', FBX 'Only Deform Bones') has {len(roots)} roots ({_names(names)}){under}; "
        f"{consequence}", len(roots), bones=tuple(names),
        details={"deform_roots": len(roots), "helper_parents": helpers[:50], "target": target})]


def armature_findings(mesh: SkinnedMesh) -> list[Finding]:
    """Scale, B-Bones and matrices of the armature (read from any of its meshes)."""
    out: list[Finding] = []
    arm = mesh.armature_object
    scale = mesh.armature_scale
    if mesh.armature_mirrored:
        user_scale = mesh.armature_object_scale.round(4).tolist()
        out.append(Finding("negative-armature-scale", "ERROR",
                           f"'{arm}' is mirrored (scale {user_scale}, negative determinant): "
                           "mirrored skinning flips normals and breaks exports"))
    elif np.ptp(scale) > tolerances.NON_UNIFORM_SCALE_RELATIVE * np.abs(scale).max():
        out.append(Finding("non-uniform-armature-scale", "WARNING",
                           f"'{arm}' has non-uniform scale {scale.round(4).tolist()}: "
                           "apply it (Ctrl+A) before export"))
    b = mesh.bones
    bbones = [b.names[j] for j in np.flatnonzero((b.bbone_segments > 1) & b.use_deform)]
    if bbones:
        out.append(Finding("bbones-on-deform-bones", "INFO",
                           f"{len(bbones)} deform bones use B-Bone segments; exporters bake them to "
                           "plain bones", len(bbones), bones=tuple(bbones)))
    if not np.isfinite(mesh.read_pose.channel).all() or not np.isfinite(b.rest).all():
        out.append(Finding("non-finite-bone-matrices", "ERROR", "bone matrices contain NaN or infinity"))
    return out


def idle_bone_findings(armature: str, meshes: Sequence[SkinnedMesh],
                       rigid: Sequence[RigidPart] = ()) -> list[Finding]:
    """Deform bones that move no vertex of any mesh of the armature; a bone carrying a rigid
    part moves that part's vertices."""
    bones = meshes[0].bones
    weighted = {b for m in meshes for b, _, _ in m.deform_columns}
    carriers = {p.bone for p in rigid}
    idle = [n for j, n in enumerate(bones.names) if bones.use_deform[j] and j not in weighted and n not in carriers]
    if not idle:
        return []
    where = f"'{meshes[0].object}'" if len(meshes) == 1 else \
        f"any of its {len(meshes)} meshes ({_names([m.object for m in meshes])})"
    return [Finding("deform-bone-without-weights", "INFO",
                    f"{len(idle)} deform bones of '{armature}' move no vertex of {where}: {_names(idle)}",
                    len(idle), bones=tuple(idle))]


def rigid_part_findings(armature: str, rigid: Sequence[RigidPart], bones: Bones | None,
                        target: str) -> list[Finding]:
    """The meshes the armature's bones carry rigidly (parent type Bone), once for the rig.

    INFO: a rigid part is a modelling choice every exporter keeps as a child of its bone's node;
    WARNING for a target whose import leaves such a mesh out (its ``drops_bone_children``).
    """
    if not rigid:
        return []
    deform = set() if bones is None else {n for j, n in enumerate(bones.names) if bones.use_deform[j]}
    carriers = tuple(dict.fromkeys(p.bone for p in rigid))
    helpers = [b for b in carriers if bones is not None and b not in deform]
    shown = ", ".join(f"'{p.mesh}' on '{p.bone}'" for p in rigid[:NAMES_SHOWN]) + \
        (" ..." if len(rigid) > NAMES_SHOWN else "")
    text = (f"{len(rigid)} meshes are rigid parts carried by bones of '{armature}' (parented to a bone, not "
            f"skinned; each moves with its bone, which therefore moves vertices): {shown}")
    if helpers:
        text += (f"; {len(helpers)} of those bones have Deform off ({_names(helpers)}): an export of deform "
                 "bones only leaves them out, and their parts with them")
    details: dict[str, Any] = {"parts": {p.mesh: p.bone for p in rigid}, "target": target}
    severity: Severity = "INFO"
    drops = get_target(target).drops_bone_children
    if drops:
        severity = "WARNING"
        text += f". For target '{target}': {drops}"
    return [Finding("rigid-part", severity, text, len(rigid), bones=carriers, details=details)]


def missing_modifier_findings(armature: str, missing: Sequence[MissingModifier]) -> list[Finding]:
    """One finding per mesh tied to the armature that nothing deforms."""
    out = []
    for m in missing:
        if m.instance_of:
            out.append(Finding(
                "armature-modifier-missing", "INFO",
                f"'{m.mesh}' shares its mesh data with '{m.instance_of}', which '{armature}' deforms; unparented "
                "and without an Armature modifier it is a static instance of it: it shows the mesh at rest and "
                f"does not follow '{armature}'. Nothing to do unless it is meant to move with the rig",
                0, details={"object": m.mesh, "instance_of": m.instance_of}))
            continue
        # Weights on the armature's deform bones say the mesh was meant to bend: it never will.
        severity: Severity = "ERROR" if m.weighted_bones else "WARNING"
        out.append(Finding(
            "armature-modifier-missing", severity,
            f"'{m.mesh}' {m.reason}, but no enabled Armature modifier deforms it: it moves rigidly "
            f"with '{armature}' (or not at all). Add an Armature modifier with '{armature}' set, or parent "
            "it to a bone if it is meant to be rigid",
            len(m.weighted_bones), bones=m.weighted_bones, details={"object": m.mesh}))
    return out


@dataclass(frozen=True)
class _Character:
    """The meshes of one armature end to end, in armature space; a group per distinct name."""

    points: F64  # (V, 3)
    weights: NDArray[np.float32]  # (G, V)
    group_names: tuple[str, ...]
    edges: NDArray[np.intp]  # (E, 2)
    starts: NDArray[np.intp]  # (M + 1,) mesh m is starts[m]:starts[m + 1]
    size: float

    def mesh_of(self, v: int) -> int:
        return int(np.searchsorted(self.starts, v, side="right") - 1)


def _character(meshes: Sequence[SkinnedMesh]) -> _Character:
    if len(meshes) == 1:  # nothing to join: the mesh's own arrays
        m = meshes[0]
        points = to_armature(m)
        # Its size in armature space, as its points (the mesh's own size is in its object's space:
        # an object or armature scale would scale every relative threshold).
        side = largest_side(points)
        return _Character(points, m.weights, m.group_names, m.edges, np.array([0, m.vertex_count], dtype=np.intp),
                          max(1.0 if side is None else side, tolerances.MIN_MESH_SIZE))
    names = list(dict.fromkeys(n for m in meshes for n in m.group_names))
    row = {n: g for g, n in enumerate(names)}
    starts = np.cumsum([0] + [m.vertex_count for m in meshes]).astype(np.intp)
    weights = np.zeros((len(names), int(starts[-1])), dtype=np.float32)
    for k, m in enumerate(meshes):
        if m.group_names:
            weights[[row[n] for n in m.group_names], starts[k]:starts[k + 1]] = m.weights
    points = np.concatenate([to_armature(m) for m in meshes])
    edges = np.concatenate([m.edges + starts[k] for k, m in enumerate(meshes)]).astype(np.intp, copy=False)
    side = largest_side(points)
    size = max(1.0 if side is None else side, tolerances.MIN_MESH_SIZE)
    return _Character(points, weights, tuple(names), edges, starts, size)


def _symmetry(armature: str, meshes: Sequence[SkinnedMesh], char: _Character, options: AuditOptions,
              out: Judged) -> None:
    """Side bones and mirror frames on the deform bones; weights mirrored over the character."""
    findings = out.findings
    b = meshes[0].bones
    deform = np.flatnonzero(b.use_deform)
    names = tuple(b.names[j] for j in deform)
    rest = b.rest[deform]
    pairs = pair_bones(names, b.heads[deform])
    sides = {key[0] for key in (side_key(names[j]) for j in pairs.unpaired) if key is not None}
    # A one-sided asset (a right hand whose bones are all Right*) has no partner to miss.
    one_sided = not pairs.pairs and len(sides) == 1
    if pairs.unpaired and not one_sided:
        lone = [names[j] for j in pairs.unpaired]
        findings.append(Finding(
            "unpaired-side-bone", "WARNING",
            f"{len(lone)} side deform bones have no mirror partner by name: {_names(lone)}",
            len(lone), bones=tuple(lone)))
    frames = mirror_frames(rest, pairs)
    convention = shared_convention(frames, tolerances.MIRROR_ANGLE_DEGREES)
    if convention is not None:
        findings.append(Finding(
            "mirror-axis-convention", "INFO",
            f"the rig mirrors bone axes by its own rule: right bones are Blender's mirror image turned by "
            f"{rotation_angle(convention):.1f} deg (other tools' mirroring; Blender's Paste Flipped and X-Mirror "
            "expect its own); pairs are judged against that rule",
            details={"angle_degrees": rotation_angle(convention)}))
    reference = np.eye(3) if convention is None else convention
    angles = mirror_offset_angles(rest, frames, pairs.normal, reference)
    plain = rotation_angles(np.einsum("ji,pjk->pik", reference, np.array([f.offset for f in frames]))) \
        if frames else np.zeros(0)
    far = tolerances.MIRROR_DISTANCE_RELATIVE * char.size
    tol = tolerances.MIRROR_ANGLE_DEGREES
    bad = [(f.left, f.right, float(a), f.head_distance) for f, a in zip(frames, angles, strict=True)
           if a > tol]
    # Axes that mirror on heads that do not: the asset is not symmetric there, but mirrored poses
    # turn both sides alike (a pose is a rotation about each bone's own head).
    apart = [(f.left, f.right, float(a), f.head_distance) for f, a in zip(frames, angles, strict=True)
             if a <= tol and f.head_distance > far]
    if apart:
        worst = max(apart, key=lambda t: t[3])
        findings.append(Finding(
            "mirror-axis-mismatch", "INFO",
            f"{len(apart)} deform bone pairs have mirrored axes but heads off their mirror position; worst "
            f"'{names[worst[0]]}' / '{names[worst[1]]}' by {worst[3]:.3g} ({worst[3] / char.size:.2g} of the "
            "character's size): the two sides are not built alike there, and mirrored poses still turn them alike",
            len(apart), bones=tuple(names[i] for a, c, _, _ in apart for i in (a, c)),
            details={"worst_angle_degrees": max(t[2] for t in apart), "worst_head_distance": worst[3],
                     "heads_only": True}))
    if bad:
        worst = max(bad, key=lambda t: t[2])
        findings.append(Finding(
            "mirror-axis-mismatch", "WARNING",
            f"{len(bad)} deform bone pairs are not mirror images at rest; worst '{names[worst[0]]}' / "
            f"'{names[worst[1]]}' by {worst[2]:.1f} deg (a rolled bone makes the arm flip or the knee bend "
            "backwards on mirrored poses)",
            len(bad), bones=tuple(names[i] for a, c, _, _ in bad for i in (a, c)),
            details={"worst_angle_degrees": worst[2], "worst_head_distance": worst[3]}))
    # Along the mirror axis both half-turn mirror images are rigid turns of the left bone: not a
    # mismatch by construction, but Blender's Paste Flipped expects its own one, so say so.
    turned = [(f.left, f.right, float(p), f.head_distance) for f, a, p in zip(frames, angles, plain, strict=True)
              if a <= tol < p and f.head_distance <= far]
    if turned:
        findings.append(Finding(
            "mirror-axis-mismatch", "INFO",
            f"{len(turned)} deform bone pairs lie along the mirror axis and are mirror images turned half a turn "
            f"about their own axis ('{names[turned[0][0]]}' / '{names[turned[0][1]]}'): both are mirror images "
            "of such a bone, but Blender's Paste Flipped expects the other one",
            len(turned), bones=tuple(names[i] for a, c, _, _ in turned for i in (a, c)),
            details={"worst_angle_degrees": max(t[2] for t in turned),
                     "worst_head_distance": max(t[3] for t in turned), "along_mirror_axis": True}))
    if not pairs.pairs:
        if one_sided:
            side = "left" if sides == {"L"} else "right"
            text = (f"every side deform bone of the rig is a {side} one ({len(pairs.unpaired)} bones: a one-sided "
                    "asset, such as a hand); there are no left/right pairs, so weight symmetry was not checked")
        else:
            text = "the rig has no left/right deform bone pairs; weight symmetry was not checked"
        findings.append(Finding("no-mirrored-bones", "INFO", text))
        return
    _weight_symmetry(meshes, char, names, pairs, options, out)


def _weight_symmetry(meshes: Sequence[SkinnedMesh], char: _Character, names: tuple[str, ...],
                     pairs: BonePairs, options: AuditOptions, out: Judged) -> None:
    """Weights mirrored mesh by mesh: each mesh that mirrors onto itself is judged alone (a body is
    never paired with the eyes or joint spheres beside it); the meshes left are judged together,
    where a character is split per side (``Arm.L`` mirrors ``Arm.R``).  A mesh matched on fewer than
    ``symmetric_fraction`` of its vertices either way is not judged."""
    findings, metrics, parts = out.findings, out.metrics, [out.part(k) for k in range(len(meshes))]
    radius = options.mirror_radius_relative * char.size
    total = len(char.points)
    partner = np.full(total, -1, dtype=np.intp)
    difference = np.zeros(total)
    worst_group = np.full(total, -1, dtype=np.intp)
    fraction = np.ones(len(meshes))
    judged = np.zeros(len(meshes), dtype=bool)
    row = {n: g for g, n in enumerate(char.group_names)}

    def keep(k: int, vertices: NDArray[np.intp], mirror: WeightMirror, groups: NDArray[np.intp]) -> None:
        """Mesh k judged by ``mirror`` over ``vertices`` (its partners index ``vertices``)."""
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        at = np.flatnonzero((vertices >= lo) & (vertices < hi))
        found = mirror.partner[at]
        partner[lo:hi] = np.where(found >= 0, vertices[np.maximum(found, 0)], -1)
        difference[lo:hi] = mirror.difference[at]
        worst = mirror.worst_group[at]
        worst_group[lo:hi] = np.where(worst >= 0, groups[np.maximum(worst, 0)], -1)
        judged[k] = True

    # 1. Each mesh against itself.
    for k, m in enumerate(meshes):
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        if hi == lo:
            continue
        own = mirror_weights(char.points[lo:hi], m.weights, mirror_groups(m.group_names, names, pairs), pairs,
                             radius)
        fraction[k] = own.matched_fraction
        if own.matched_fraction >= options.symmetric_fraction:
            keep(k, np.arange(lo, hi, dtype=np.intp), own, np.array([row[n] for n in m.group_names], dtype=np.intp))
    # 2. The meshes left, together: a character split per side.
    left = [k for k in range(len(meshes)) if not judged[k] and char.starts[k + 1] > char.starts[k]]
    if len(left) > 1:
        vertices = np.concatenate([np.arange(char.starts[k], char.starts[k + 1], dtype=np.intp) for k in left])
        together = mirror_weights(char.points[vertices], char.weights[:, vertices],
                                  mirror_groups(char.group_names, names, pairs), pairs, radius)
        for k in left:
            at = (vertices >= char.starts[k]) & (vertices < char.starts[k + 1])
            matched = float((together.partner[at] >= 0).mean())
            if matched >= options.symmetric_fraction:
                fraction[k] = matched
                keep(k, vertices, together, np.arange(len(char.group_names), dtype=np.intp))
            else:
                fraction[k] = max(fraction[k], matched)
    counts = np.diff(char.starts)
    metrics["mirror_matched_fraction"] = float((fraction * counts).sum() / counts.sum()) if counts.sum() else 1.0
    for k, part in enumerate(parts):
        part.metrics["mirror_matched_fraction"] = float(fraction[k])
    unjudged = [k for k in range(len(meshes)) if not judged[k] and counts[k]]
    if unjudged:
        if len(unjudged) == len([k for k in range(len(meshes)) if counts[k]]):
            what = "the mesh" if len(meshes) == 1 else f"its {len(meshes)} meshes (each alone or together)"
            share = metrics["mirror_matched_fraction"]
            text = (f"only {share:.0%} of the vertices of {what} have a mirror vertex across {pairs.describe()} "
                    "(armature space); weight symmetry was not checked")
        else:
            listed = ", ".join(f"'{meshes[k].object}' ({fraction[k]:.0%})" for k in unjudged[:NAMES_SHOWN])
            text = (f"{len(unjudged)} of {len(meshes)} meshes do not mirror across {pairs.describe()} (armature "
                    f"space), alone or with the others, and their weight symmetry was not checked: {listed}"
                    f"{' ...' if len(unjudged) > NAMES_SHOWN else ''}; the other meshes were")
        findings.append(Finding("mesh-not-symmetric", "INFO", text,
                                details={"meshes": [meshes[k].object for k in unjudged],
                                         "matched_fractions": [float(fraction[k]) for k in unjudged]}))
        if not judged.any():
            return
    metrics["max_weight_asymmetry"] = float(difference[np.repeat(judged, counts)].max(initial=0.0))
    for k, part in enumerate(parts):
        if not judged[k]:
            continue
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        diff = difference[lo:hi]
        part.measures["asymmetry"] = diff
        part.metrics["max_weight_asymmetry"] = float(diff.max(initial=0.0))
        asym = diff > options.asymmetry_tolerance
        if not asym.any():
            continue
        v = int(np.argmax(diff))
        mate = int(partner[lo + v])
        other = char.mesh_of(mate)
        partner_local = mate - int(char.starts[other])
        where = "" if other == k else f" of '{meshes[other].object}'"
        group = char.group_names[worst_group[lo + v]]
        visible = diff[v] + tolerances.FLOAT32_RELATIVE >= tolerances.ASYMMETRY_VISIBLE  # (weights are float32)
        part.findings.append(Finding(
            "weight-asymmetry", "WARNING" if visible else "INFO",
            f"{int(asym.sum())} vertices weigh differently from their mirror vertex; worst vertex {v} "
            f"(mirror vertex {partner_local}{where}) in group '{group}' by {diff[v]:.3g}" + (
                "" if visible else f" (under {tolerances.ASYMMETRY_VISIBLE:g}: the two sides bend alike to the "
                                   "eye; a mirrored pose moves them apart by less than that share of the bend)"),
            int(asym.sum()), tuple(np.flatnonzero(asym).tolist()),
            groups=tuple(sorted({char.group_names[g] for g in worst_group[lo:hi][asym]})),
            details={"worst_vertex": v, "mirror_vertex": partner_local, "mirror_object": meshes[other].object,
                     "worst_difference": float(diff[v])}))


def _strays(meshes: Sequence[SkinnedMesh], char: _Character, options: AuditOptions, out: Judged) -> None:
    """Stray weights judged per bone over every mesh it weighs; WARNING where a stray weight moves
    its vertex visibly at the stress poses (tolerances.STRAY_VISIBLE_RELATIVE of the character's
    size, against the vertex without that weight), INFO where every one is lighter."""
    parts = [out.part(k) for k in range(len(meshes))]
    bones = meshes[0].bones
    index = bones.index()
    group_bones = np.array([index.get(n, -1) for n in char.group_names], dtype=np.intp)
    group_bones = np.where((group_bones >= 0) & bones.use_deform[np.maximum(group_bones, 0)], group_bones, -1)
    strays = find_stray_weights(char.points, char.weights, group_bones, bones.heads, bones.tails,
                                char.edges, char.size)
    poses = np.stack([p.channel for p in standard_poses(bones, options.test_pose_degrees)]) if strays else None
    visible_at = tolerances.STRAY_VISIBLE_RELATIVE * char.size
    moves = []
    weights = char.weights
    mirror: tuple[BonePairs, NDArray[np.intp]] | None = None
    for k, s in enumerate(strays):
        if s.islands.size:
            # An island near its bone painted with its full weight (an eye, a button) is rigged to it on
            # purpose; a light weight left alone on a patch (normalised by Blender) is not.
            full = weights[s.group, s.islands].astype(np.float64) >= 1.0 - tolerances.STRAY_FULL_SHARE
            islands = s.islands[~full]
            # So is an island its bone carries (the largest share there at least half) that is the
            # mirror image of the group's own region (the right eye of a bone carrying both eyes);
            # two mirrored patches of a light bleed are still stray.
            w = weights[:, s.islands].astype(np.float64)
            w[(group_bones < 0) | ~np.isfinite(w).all(axis=1)] = 0.0
            carried = (w[s.group] / np.maximum(w.sum(axis=0), tolerances.DIVISION_GUARD)).max(initial=0.0) \
                >= tolerances.STRAY_CARRIED_SHARE
            if islands.size and carried:
                if mirror is None:
                    deform = np.flatnonzero(bones.use_deform)
                    pairs = pair_bones(tuple(bones.names[j] for j in deform), bones.heads[deform])
                    mirror = pairs, mirror_groups(char.group_names, tuple(bones.names[j] for j in deform), pairs)
                islands = _unmirrored(char, islands, s.islands, s.group, int(mirror[1][s.group]), mirror[0],
                                      options.mirror_radius_relative * char.size)
            strays[k] = s = replace(s, islands=islands)
        vertices = np.union1d(s.far, s.islands)
        assert poses is not None
        moves.append((vertices, stray_displacement(char.points, char.weights, group_bones, s.group, vertices, poses)))
    for k, part in enumerate(parts):
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        measure = np.zeros(hi - lo)
        found: dict[bool, list[tuple[str, str, NDArray[np.intp], NDArray[np.intp], float]]] = {True: [], False: []}
        for s, (vertices, moved) in zip(strays, moves, strict=True):
            mine = (vertices >= lo) & (vertices < hi)
            if not mine.any():
                continue
            measure[vertices[mine] - lo] = 1.0
            for visible in (True, False):
                pick = mine & ((moved > visible_at) == visible)
                if pick.any():
                    found[visible].append((char.group_names[s.group], bones.names[s.bone], vertices[pick] - lo,
                                           np.intersect1d(s.islands, vertices[pick]), float(moved[pick].max())))
        part.measures["stray"] = measure
        for visible, rows in found.items():
            if not rows:
                continue
            vertices = np.unique(np.concatenate([r[2] for r in rows]))
            text = ", ".join(f"'{g}' ({len(v) - len(i)} far, {len(i)} in islands)" for g, _, v, i, _ in rows[:5])
            worst = max(r[4] for r in rows)
            size_text = f"{worst:.3g}, {worst / char.size:.1%} of the character's size"
            if visible:
                severity: Severity = "WARNING"
                message = (f"{len(vertices)} vertices carry weights that bleed from their bone and move them visibly "
                           f"at the stress poses (up to {size_text}): {text}")
            else:
                severity = "INFO"
                message = (f"{len(vertices)} vertices carry light weights that bleed from their bone; at the stress "
                           f"poses they move them at most {size_text} (visible from "
                           f"{tolerances.STRAY_VISIBLE_RELATIVE:.0%}): {text}")
            part.findings.append(Finding(
                "stray-weights", severity, message, len(vertices), tuple(vertices.tolist()),
                tuple(dict.fromkeys(r[1] for r in rows)), tuple(dict.fromkeys(r[0] for r in rows)),
                details={"worst_displacement": worst, "worst_displacement_relative": worst / char.size}))


def _unmirrored(char: _Character, islands: NDArray[np.intp], every_island: NDArray[np.intp], group: int,
                mirror_group: int, pairs: BonePairs, radius: float) -> NDArray[np.intp]:
    """The ``islands`` vertices of a middle bone's group (its own mirror: eyes, jaw) whose mirror image
    is not a vertex the group weighs outside ``every_island`` (within ``radius``), unless the group
    weighs about as much outside its islands as in them (two mirrored pieces: the eyes); a group
    weighing far more (a root bone over the body) keeps its islands.  A side group's island is kept:
    its mirror image lies on the other side's group, which may carry the same mistake."""
    if mirror_group != group:
        return islands
    region = np.setdiff1d(np.flatnonzero(char.weights[mirror_group] > 0), every_island)
    if region.size == 0 or region.size > tolerances.STRAY_MIRROR_PIECE_RATIO * every_island.size:
        return islands
    images = reflect_points(char.points[islands], pairs)  # (N, 3)
    found = np.zeros(len(islands), dtype=bool)
    targets = char.points[region]
    step = max(1, _MIRROR_PAIRS // max(len(targets), 1))
    for lo in range(0, len(images), step):  # (a block of images x the region): a few megabytes
        d = np.linalg.norm(images[lo:lo + step, None, :] - targets[None, :, :], axis=2)
        found[lo:lo + step] = d.min(axis=1) <= radius
    return islands[~found]


#: Island images times region vertices compared per block of _unmirrored.
_MIRROR_PAIRS = 2**18


def audit_rig(armature: str, meshes: Sequence[SkinnedMesh], options: AuditOptions,
              missing: Sequence[MissingModifier] = (),
              rigid: Sequence[RigidPart] = ()) -> tuple[RigAudit, tuple[Judged, ...]]:
    """The rig-level judgement of ``armature`` over ``meshes`` (all deformed by it).

    Returns the rig's own entry and, per mesh in order, what the character-wide families found
    there (weight asymmetry, stray weights, self-intersection, each mesh's joint budget).
    ``missing`` are meshes tied to the armature that no Armature modifier deforms; ``meshes`` may
    then be empty.  ``rigid`` are meshes parented to its bones (rigid parts): their bones move them.
    """
    out = Judged()
    skeleton: dict[str, Any] = {}
    if meshes:
        bones = meshes[0].bones
        deform = np.asarray(bones.use_deform, dtype=bool)
        out.metrics.update({
            "bones": len(bones.names), "deform_bones": int(deform.sum()),
            "deform_roots": int(((deform_parents(bones.parents, deform) < 0) & deform).sum()),
            "vertices": sum(m.vertex_count for m in meshes),
        })
        out.add(Judged.of(structure_findings(armature, bones, options.target)))
        out.add(Judged.of(armature_findings(meshes[0])))
        out.add(Judged.of(idle_bone_findings(armature, meshes, rigid)))
        skeleton = _skeleton(armature, meshes, options, out)
        if options.shape_checks and deform.any():
            char = _character(meshes)
            _symmetry(armature, meshes, char, options, out)
            _strays(meshes, char, options, out)
        if options.shape_checks and options.contact_checks and deform.any():
            # Self- and mesh-intersections at the rig's limits and moderate bends; the joints.
            out.add(interpenetration(meshes, options.test_pose_degrees))
            out.add(joint_placement(meshes, deform_parents(bones.parents, deform)))
            out.add(chain_rolls(bones, deform_parents(bones.parents, deform)))
    out.add(Judged.of(rigid_part_findings(armature, rigid, meshes[0].bones if meshes else None, options.target)))
    out.add(Judged.of(missing_modifier_findings(armature, missing)))
    rig = RigAudit(armature, tuple(m.object for m in meshes), out.metrics, tuple(out.findings), skeleton)
    return rig, tuple(out.part(k) for k in range(len(meshes)))


def _skeleton(armature: str, meshes: Sequence[SkinnedMesh], options: AuditOptions, out: Judged) -> dict[str, Any]:
    """Humanoid map, rest pose and signature of the deform skeleton; each mesh's joint budget."""
    findings, metrics, parts = out.findings, out.metrics, [out.part(k) for k in range(len(meshes))]
    bones = meshes[0].bones
    deform = np.flatnonzero(bones.use_deform)
    if deform.size == 0:
        return {}
    dparent = deform_parents(bones.parents, bones.use_deform)
    position = {int(j): k for k, j in enumerate(deform)}
    parents = [position[int(dparent[j])] if dparent[j] >= 0 else -1 for j in deform]
    judged = judge_skeleton(armature, [bones.names[j] for j in deform], parents, bones.heads[deform],
                            bones.tails[deform], bones.rest[deform, :3, 0], options.rest_pose, options.target)
    findings += judged.findings
    humanoid = judged.data["humanoid"]
    metrics["humanoid_bones"] = len(humanoid["bones"]) if humanoid["humanoid"] else 0
    for mesh, part in zip(meshes, parts, strict=True):
        weighting = [bones.names[b] for b in sorted({b for b, _, _ in mesh.deform_columns})]
        part.metrics["weighting_bones"] = len(weighting)
        budget = joint_budget_finding(mesh.object, weighting, options.target)
        if budget is not None:
            part.findings.append(budget)
    return judged.data
