# SPDX-License-Identifier: GPL-3.0-or-later
"""Apply a fix to one skinned mesh: audit it, change only what the finding names, audit again.

Weight fixes are computed by ``core/fixes`` on the (G, V) array and written cell by cell
(``VertexGroup.add(..., 'REPLACE')`` for a new value, ``remove`` for a weight that becomes
0); every other cell, group, vertex and object is left alone.  Property fixes change one
flag per bone or modifier the finding names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import bpy
import numpy as np
from numpy.typing import NDArray

from ...core.audit.options import AuditOptions
from ...core.audit.report import MeshAudit
from ...core.audit.stray_weights import find_stray_weights, segment_distance
from ...core.audit.symmetry import mirror_groups, pair_bones, reflect_points
from ...core.errors import InputError
from ...core.findings import Finding
from ...core.fixes import weights as wfix
from ...core.maths.mesh_graph import nearest_within
from ..read.arrays import mesh_positions
from ..read.weights import group_weights
from ..run.audit_scene import armature_modifiers, audit_meshes
from .scale import SCALE_CODES, apply_armature_scale

#: Every code a fix exists for, with what it does (the panel's tooltip, the CLI's help).
FIXABLE: dict[str, str] = {
    "too-many-influences": "keep the N largest deform weights per vertex, then normalise those vertices",
    "weights-not-normalized": "scale the unlocked deform weights of the listed vertices to sum to 1",
    "unweighted-vertices": "give unweighted vertices their nearest weighted neighbours' weights along the mesh",
    "stray-weights": "remove the stray islands and far weights (or weights below a threshold), then normalise "
                     "those vertices",
    "weight-asymmetry": "copy one side's weights to the other through the audit's bone pairs and mirror vertices",
    "group-without-bone": "remove the vertex group, or merge its weights into a deform bone's group",
    "weights-on-non-deform-bone": "remove the vertex group, or merge its weights into a deform bone's group",
    "deform-bone-without-weights": "turn Deform off on the bones that move no vertex",
    "preserve-volume-on": "turn Preserve Volume off on the Armature modifier (engines skin with LBS)",
    "bbones-on-deform-bones": "set B-Bone segments to 1 on deform bones (what exporters bake anyway)",
    "non-uniform-armature-scale": "apply the armature's scale to its rest pose, pose and keys; skinned meshes "
                                  "stay where they are",
    "negative-armature-scale": "apply the armature's mirror to its rest pose (proper bone frames), pose and "
                               "keys; a mirrored mesh child takes the mirror into its data (faces flipped)",
}


#: Codes only the shape checks find: a fix of one turns them on for its audits.
SHAPE_CHECK_CODES = frozenset({"stray-weights", "weight-asymmetry"})

#: Bones within this fraction of the mesh size of the nearest one are equally near (a joint).
TIE_RELATIVE = 1e-5


@dataclass(frozen=True)
class FixSettings:
    """The options of the fixes (each fix reads the ones it needs)."""

    max_influences: int = 4
    threshold: float = 0.01
    #: For group-without-bone / weights-on-non-deform-bone: "remove" or "merge".
    group_action: str = "remove"
    #: Bone whose group receives merged weights; "" means the nearest deform bone.
    merge_into: str = ""
    #: For stray-weights: "islands" (the audit's islands and far weights) or "below" (under ``threshold``).
    stray_action: str = "islands"
    #: For weight-asymmetry: "left-to-right" or "right-to-left".
    mirror_direction: str = "left-to-right"


@dataclass(frozen=True)
class FixOutcome:
    """What a fix did to one mesh, and the finding counts (summed ``count`` per code) around it."""

    object: str
    code: str
    message: str
    changed_cells: int
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)


def group_rows(obj: bpy.types.Object, audit: MeshAudit) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(G,) deform flags (the group names a deform bone of the audited armature) and lock flags."""
    arm = bpy.data.objects[audit.armature]
    deform = {b.name for b in arm.data.bones if b.use_deform}
    groups = list(obj.vertex_groups)
    return (np.array([g.name in deform for g in groups], dtype=bool),
            np.array([g.lock_weight for g in groups], dtype=bool))


def write_weight_fix(obj: bpy.types.Object, before: NDArray[np.float32], fix: wfix.WeightFix) -> int:
    """Write exactly ``fix.changed``: a new non-zero value replaces, a 0 removes the membership."""
    groups = list(obj.vertex_groups)
    for g in np.unique(fix.changed[:, 0]):
        vg = groups[int(g)]
        if vg.lock_weight:
            raise InputError(f"'{obj.name}': group '{vg.name}' is locked; a fix never changes it")
        verts = fix.changed[fix.changed[:, 0] == g, 1]
        values = fix.weights[g, verts]
        gone = verts[values == 0.0]
        if gone.size:
            vg.remove(gone.tolist())
        for value in np.unique(values[values != 0.0]):  # one call per distinct value
            vg.add(verts[values == value].tolist(), float(value), "REPLACE")
    obj.data.update()
    return len(fix.changed)


def _counts(audits: Sequence[MeshAudit]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for a in audits:
        for f in a.findings:
            out[f.code] += max(f.count, 1)
    return dict(out)


def _edges(mesh: bpy.types.Mesh) -> NDArray[np.intp]:
    edges = np.zeros(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", edges)
    return edges.reshape(-1, 2).astype(np.intp)


def nearest_deform_bone(obj: bpy.types.Object, arm: bpy.types.Object, row: NDArray[np.float32],
                        weights: NDArray[np.float32] | None = None) -> str:
    """The deform bone closest (rest segment) to the weighted centre of a group's vertices;
    bones whose group is locked are passed over (a merge would change it).

    Bones at the same distance (a centre on a joint: within TIE_RELATIVE of the mesh size) are
    ranked by the weight their group already has on those vertices, then by bone order, so
    the choice never hangs on float rounding.
    """
    locked = {g.name for g in obj.vertex_groups if g.lock_weight}
    deform = [b for b in arm.data.bones if b.use_deform and b.name not in locked]
    if not deform:
        raise InputError(f"'{arm.name}' has no unlocked deform bone to merge into; remove the group instead")
    points = mesh_positions(obj.data)
    to_arm = np.array(arm.matrix_world.inverted() @ obj.matrix_world, dtype=np.float64)
    w = row.astype(np.float64)
    centre = (points * w[:, None]).sum(axis=0) / w.sum()
    centre = to_arm[:3, :3] @ centre + to_arm[:3, 3]
    d = np.array([float(segment_distance(centre[None], np.array(b.head_local), np.array(b.tail_local))[0])
                  for b in deform])
    size = float(np.ptp(points, axis=0).max()) if len(points) else 0.0
    tied = np.flatnonzero(d <= d.min() + TIE_RELATIVE * max(size, 1e-12))
    if weights is not None and len(tied) > 1:
        groups = {g.name: g.index for g in obj.vertex_groups}
        has = [float(weights[groups[deform[k].name]][w > 0].sum()) if deform[k].name in groups else 0.0
               for k in tied]
        return deform[int(tied[int(np.argmax(has))])].name  # argmax: the first among equals
    return deform[int(tied[0])].name


def _group_fix(obj: bpy.types.Object, audit: MeshAudit, finding: Finding, settings: FixSettings) -> tuple[str, int]:
    name = finding.groups[0]
    vg = obj.vertex_groups.get(name)
    if vg is None:
        return f"group '{name}' is gone already", 0
    if vg.lock_weight:
        raise InputError(f"'{obj.name}': group '{name}' is locked; unlock it to remove or merge it")
    before = group_weights(obj)
    cells = int((before[vg.index] != 0).sum())
    if settings.group_action == "remove":
        obj.vertex_groups.remove(vg)
        # The group itself is a change even when it weighs nothing (a fix that changed nothing writes nothing).
        return f"removed group '{name}' ({cells} weights)", max(cells, 1)
    if settings.group_action != "merge":
        raise InputError(f"group action must be 'remove' or 'merge', got {settings.group_action!r}")
    arm = bpy.data.objects[audit.armature]
    target = settings.merge_into or nearest_deform_bone(obj, arm, before[vg.index], before)
    bone = arm.data.bones.get(target)
    if bone is None or not bone.use_deform:
        raise InputError(f"'{target}' is not a deform bone of '{arm.name}'; pick one to merge '{name}' into")
    target_group = obj.vertex_groups.get(target)
    if target_group is None:
        target_group = obj.vertex_groups.new(name=target)
        before = np.vstack([before, np.zeros((1, before.shape[1]), np.float32)])
    deform, locked = group_rows(obj, audit)
    fix = wfix.merge_rows(before, deform, locked, vg.index, target_group.index)
    write_weight_fix(obj, before, fix)
    obj.vertex_groups.remove(vg)
    return f"merged group '{name}' into '{target}' ({cells} weights)", len(fix.changed)


def _weight_fix(obj: bpy.types.Object, audit: MeshAudit, finding: Finding, settings: FixSettings) -> tuple[str, int]:
    before = group_weights(obj)
    deform, locked = group_rows(obj, audit)
    code = finding.code
    if code == "too-many-influences":
        fix = wfix.limit_and_normalize(before, deform, locked, settings.max_influences)
    elif code == "weights-not-normalized":
        fix = wfix.normalize(before, deform, locked, vertices=finding.vertices)
    elif code == "unweighted-vertices":
        fix = wfix.transfer_from_neighbours(before, deform, locked, _edges(obj.data), finding.vertices)
    elif settings.stray_action == "below":
        fix = wfix.remove_below(before, deform, locked, settings.threshold)
    elif settings.stray_action == "islands":
        fix = wfix.remove_cells(before, deform, locked, _stray_cells(obj, audit, finding, before, deform, locked))
    else:
        raise InputError(f"stray action must be 'islands' or 'below', got {settings.stray_action!r}")
    return fix.message, write_weight_fix(obj, before, fix)


def _weighted_elsewhere(obj: bpy.types.Object, arm: bpy.types.Object) -> set[str]:
    """Names of the groups with a non-zero weight on any other mesh that ``arm`` deforms."""
    used: set[str] = set()
    for other in bpy.data.objects:
        if other != obj and any(m.object == arm for m in armature_modifiers(other)):
            w = group_weights(other)
            used |= {g.name for g in other.vertex_groups if bool((w[g.index] != 0).any())}
    return used


def _armature_points(obj: bpy.types.Object, arm: bpy.types.Object) -> NDArray[np.float64]:
    """(V, 3) the mesh's stored positions in the armature's space (as the shape checks see them)."""
    to_arm = np.array(arm.matrix_world.inverted() @ obj.matrix_world, dtype=np.float64)
    out: NDArray[np.float64] = mesh_positions(obj.data) @ to_arm[:3, :3].T + to_arm[:3, 3]
    return out


def _stray_cells(obj: bpy.types.Object, audit: MeshAudit, finding: Finding, weights: NDArray[np.float32],
                 deform: NDArray[np.bool_], locked: NDArray[np.bool_]) -> NDArray[np.intp]:
    """(N, 2) the (group, vertex) cells the audit's stray check calls islands or far, on the finding's
    vertices, in unlocked deform groups (this mesh alone, as core.audit.stray_weights judges them)."""
    arm = bpy.data.objects[audit.armature]
    bones = arm.data.bones
    index = {b.name: j for j, b in enumerate(bones)}
    group_bones = np.array([index[g.name] if deform[g.index] else -1 for g in obj.vertex_groups], dtype=np.intp)
    heads = np.array([tuple(b.head_local) for b in bones], dtype=np.float64).reshape(-1, 3)
    tails = np.array([tuple(b.tail_local) for b in bones], dtype=np.float64).reshape(-1, 3)
    points = _armature_points(obj, arm)
    size = max(float(np.ptp(points, axis=0).max()) if len(points) else 1.0, 1e-6)
    strays = find_stray_weights(points, weights, group_bones, heads, tails, _edges(obj.data), size)
    listed = np.zeros(len(points), dtype=bool)
    listed[list(finding.vertices)] = True
    cells = [(s.group, int(v)) for s in strays if not locked[s.group]
             for v in np.union1d(s.islands, s.far) if listed[v]]
    return np.array(cells, dtype=np.intp).reshape(-1, 2)


def _mirror_fix(obj: bpy.types.Object, audit: MeshAudit, finding: Finding, settings: FixSettings,
                options: AuditOptions) -> tuple[str, int]:
    """weight-asymmetry: the audit's bone pairs, plane and mirror vertices (this mesh alone), then
    the listed vertices of the destination side take their mirror vertex's weights."""
    if settings.mirror_direction not in ("left-to-right", "right-to-left"):
        raise InputError(f"mirror direction must be 'left-to-right' or 'right-to-left', "
                         f"got {settings.mirror_direction!r}")
    arm = bpy.data.objects[audit.armature]
    names = tuple(b.name for b in arm.data.bones)
    heads = np.array([tuple(b.head_local) for b in arm.data.bones], dtype=np.float64).reshape(-1, 3)
    pairs = pair_bones(names, heads)
    if not pairs.pairs:
        raise InputError(f"'{arm.name}' has no left/right bone pairs to mirror through")
    points = _armature_points(obj, arm)
    size = max(float(np.ptp(points, axis=0).max()) if len(points) else 1.0, 1e-6)
    radius = options.mirror_radius_relative * size
    partner = nearest_within(points, reflect_points(points, pairs), radius)
    before = group_weights(obj)
    group_names = tuple(g.name for g in obj.vertex_groups)
    side = points @ pairs.normal - pairs.offset  # > 0: left (the pairs' normal points right to left)
    listed = np.zeros(len(points), dtype=bool)
    listed[list(finding.vertices)] = True
    destination = listed & ((side < -radius) if settings.mirror_direction == "left-to-right" else (side > radius))
    centre = listed & (np.abs(side) <= radius)
    deform, locked = group_rows(obj, audit)
    fix = wfix.mirror_side(before, deform, locked, partner, mirror_groups(group_names, names, pairs),
                           destination, centre)
    return fix.message, write_weight_fix(obj, before, fix)


def _property_fix(obj: bpy.types.Object, audit: MeshAudit, finding: Finding) -> tuple[str, int]:
    arm = bpy.data.objects[audit.armature]
    if finding.code == "preserve-volume-on":
        mods = [m for m in armature_modifiers(obj) if m.object == arm and m.use_deform_preserve_volume]
        for m in mods:
            m.use_deform_preserve_volume = False
        return f"turned Preserve Volume off on {', '.join(repr(m.name) for m in mods)}", len(mods)
    bones = [arm.data.bones[n] for n in finding.bones if n in arm.data.bones]
    if finding.code == "deform-bone-without-weights":
        # The finding judged this mesh alone: a bone another mesh of the armature needs keeps Deform.
        used = _weighted_elsewhere(obj, arm)
        bones = [b for b in bones if b.name not in used]
    for b in bones:
        if finding.code == "deform-bone-without-weights":
            b.use_deform = False
        else:
            b.bbone_segments = 1
    what = "Deform off" if finding.code == "deform-bone-without-weights" else "B-Bone segments 1"
    return f"{what} on {len(bones)} bones of '{arm.name}'", len(bones)


def apply_fix(obj: bpy.types.Object, audit: MeshAudit, finding: Finding, settings: FixSettings,
              options: AuditOptions | None = None) -> tuple[str, int]:
    """Apply the fix for one finding of ``audit`` (the audit of ``obj``); (message, cells or items changed)."""
    if finding.code not in FIXABLE:
        raise InputError(f"no fix for '{finding.code}'; fixable: {', '.join(FIXABLE)}")
    if finding.code == "weight-asymmetry":
        return _mirror_fix(obj, audit, finding, settings, options or AuditOptions())
    if finding.code in ("group-without-bone", "weights-on-non-deform-bone"):
        return _group_fix(obj, audit, finding, settings)
    if finding.code in ("preserve-volume-on", "deform-bone-without-weights", "bbones-on-deform-bones"):
        return _property_fix(obj, audit, finding)
    if finding.code in SCALE_CODES:
        return apply_armature_scale(bpy.context, bpy.data.objects[audit.armature])
    return _weight_fix(obj, audit, finding, settings)


def fix_mesh(context: bpy.types.Context, obj: bpy.types.Object, codes: Sequence[str],
             settings: FixSettings | None = None, options: AuditOptions | None = None) -> list[FixOutcome]:
    """Audit ``obj``, apply the fix of each code it has a finding for, re-audit after each.

    ``options`` are the audit's (default: no shape checks, unless stray-weights is asked for);
    its influence limit is the fix's.  Returns one outcome per code (a code with no finding
    says so and changes nothing).
    """
    settings = settings or FixSettings()
    for code in codes:
        if code not in FIXABLE:
            raise InputError(f"no fix for '{code}'; fixable: {', '.join(FIXABLE)}")
    if obj.mode == "EDIT" or any(m.object.mode == "EDIT" for m in armature_modifiers(obj)):
        raise InputError(f"'{obj.name}' or its armature is in Edit Mode; leave it, then fix")
    options = options or AuditOptions(shape_checks=bool(SHAPE_CHECK_CODES.intersection(codes)))
    options = replace(options, max_influences=settings.max_influences)
    outcomes = []
    audits = audit_meshes(context, [obj], options)
    for code in codes:
        before = _counts(audits)
        done, changed, armatures = [], 0, set()
        for audit in audits:
            if code in SCALE_CODES and audit.armature in armatures:
                continue  # one armature under several modifiers: its scale is applied once
            armatures.add(audit.armature)
            for finding in [f for f in audit.findings if f.code == code]:
                message, n = apply_fix(obj, audit, finding, settings, options)
                done.append(message)
                changed += n
            if code in ("deform-bone-without-weights", "bbones-on-deform-bones"):
                break  # the armature's finding repeats on every modifier's audit
        if done:
            context.view_layer.update()
            audits = audit_meshes(context, [obj], options)
        outcomes.append(FixOutcome(obj.name, code, "; ".join(done) or f"no '{code}' finding on '{obj.name}'",
                                   changed, before, _counts(audits)))
    return outcomes
