# SPDX-License-Identifier: GPL-3.0-or-later
"""Audit skinned meshes of the open Blender file without changing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

import bpy

from ...core.audit.mesh_audit import audit_character
from ...core.audit.options import AuditOptions
from ...core.audit.report import MeshAudit
from ...core.audit.rig_audit import MissingModifier, RigAudit, RigidPart
from ...core.audit.shape_checks import SPOT_CHECK_VERTICES, SpotChecker
from ...core.audit.skinned_mesh import SkinnedMesh
from ...core.errors import InputError
from ..read.extract import ParentModifier, extract
from ..read.pose_check import spot_checker
from ..read.weights import group_weights
from ..sandbox import sandbox


def armature_modifiers(obj: bpy.types.Object) -> list[Any]:
    """The object's Armature modifiers that deform it in the viewport and have an armature set;
    without one, a mesh parented to an armature with parent type Armature has Blender's hidden
    modifier (a :class:`ParentModifier`), which deforms it all the same."""
    if obj.type != "MESH":
        return []
    mods: list[Any] = [m for m in obj.modifiers if m.type == "ARMATURE" and m.show_viewport and m.object is not None
                       and m.object.type == "ARMATURE"]
    if not mods and obj.parent is not None and obj.parent.type == "ARMATURE" and obj.parent_type == "ARMATURE":
        mods.append(ParentModifier(obj.parent))
    return mods


def skinned_meshes(objects: Iterable[bpy.types.Object]) -> list[bpy.types.Object]:
    """The mesh objects among ``objects`` that an Armature modifier deforms."""
    return [o for o in objects if armature_modifiers(o)]


def meshes_for_context(context: bpy.types.Context) -> list[bpy.types.Object]:
    """The active mesh if it is skinned, or every mesh the active armature deforms."""
    active = context.active_object
    if active is None:
        return []
    if active.type == "ARMATURE":
        return [o for o in skinned_meshes(context.scene.objects)
                if any(m.object == active for m in armature_modifiers(o))]
    return skinned_meshes([active])


def _tied_armature(obj: bpy.types.Object, armatures: list[bpy.types.Object]) -> tuple[bpy.types.Object | None, str]:
    """The armature a mesh without an enabled Armature modifier belongs to, and why; (None, '') if none."""
    if obj.parent is not None and obj.parent.type == "ARMATURE" and obj.parent_type != "OBJECT":
        # On a bone it is rigid by design; 'ARMATURE' parenting deforms through Blender's virtual modifier.
        return None, ""
    # A disabled modifier says most precisely what is wrong.
    disabled = [m for m in obj.modifiers if m.type == "ARMATURE"]
    for m in disabled:
        if m.object is not None and m.object.type == "ARMATURE":
            return m.object, f"has its Armature modifier '{m.name}' disabled in the viewport"
    if obj.parent is not None and obj.parent.type == "ARMATURE":
        return obj.parent, f"is parented to armature '{obj.parent.name}'"
    groups = {g.name for g in obj.vertex_groups}
    best = max(armatures, key=lambda a: len(groups.intersection(a.data.bones.keys())), default=None)
    if best is not None and groups.intersection(best.data.bones.keys()):
        why = f"has vertex groups named after bones of '{best.name}'"
        if disabled:
            why += f" and its Armature modifier '{disabled[0].name}' has no armature set"
        return best, why
    return None, ""


def _skinned_users() -> dict[int, str]:
    """Per mesh datablock (its pointer), an object of the file that an Armature modifier deforms with it."""
    out: dict[int, str] = {}
    for o in bpy.data.objects:
        if o.type == "MESH" and o.data is not None and armature_modifiers(o):
            out.setdefault(o.data.as_pointer(), o.name)
    return out


def missing_modifiers(objects: Iterable[bpy.types.Object]) -> dict[str, list[MissingModifier]]:
    """Per armature name, the meshes among ``objects`` tied to it (parented to it, a disabled
    Armature modifier, or vertex groups named after its bones) that no enabled Armature
    modifier deforms.  A mesh parented to a bone is rigid by design and left out (a rigid part,
    :func:`rigid_parts`); an unparented one sharing its mesh data with a skinned object is a
    static instance of it (``instance_of``): vertex groups live on the mesh data, so it has the
    skinned object's groups without being meant to bend."""
    objects = list(objects)
    armatures = [o for o in objects if o.type == "ARMATURE"]
    out: dict[str, list[MissingModifier]] = {}
    users: dict[int, str] | None = None
    for obj in objects:
        if obj.type != "MESH" or armature_modifiers(obj):
            continue
        arm, why = _tied_armature(obj, armatures)
        if arm is None:
            continue
        if users is None:
            users = _skinned_users()
        instance_of = users.get(obj.data.as_pointer(), "") if obj.parent is None else ""
        if instance_of and not why.startswith("has vertex groups"):
            instance_of = ""  # a disabled modifier says what is wrong: it was meant to bend
        weights = group_weights(obj) if obj.vertex_groups else None
        deform = {b.name for b in arm.data.bones if b.use_deform}
        weighted = tuple(g.name for g in obj.vertex_groups
                         if g.name in deform and weights is not None and bool((weights[g.index] > 0).any()))
        out.setdefault(arm.name, []).append(MissingModifier(obj.name, why, weighted, instance_of))
    return out


def rigid_parts(arm: bpy.types.Object, scene: bpy.types.Scene) -> list[RigidPart]:
    """The meshes of ``scene`` parented to a bone of ``arm`` (parent type Bone) that no Armature
    modifier deforms: rigid parts the bone carries."""
    out = []
    for child in arm.children:
        if (child.type == "MESH" and child.parent_type == "BONE" and child.parent_bone in arm.data.bones
                and child.name in scene.objects and not armature_modifiers(child)):
            out.append(RigidPart(child.name, child.parent_bone, len(child.data.vertices)))
    return out


def audit_meshes(
    context: bpy.types.Context,
    mesh_objects: Iterable[bpy.types.Object],
    options: AuditOptions,
    progress: Callable[[int, int], None] | None = None,
    allow_edit_mode: bool = False,
) -> tuple[MeshAudit, ...]:
    """One MeshAudit per (mesh, Armature modifier), each holding its armature's findings too
    (for a view of one mesh at a time); :func:`audit_rigs` reports them once per armature."""
    rigs, meshes = audit_rigs(context, mesh_objects, options, progress, allow_edit_mode)
    by_armature = {r.armature: r.findings for r in rigs}
    return tuple(replace(m, findings=m.findings + by_armature.get(m.armature, ())) for m in meshes)


def _with_animation(armature: str, rig: RigAudit, audits: Sequence[MeshAudit],
                    parts: list[tuple[bpy.types.Object, bpy.types.ArmatureModifier, Any]],
                    options: AuditOptions, gltf: Any = None) -> tuple[RigAudit, tuple[MeshAudit, ...]]:
    """The rig's entry and its meshes' with the animation audit's findings (``--animation``); ``gltf``:
    the glTF document the scene was imported from (its clips are played as the target plays them)."""
    from .animation_run import audit_animation

    found = audit_animation(armature, parts, options, gltf)
    rig = replace(rig, findings=rig.findings + tuple(found.rig_findings), animation=found.data)
    return rig, tuple(replace(a, findings=a.findings + tuple(f))
                      for a, f in zip(audits, found.mesh_findings, strict=True))


def audit_rigs(
    context: bpy.types.Context,
    mesh_objects: Iterable[bpy.types.Object],
    options: AuditOptions,
    progress: Callable[[int, int], None] | None = None,
    allow_edit_mode: bool = False,
    missing: dict[str, list[MissingModifier]] | None = None,
    gltf: Any = None,
) -> tuple[tuple[RigAudit, ...], tuple[MeshAudit, ...]]:
    """One RigAudit per armature (over every given mesh it deforms) and one MeshAudit per
    (mesh, Armature modifier); the scene is left untouched.

    ``missing`` (from :func:`missing_modifiers`) adds meshes tied to an armature that nothing
    deforms to that armature's entry.  A mesh in Edit Mode is refused unless
    ``allow_edit_mode``: its mesh data lags behind the edits.  A file just opened in Edit
    Mode holds its saved data, so file audits allow it.
    """
    objects = list(mesh_objects)
    for obj in objects:
        if obj.mode == "EDIT" and not allow_edit_mode:
            raise InputError(f"'{obj.name}' is in Edit Mode; leave it so its weights are stored, then audit")
        if not armature_modifiers(obj):
            raise InputError(f"'{obj.name}' is not deformed by an Armature modifier with an armature set")
        for mod in armature_modifiers(obj):
            if mod.object.mode == "EDIT" and not allow_edit_mode:
                raise InputError(f"armature '{mod.object.name}' is in Edit Mode, where it deforms nothing; "
                                 "leave Edit Mode, then audit")
    depsgraph = context.evaluated_depsgraph_get()
    pairs = [(o, m) for o in objects for m in armature_modifiers(o)]
    extracted: dict[str, list[tuple[int, SkinnedMesh, SpotChecker]]] = {}
    missing = missing or {}
    rigs: list[RigAudit] = []
    meshes: list[tuple[int, MeshAudit]] = []
    # A mesh the spot checks compare whole keeps its extraction's sandbox open until its checks
    # are done: their copies are built and evaluated with the extraction's (every sandbox is
    # removed on the way out, errors included).
    with ExitStack() as boxes:
        for k, (obj, mod) in enumerate(pairs):
            if progress is not None:
                progress(k, len(pairs))
            shared = options.shape_checks and len(obj.data.vertices) <= SPOT_CHECK_VERTICES
            box = boxes.enter_context(sandbox()) if shared else None
            checker = spot_checker(obj, mod, box)
            extracted.setdefault(mod.object.name, []).append((k, extract(obj, mod, depsgraph, box=box), checker))
        armature_objects = {m.object.name: m.object for _, m in pairs}
        for armature in [*extracted, *(a for a in missing if a not in extracted)]:
            parts = extracted.get(armature, [])
            arm_obj = armature_objects.get(armature) or bpy.data.objects.get(armature)
            rigid = rigid_parts(arm_obj, context.scene) if arm_obj is not None else []
            rig, audits = audit_character(armature, [m for _, m, _ in parts], options, [c for _, _, c in parts],
                                          missing.get(armature, ()), rigid)
            if options.animation is not None and parts:
                rig, audits = _with_animation(armature, rig, audits, [(*pairs[k], m) for k, m, _ in parts], options,
                                              gltf)
            rigs.append(rig)
            meshes += [(k, a) for (k, _, _), a in zip(parts, audits, strict=True)]
    return tuple(rigs), tuple(a for _, a in sorted(meshes, key=lambda t: t[0]))
