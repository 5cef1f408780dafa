# SPDX-License-Identifier: GPL-3.0-or-later
"""Judge a character: one armature over every mesh it deforms.  numpy only.

What belongs to the armature is computed once and reported once: its deform
hierarchy (roots), scale, B-Bones, deform bones that move no vertex of any of
its meshes, side bones without a partner, mirrored rest frames, and meshes
tied to it that no Armature modifier deforms.  Weight symmetry and stray
weights are judged over all its meshes together (a body split into ``Arm.L``
and ``Arm.R`` is a pair), and their vertex findings go to the mesh whose
vertices they name.

Structure is judged on the hierarchy an exporter writes: deform bones only,
each under its nearest deform ancestor.  Helper bones (a rigging system's
controls and mechanism bones: Rigify's ORG-, MCH-, widgets) never reach an
engine and are not judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import tolerances
from ..findings import Finding, Severity
from ..maths.affine import largest_side
from .armature_modifier import to_armature
from .options import AuditOptions
from .skinned_mesh import Bones, SkinnedMesh
from .stray_weights import find_stray_weights
from .symmetry import (
    BonePairs,
    mirror_frames,
    mirror_groups,
    mirror_offset_angles,
    mirror_weights,
    pair_bones,
    rotation_angle,
    rotation_angles,
    shared_convention,
)

F64 = NDArray[np.float64]

#: Codes only the rig audit reports (the others it shares with the single-mesh rules).
RIG_CODES = frozenset({"armature-modifier-missing"})
#: How many names a message lists.
NAMES_SHOWN = 5


@dataclass(frozen=True)
class RigAudit:
    """The audit of one armature over every mesh it deforms."""

    armature: str
    meshes: tuple[str, ...]
    metrics: Mapping[str, float | int | None]
    findings: tuple[Finding, ...]
    #: The animation audit (``audit --animation``): per action and mesh, worst frames and timelines.
    animation: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "armature": self.armature,
            "meshes": list(self.meshes),
            "metrics": dict(self.metrics),
            "findings": [f.to_dict() for f in self.findings],
        }
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


@dataclass
class MeshPart:
    """What the character-wide judgement found on one of its meshes."""

    findings: list[Finding] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    measures: dict[str, F64] = field(default_factory=dict)


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


def structure_findings(armature: str, bones: Bones) -> list[Finding]:
    """Roots of the deform hierarchy, and no deform bone at all."""
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
             f"({_names(helpers)}), which exporters leave out") if helpers else ""
    return [Finding(
        "multiple-root-bones", "WARNING",
        f"the deform hierarchy of '{armature}' (deform bones only, each under its nearest deform "
        f"ancestor, as exporters write it) has {len(roots)} roots ({_names(names)}){under}; engines "
        "expect one skeleton root", len(roots), bones=tuple(names),
        details={"deform_roots": len(roots), "helper_parents": helpers[:50]})]


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
    if not np.isfinite(b.channel).all() or not np.isfinite(b.rest).all():
        out.append(Finding("non-finite-bone-matrices", "ERROR", "bone matrices contain NaN or infinity"))
    return out


def idle_bone_findings(armature: str, meshes: Sequence[SkinnedMesh]) -> list[Finding]:
    """Deform bones that move no vertex of any mesh of the armature."""
    bones = meshes[0].bones
    weighted = {b for m in meshes for b, _, _ in m.deform_columns}
    idle = [n for j, n in enumerate(bones.names) if bones.use_deform[j] and j not in weighted]
    if not idle:
        return []
    where = f"'{meshes[0].object}'" if len(meshes) == 1 else \
        f"any of its {len(meshes)} meshes ({_names([m.object for m in meshes])})"
    return [Finding("deform-bone-without-weights", "INFO",
                    f"{len(idle)} deform bones of '{armature}' move no vertex of {where}: {_names(idle)}",
                    len(idle), bones=tuple(idle))]


def missing_modifier_findings(armature: str, missing: Sequence[MissingModifier]) -> list[Finding]:
    """One finding per mesh tied to the armature that nothing deforms."""
    out = []
    for m in missing:
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
        return _Character(to_armature(m), m.weights, m.group_names, m.edges,
                          np.array([0, m.vertex_count], dtype=np.intp), m.size())
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
              findings: list[Finding], metrics: dict[str, Any], parts: list[MeshPart]) -> None:
    """Side bones and mirror frames on the deform bones; weights mirrored over the character."""
    b = meshes[0].bones
    deform = np.flatnonzero(b.use_deform)
    names = tuple(b.names[j] for j in deform)
    rest = b.rest[deform]
    pairs = pair_bones(names, b.heads[deform])
    if pairs.unpaired:
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
           if a > tol or f.head_distance > far]
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
        findings.append(Finding(
            "no-mirrored-bones", "INFO",
            "the rig has no left/right deform bone pairs; weight symmetry was not checked"))
        return
    _weight_symmetry(meshes, char, names, pairs, options, findings, metrics, parts)


def _weight_symmetry(meshes: Sequence[SkinnedMesh], char: _Character, names: tuple[str, ...],
                     pairs: BonePairs, options: AuditOptions, findings: list[Finding],
                     metrics: dict[str, Any], parts: list[MeshPart]) -> None:
    mirror = mirror_weights(char.points, char.weights, mirror_groups(char.group_names, names, pairs), pairs,
                            options.mirror_radius_relative * char.size)
    metrics["mirror_matched_fraction"] = mirror.matched_fraction
    for k, part in enumerate(parts):
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        part.metrics["mirror_matched_fraction"] = float((mirror.partner[lo:hi] >= 0).mean()) if hi > lo else 1.0
    if mirror.matched_fraction < options.symmetric_fraction:
        what = "the mesh" if len(meshes) == 1 else f"its {len(meshes)} meshes together"
        findings.append(Finding(
            "mesh-not-symmetric", "INFO",
            f"only {mirror.matched_fraction:.0%} of the vertices of {what} have a mirror vertex across "
            f"{pairs.describe()} (armature space); weight symmetry was not checked"))
        return
    metrics["max_weight_asymmetry"] = float(mirror.difference.max(initial=0.0))
    for k, part in enumerate(parts):
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        diff = mirror.difference[lo:hi]
        part.measures["asymmetry"] = diff
        part.metrics["max_weight_asymmetry"] = float(diff.max(initial=0.0))
        asym = diff > options.asymmetry_tolerance
        if not asym.any():
            continue
        v = int(np.argmax(diff))
        partner = int(mirror.partner[lo + v])
        other = char.mesh_of(partner)
        partner_local = partner - int(char.starts[other])
        where = "" if other == k else f" of '{meshes[other].object}'"
        group = char.group_names[mirror.worst_group[lo + v]]
        part.findings.append(Finding(
            "weight-asymmetry", "WARNING",
            f"{int(asym.sum())} vertices weigh differently from their mirror vertex; worst vertex {v} "
            f"(mirror vertex {partner_local}{where}) in group '{group}' by {diff[v]:.3g}",
            int(asym.sum()), tuple(np.flatnonzero(asym).tolist()),
            groups=tuple(sorted({char.group_names[g] for g in mirror.worst_group[lo:hi][asym]})),
            details={"worst_vertex": v, "mirror_vertex": partner_local, "mirror_object": meshes[other].object,
                     "worst_difference": float(diff[v])}))


def _strays(meshes: Sequence[SkinnedMesh], char: _Character, parts: list[MeshPart]) -> None:
    """Stray weights judged per bone over every mesh it weighs."""
    bones = meshes[0].bones
    index = bones.index()
    group_bones = np.array([index.get(n, -1) for n in char.group_names], dtype=np.intp)
    group_bones = np.where((group_bones >= 0) & bones.use_deform[np.maximum(group_bones, 0)], group_bones, -1)
    strays = find_stray_weights(char.points, char.weights, group_bones, bones.heads, bones.tails,
                                char.edges, char.size)
    for k, part in enumerate(parts):
        lo, hi = int(char.starts[k]), int(char.starts[k + 1])
        measure = np.zeros(hi - lo)
        parts_text, groups, bone_names, verts = [], [], [], []
        for s in strays:
            far = s.far[(s.far >= lo) & (s.far < hi)] - lo
            isl = s.islands[(s.islands >= lo) & (s.islands < hi)] - lo
            if not (far.size or isl.size):
                continue
            measure[far] = 1.0
            measure[isl] = 1.0
            name = char.group_names[s.group]
            parts_text.append(f"'{name}' ({len(far)} far, {len(isl)} in islands)")
            groups.append(name)
            bone_names.append(bones.names[s.bone])
            verts += [far, isl]
        part.measures["stray"] = measure
        if not groups:
            continue
        vertices = np.unique(np.concatenate(verts))
        part.findings.append(Finding(
            "stray-weights", "WARNING",
            f"{len(vertices)} vertices carry weights that bleed from their bone: {', '.join(parts_text[:5])}",
            len(vertices), tuple(vertices.tolist()), tuple(bone_names), tuple(groups)))


def audit_rig(armature: str, meshes: Sequence[SkinnedMesh], options: AuditOptions,
              missing: Sequence[MissingModifier] = ()) -> tuple[RigAudit, tuple[MeshPart, ...]]:
    """The rig-level judgement of ``armature`` over ``meshes`` (all deformed by it).

    Returns the rig's own entry and, per mesh in order, the findings, metrics
    and per-vertex measures of the character-wide checks that name its
    vertices (weight asymmetry, stray weights).  ``missing`` are meshes tied to
    the armature that no Armature modifier deforms; ``meshes`` may then be empty.
    """
    findings: list[Finding] = []
    metrics: dict[str, Any] = {}
    parts = tuple(MeshPart() for _ in meshes)
    if meshes:
        bones = meshes[0].bones
        deform = np.asarray(bones.use_deform, dtype=bool)
        metrics.update({
            "bones": len(bones.names), "deform_bones": int(deform.sum()),
            "deform_roots": int(((deform_parents(bones.parents, deform) < 0) & deform).sum()),
            "vertices": sum(m.vertex_count for m in meshes),
        })
        findings += structure_findings(armature, bones)
        findings += armature_findings(meshes[0])
        findings += idle_bone_findings(armature, meshes)
        if options.shape_checks and deform.any():
            char = _character(meshes)
            _symmetry(armature, meshes, char, options, findings, metrics, list(parts))
            _strays(meshes, char, list(parts))
    findings += missing_modifier_findings(armature, missing)
    return RigAudit(armature, tuple(m.object for m in meshes), metrics, tuple(findings)), parts
